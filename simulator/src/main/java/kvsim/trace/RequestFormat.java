package kvsim.trace;

/**
 * The kvsim request trace format, JSONL, version 1: the input of serving-level runs, one LLM
 * request per line.
 *
 * <p>Line 1 is a header object: {@code {"format":"kvsim-requests","version":1, ...}}, with the
 * optional field {@code hash_block_tokens} (the tokens each prefix hash covers; required when any
 * request carries {@code hash_ids}); further fields (generator, parameters, source file) are
 * carried along as a description. Every following line is one request:
 *
 * <ul>
 *   <li>{@code {"id":7,"t":1500000,"prompt_tokens":812,"output_tokens":140}}: {@code id} a
 *       non-negative integer, increasing along the file (gaps allowed), so a reader checks
 *       uniqueness without remembering every id; {@code t} the arrival time in ns (times never
 *       decrease); {@code prompt_tokens} and {@code output_tokens} positive integers.
 *   <li>optional {@code hash_ids}: the prompt's prefix block hashes, one per {@code
 *       hash_block_tokens} tokens of the prompt, the last one partial (so exactly {@code
 *       ceil(prompt_tokens / hash_block_tokens)} of them, as in the Mooncake traces); two requests
 *       share a prefix of k blocks when their first k hashes are equal.
 *   <li>optional {@code n} (parallel samples, default 1) and {@code beam_width} (default 1, i.e.
 *       no beam search); at most one of them above 1.
 * </ul>
 */
public final class RequestFormat {
  /** The header's {@code format} value. */
  public static final String NAME = "kvsim-requests";
  /** The format version this kvsim reads and writes. */
  public static final int VERSION = 1;
  /** The header field giving the tokens per prefix hash. */
  public static final String HASH_BLOCK_TOKENS = "hash_block_tokens";

  private RequestFormat() {}
}

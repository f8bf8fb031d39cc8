package kvsim.alloc.paged;

/**
 * Computes a prompt's block hashes away from its {@link BlockManager}, on a thread of its own:
 * the hashes {@link KvBlockManager#addRequest(String, int[], int, long[])} would compute for a
 * request without LoRA name or cache salt, which {@link KvBlockManager#addRequest(String,
 * Prepared)} then adopts instead of hashing (Note [Prompts hashed ahead]). One instance per
 * thread: it keeps a {@link BlockHasher} of its own, of the manager's hash function.
 *
 * <p>Note [Prompts hashed ahead]: a block's hash depends only on its parent's hash and its own
 * tokens (vLLM v1's {@code hash_block_tokens} in {@code vllm/v1/core/kv_cache_utils.py}, commit
 * ec5ef0a), so the hashes of a prompt's full blocks are known before the request reaches the
 * manager. Hashing them was the largest part of adding a request, which a serving run does for
 * each request it admits (about a tenth of the serving hour's warm engine in async-profiler
 * samples). A serving engine may therefore hash the next requests' prompts on its other core
 * while it simulates; the manager then takes the hashes as they are. Both paths run {@link
 * BlockManager#hashBlocks}, so the hashes are the same longs.
 */
public final class PromptHasher {
  private final BlockManagerConfig config;
  private final BlockHasher hasher;

  PromptHasher(BlockManagerConfig config) {
    this.config = config;
    this.hasher = new BlockHasher(config.hash());
  }

  /**
   * A prompt whose full blocks are hashed, for {@link KvBlockManager#addRequest(String, Prepared)}
   * of the manager whose {@link KvBlockManager#promptHasher} made it; it holds the caller's token
   * buffer, which the request then keeps.
   */
  public static final class Prepared {
    final BlockManagerConfig config;
    final int[] buffer;
    final int promptLength;
    /** The supplied hash ids of the prompt's full blocks, as the manager would keep them (null: none). */
    final long[] supplied;
    /** Sized as a new request's hashes are, the first {@code numHashes} blocks' filled. */
    final long[] hashes;
    final int numHashes;
    /** The blocks hashed, those of the expected tokens after the prompt included (Note [Output hashed ahead]). */
    final int hashedAhead;
    /** The buffer's entries up to this one hold the prompt and the tokens expected after it. */
    final int expectedTokens;
    /** The token expected first after the prompt; the k-th after it (k &gt; 0) is {@code expectedBase + k}. */
    final int expectedFirst;
    final int expectedBase;

    private Prepared(BlockManagerConfig config, int[] buffer, int promptLength, long[] supplied, long[] hashes, int numHashes, int hashedAhead,
        int expectedTokens, int expectedFirst, int expectedBase) {
      this.config = config;
      this.buffer = buffer;
      this.promptLength = promptLength;
      this.supplied = supplied;
      this.hashes = hashes;
      this.numHashes = numHashes;
      this.hashedAhead = hashedAhead;
      this.expectedTokens = expectedTokens;
      this.expectedFirst = expectedFirst;
      this.expectedBase = expectedBase;
    }

    /** Returns the token buffer the request will keep. */
    public int[] buffer() {
      return buffer;
    }
  }

  /**
   * Hashes the full blocks of the prompt in the first {@code promptLength} entries of {@code
   * buffer}, the first of them {@code hashIds} when not null; returns null for a prompt the
   * manager would refuse (empty, longer than {@code max_model_len}, more hash ids than blocks),
   * which the caller then adds the plain way, to be refused with the manager's own message.
   */
  public Prepared prepare(int[] buffer, int promptLength, long[] hashIds) {
    return prepare(buffer, promptLength, hashIds, 0, 0, 0);
  }

  // Note [Output hashed ahead]: a serving run's output tokens follow the engine's rule, so the ids a
  // sequence will append are known before it runs, and with them the hashes of the blocks they will
  // complete. Hashing those blocks as they completed was about a tenth of the engine thread on the
  // week-long Azure run through vllm once its quiet decode steps were taken. So the caller may
  // name the tokens it expects after the prompt: a first one, then a base plus each one's place
  // (the engine's rule). They are written into the buffer after the prompt, and the blocks they
  // complete hashed here, on the caller's thread. The request keeps those hashes and takes them as
  // its tokens complete each block, while each token appended is the one expected; then it also
  // leaves the buffer, which holds the token already, untouched (reading it to compare missed the
  // cache about as often as the hashing took). The first token that is not the one expected is
  // written and drops the hashes ahead, and the blocks from there are hashed from the tokens
  // appended (PagedRequest.append). The hashes and tokens are the same either way.

  /**
   * As {@link #prepare(int[], int, long[])}, and the request is expected to append {@code
   * expected} tokens after its prompt: {@code first}, then {@code base + k} as its k-th (k &gt; 0).
   * They are written into the buffer after the prompt, and the blocks they complete hashed too, for
   * the request to take while its appended tokens are these (Note [Output hashed ahead]).
   */
  public Prepared prepare(int[] buffer, int promptLength, long[] hashIds, int expected, int first, int base) {
    int blockSize = config.blockSize();
    if (promptLength <= 0 || promptLength > buffer.length || promptLength > config.maxModelLen()
        || BlockManager.tooManyHashIds(hashIds, promptLength, blockSize)) {
      return null;
    }
    if (expected < 0 || expected > buffer.length - promptLength || expected > config.maxModelLen() - promptLength) {
      throw new IllegalArgumentException(expected + " tokens expected after a prompt of " + promptLength + " in a buffer of " + buffer.length);
    }
    for (int k = 0; k < expected; k++) {
      buffer[promptLength + k] = k == 0 ? first : base + k;
    }
    int expectedTokens = promptLength + expected;
    long[] supplied = BlockManager.suppliedIds(hashIds, promptLength, blockSize);
    long[] hashes = PagedRequest.newHashes(buffer.length, blockSize);
    int full = 0;
    int ahead = 0;
    if (config.enableCaching()) {
      full = promptLength / blockSize;
      ahead = expectedTokens / blockSize;
      BlockManager.hashBlocks(hasher, blockSize, buffer, supplied == null ? PagedRequest.NO_IDS : supplied, null, null, hashes, 0, ahead);
    }
    return new Prepared(config, buffer, promptLength, supplied, hashes, full, ahead, expected == 0 ? 0 : expectedTokens, first, base);
  }
}

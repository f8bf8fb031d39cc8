package kvsim.serving;

/**
 * The scheduler's limits, with vLLM's names.
 *
 * @param maxNumBatchedTokens the token budget of one iteration ({@code max_num_batched_tokens})
 * @param maxNumSeqs the most sequences running at once ({@code max_num_seqs})
 * @param maxModelLen the longest sequence, prompt plus output ({@code max_model_len})
 * @param enableChunkedPrefill whether a prompt may be prefilled over several iterations
 * @param longPrefillTokenThreshold cap on the tokens one request schedules per iteration, 0 for none
 * @param watermark vLLM v0's admission watermark as a share of the KV blocks ({@code CacheConfig}'s
 *     watermark, read by {@code BlockSpaceManagerV2.can_allocate} at vLLM commit 1fb9c1b; v0
 *     schedulers only, v1 has none)
 */
public record SchedulerConfig(int maxNumBatchedTokens, int maxNumSeqs, int maxModelLen, boolean enableChunkedPrefill, int longPrefillTokenThreshold,
    double watermark) {
  /**
   * Default token budget: 2,048, vLLM v1's default for its OpenAI-compatible server with chunked
   * prefill on (the engine arguments' usage-context defaults).
   */
  public static final int DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048;
  /** Default limit on running sequences: 256, vLLM's long-standing default. */
  public static final int DEFAULT_MAX_NUM_SEQS = 256;

  /** vLLM v0's default watermark: 1 % of the blocks ({@code CacheConfig}'s default at vLLM commit 1fb9c1b). */
  public static final double DEFAULT_WATERMARK = 0.01;

  /** Limits with v0's default watermark. */
  public SchedulerConfig(int maxNumBatchedTokens, int maxNumSeqs, int maxModelLen, boolean enableChunkedPrefill, int longPrefillTokenThreshold) {
    this(maxNumBatchedTokens, maxNumSeqs, maxModelLen, enableChunkedPrefill, longPrefillTokenThreshold, DEFAULT_WATERMARK);
  }

  public SchedulerConfig {
    if (!(watermark >= 0 && watermark < 1)) {
      throw new IllegalArgumentException("watermark must be in [0, 1), got " + watermark);
    }
    if (maxNumBatchedTokens < 1 || maxNumSeqs < 1 || maxModelLen < 2 || longPrefillTokenThreshold < 0) {
      throw new IllegalArgumentException("max_num_batched_tokens and max_num_seqs must be positive, max_model_len at least 2, long_prefill_token_threshold not negative");
    }
    if (!enableChunkedPrefill && maxNumBatchedTokens < maxModelLen) {
      throw new IllegalArgumentException("without chunked prefill, max_num_batched_tokens (" + maxNumBatchedTokens
          + ") must be at least max_model_len (" + maxModelLen + "), as vLLM requires");
    }
  }

  /** vLLM v1's defaults for a model of this context length. */
  public static SchedulerConfig defaults(int maxModelLen) {
    return new SchedulerConfig(DEFAULT_MAX_NUM_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS, maxModelLen, true, 0);
  }
}

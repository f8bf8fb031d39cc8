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
 * @param reserveFullIsl vLLM v1's full-prompt admission gate ({@code
 *     SchedulerConfig.scheduler_reserve_full_isl}, {@code KVCacheManager.can_fit_full_sequence}):
 *     a waiting request is admitted only when its whole sequence fits the free memory, not just
 *     this step's chunk ({@link VllmV1Scheduler}; other schedulers ignore it)
 * @param asyncScheduling vLLM v1's asynchronous scheduling ({@code
 *     SchedulerConfig.async_scheduling}, {@code AsyncScheduler}): step N+1 is planned while step N
 *     runs, before its sampled tokens are known ({@link VllmV1Scheduler}, {@link ServingEngine};
 *     other schedulers ignore it)
 */
public record SchedulerConfig(int maxNumBatchedTokens, int maxNumSeqs, int maxModelLen, boolean enableChunkedPrefill, int longPrefillTokenThreshold,
    double watermark, boolean reserveFullIsl, boolean asyncScheduling) {
  /**
   * Default token budget: 2,048, vLLM v1's default for its OpenAI-compatible server with chunked
   * prefill on (the engine arguments' usage-context defaults).
   */
  public static final int DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048;
  /** Default limit on running sequences: 256, vLLM's long-standing default. */
  public static final int DEFAULT_MAX_NUM_SEQS = 256;

  /** vLLM v0's default watermark: 1 % of the blocks ({@code CacheConfig}'s default at vLLM commit 1fb9c1b). */
  public static final double DEFAULT_WATERMARK = 0.01;

  /**
   * Default of the full-prompt admission gate: on, as {@code scheduler_reserve_full_isl} defaults
   * at vLLM commit ec5ef0a ({@code vllm/config/scheduler.py}, added by PR #37307).
   */
  public static final boolean DEFAULT_RESERVE_FULL_ISL = true;
  /**
   * Default of asynchronous scheduling: on, as vLLM's engine turns it on by default at commit
   * ec5ef0a ({@code VllmConfig}'s resolution of {@code async_scheduling} in {@code vllm/config/vllm.py}).
   */
  public static final boolean DEFAULT_ASYNC_SCHEDULING = true;

  /** Limits with vLLM's defaults for the admission gate and asynchronous scheduling. */
  public SchedulerConfig(int maxNumBatchedTokens, int maxNumSeqs, int maxModelLen, boolean enableChunkedPrefill, int longPrefillTokenThreshold,
      double watermark) {
    this(maxNumBatchedTokens, maxNumSeqs, maxModelLen, enableChunkedPrefill, longPrefillTokenThreshold, watermark, DEFAULT_RESERVE_FULL_ISL,
        DEFAULT_ASYNC_SCHEDULING);
  }

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

  /** Returns these limits with the full-prompt admission gate on or off. */
  public SchedulerConfig withReserveFullIsl(boolean on) {
    return new SchedulerConfig(maxNumBatchedTokens, maxNumSeqs, maxModelLen, enableChunkedPrefill, longPrefillTokenThreshold, watermark, on, asyncScheduling);
  }

  /** Returns these limits with asynchronous scheduling on or off. */
  public SchedulerConfig withAsyncScheduling(boolean on) {
    return new SchedulerConfig(maxNumBatchedTokens, maxNumSeqs, maxModelLen, enableChunkedPrefill, longPrefillTokenThreshold, watermark, reserveFullIsl, on);
  }

  /** vLLM v1's defaults for a model of this context length. */
  public static SchedulerConfig defaults(int maxModelLen) {
    return new SchedulerConfig(DEFAULT_MAX_NUM_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS, maxModelLen, true, 0);
  }
}

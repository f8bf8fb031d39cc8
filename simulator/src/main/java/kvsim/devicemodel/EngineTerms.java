package kvsim.devicemodel;

/**
 * The two costs of a serving iteration that no per-operation profile holds (README, "Cost
 * models"): a per-sequence cost of the attention kernels, charged per scheduled sequence per layer,
 * and the serving engine's own per-iteration CPU time (scheduling, input preparation, sampling and
 * output processing). Both come from public measurements (Note [Per-sequence attention cost], Note
 * [Engine overhead per iteration]); a calibration file may replace either.
 *
 * <p>Note [Per-sequence attention cost]: the onnxruntime pull request that added paged attention
 * (microsoft/onnxruntime#21414, 2024-08-29) benchmarks FlashAttention-2's paged batch-decode kernel
 * on an H100 SXM for Llama-3-70B's attention shape (64 query heads, 8 KV heads, head size 128,
 * pages of 256 tokens), 64 sequences: 21.135 µs of GPU time at 32 tokens of context (9 MiB read)
 * and 43.563 µs at 256 tokens (65 MiB). The rows between (22.958 µs at 64, 28.780 µs at 128
 * tokens) grow with the bytes read; from 128 to 256 tokens 32 MiB more cost 14.783 µs, which is
 * the kernel's bandwidth once it streams. At 32 tokens its 9 MiB take 9/32 × 14.783 = 4.158 µs at
 * that bandwidth, so 21.135 − 4.158 = 16.977 µs of the kernel do not depend on the context read:
 * over 64 sequences, 265 ns per sequence per layer ({@link #DEFAULT_PER_SEQUENCE_LAYER_NANOS}).
 * This is an upper bound at small batches (it holds the kernel's fixed cost, spread over 64
 * sequences) and was measured on an H100; kvsim charges it on every device. It is what a model
 * that reads KV bytes only misses: many short sequences cost more than their bytes.
 *
 * <p>Note [Engine overhead per iteration]: vLLM's multi-step scheduling RFC (vllm-project/vllm#6854,
 * 2024-07-26) profiled the engine of vLLM 0.5 on decode: between two forward passes the GPU
 * waits while the CPU transfers the sampled tokens, turns them into Python objects, prepares the
 * next step's inputs and runs the scheduler, "5-13ms of GPU bubble", with "about 4ms of GPU
 * bubble" in each decode step of its baseline trace. kvsim takes the smallest directly measured
 * value, 4 ms per iteration ({@link #DEFAULT_ENGINE_OVERHEAD_NANOS}). It agrees with the vLLM team's
 * profile of the same engine (blog "vLLM v0.6.0: 2.7x Throughput Improvement", 2024-09-05:
 * Llama-3-8B on one H100, the GPU busy 38 % of the time, the API server 33 % and scheduling 29 %):
 * a decode pass of a few milliseconds beside 62/38 of it idle is several milliseconds per step.
 * Engines since then overlap this time with the forward pass (asynchronous scheduling) rather than
 * make it vanish; the engine adds it after the forward pass, or overlaps the two where it
 * schedules asynchronously. The constant is not fitted to any result kvsim is compared with.
 *
 * @param perSequenceLayerNanos nanoseconds per scheduled sequence per layer, on top of the bytes the attention reads
 * @param engineOverheadNanos nanoseconds of engine CPU time per iteration
 */
public record EngineTerms(double perSequenceLayerNanos, long engineOverheadNanos) {
  /** Note [Per-sequence attention cost]. */
  public static final double DEFAULT_PER_SEQUENCE_LAYER_NANOS = 265;
  /** Note [Engine overhead per iteration]. */
  public static final long DEFAULT_ENGINE_OVERHEAD_NANOS = 4_000_000;
  /** The measured defaults. */
  public static final EngineTerms MEASURED = new EngineTerms(DEFAULT_PER_SEQUENCE_LAYER_NANOS, DEFAULT_ENGINE_OVERHEAD_NANOS);
  /** Neither term: the plain roofline's. */
  public static final EngineTerms NONE = new EngineTerms(0, 0);

  /**
   * Returns what a run's summary echoes of a forward-time model with these terms ({@link
   * ForwardTimeModel#echo}): its predictor, its source (left out when null), its efficiencies and
   * the two terms, in that order.
   */
  public java.util.Map<String, Object> echo(String predictor, String source, double computeEfficiency, double memoryEfficiency) {
    java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
    m.put("forward", predictor);
    if (source != null) {
      m.put("source", source);
    }
    m.put("compute_efficiency", computeEfficiency);
    m.put("memory_efficiency", memoryEfficiency);
    m.put("per_sequence_layer_ns", perSequenceLayerNanos);
    m.put("engine_overhead_ns", engineOverheadNanos);
    return m;
  }

  public EngineTerms {
    if (!(perSequenceLayerNanos >= 0) || Double.isInfinite(perSequenceLayerNanos) || engineOverheadNanos < 0) {
      throw new IllegalArgumentException("engine terms must be finite and >= 0, got " + perSequenceLayerNanos + " and " + engineOverheadNanos);
    }
  }
}

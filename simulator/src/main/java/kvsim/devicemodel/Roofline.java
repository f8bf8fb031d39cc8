package kvsim.devicemodel;

import kvsim.core.ModelPreset;

/**
 * The time a model's forward pass takes on the simulated device, as a roofline, the default
 * {@link ForwardTimeModel} (README,
 * "Serving-level runs"; the cost model of the analyses in the vLLM paper, Kwon et al., SOSP 2023,
 * arXiv:2309.06180, and the Orca paper, Yu et al., OSDI 2022): the larger of the compute time and
 * the memory time.
 *
 * <ul>
 *   <li>Compute: {@code 2 × parameters × tokens / (peak FLOP/s × computeEfficiency)}, two
 *       floating-point operations per parameter per token. Prefill is compute-bound.
 *   <li>Memory: {@code (weight bytes + KV bytes read) / (HBM bandwidth × memoryEfficiency)}: the
 *       weights once per forward pass, and the KV cache of every scheduled sequence's context.
 *       Decode is bandwidth-bound.
 *   <li>Defaults: compute efficiency {@value #DEFAULT_COMPUTE_EFFICIENCY} (model FLOP utilisation
 *       of prefill on current GPUs), memory efficiency {@value #DEFAULT_MEMORY_EFFICIENCY}
 *       (achieved share of peak HBM bandwidth in decode); both can be overridden.
 *   <li>Simplifications: every parameter counts (a mixture-of-experts model such as Mixtral reads
 *       all its experts once the batch is large, but computes with the active ones only: the
 *       compute time is then an upper bound); attention FLOPs beyond the parameter count are left
 *       out.
 * </ul>
 *
 * @param model the model
 * @param device the device
 * @param computeEfficiency share of peak FLOP/s achieved, in (0, 1]
 * @param memoryEfficiency share of peak HBM bandwidth achieved, in (0, 1]
 */
public record Roofline(ModelPreset model, DeviceSpec device, double computeEfficiency, double memoryEfficiency) implements ForwardTimeModel {
  /** Default share of peak FLOP/s achieved. */
  public static final double DEFAULT_COMPUTE_EFFICIENCY = 0.5;
  /** Default share of peak HBM bandwidth achieved. */
  public static final double DEFAULT_MEMORY_EFFICIENCY = 0.8;

  public Roofline {
    if (!(computeEfficiency > 0 && computeEfficiency <= 1) || !(memoryEfficiency > 0 && memoryEfficiency <= 1)) {
      throw new IllegalArgumentException("efficiencies must be in (0, 1], got " + computeEfficiency + " and " + memoryEfficiency);
    }
  }

  /** The roofline with the default efficiencies. */
  public static Roofline of(ModelPreset model, DeviceSpec device) {
    return new Roofline(model, device, DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_MEMORY_EFFICIENCY);
  }

  /** Returns the compute time of {@code tokens} tokens, in (fractional) nanoseconds. */
  public double computeNanos(long tokens) {
    return 2.0 * model.parameters() * tokens / (device.peakFlops() * computeEfficiency) * 1e9;
  }

  /** Returns the memory time of one forward pass reading {@code kvBytesRead} of KV cache, in (fractional) nanoseconds. */
  public double memoryNanos(long kvBytesRead) {
    return (model.weightBytes() + (double) kvBytesRead) / (device.hbmBytesPerSecond() * memoryEfficiency) * 1e9;
  }

  /**
   * Returns the time of one forward pass over {@code tokens} tokens that reads {@code kvBytesRead}
   * of KV cache: the larger of the compute and the memory time, rounded to whole nanoseconds.
   */
  public long forwardNanos(long tokens, long kvBytesRead) {
    return Math.round(Math.max(computeNanos(tokens), memoryNanos(kvBytesRead)));
  }

  @Override
  public java.util.Map<String, Object> echo() {
    return EngineTerms.NONE.echo(CostModels.ROOFLINE, null, computeEfficiency, memoryEfficiency);
  }

  /** The roofline counts every token alike, prefill or decode, and charges nothing per sequence. */
  @Override
  public long forwardNanos(long prefillTokens, long decodeTokens, long kvBytesRead, int sequences) {
    return forwardNanos(prefillTokens + decodeTokens, kvBytesRead);
  }
}

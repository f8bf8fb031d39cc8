package kvsim.alloc;

/**
 * The modelled cost of an allocator's own operations, in nanoseconds. A model charges {@code
 * allocBaseNanos + allocPerStepNanos × steps} per allocation, where a step is whatever dominates its
 * work (a tree level for first-fit, a page or block for paged and slab), likewise for frees, and
 * {@code deviceAllocNanos} / {@code deviceFreeNanos} for each call into the driver ({@code
 * cudaMalloc} / {@code cudaFree}, or a map/unmap for expandable segments). Defaults come from each
 * model's class comment; a calibration file measured on a real GPU replaces them.
 */
public record LatencyModel(
    long allocBaseNanos,
    long allocPerStepNanos,
    long freeBaseNanos,
    long freePerStepNanos,
    long deviceAllocNanos,
    long deviceFreeNanos) {

  public LatencyModel {
    if (allocBaseNanos < 0
        || allocPerStepNanos < 0
        || freeBaseNanos < 0
        || freePerStepNanos < 0
        || deviceAllocNanos < 0
        || deviceFreeNanos < 0) {
      throw new IllegalArgumentException("latencies must not be negative");
    }
  }

  /** Returns the cost of an allocation that took {@code steps} steps. */
  public long allocNanos(long steps) {
    return allocBaseNanos + allocPerStepNanos * steps;
  }

  /** Returns the cost of a free that took {@code steps} steps. */
  public long freeNanos(long steps) {
    return freeBaseNanos + freePerStepNanos * steps;
  }
}

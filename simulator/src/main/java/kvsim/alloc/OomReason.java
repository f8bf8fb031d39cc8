package kvsim.alloc;

/**
 * Why an allocator could not serve a request: a refusal is an outcome the engine handles, not an
 * exception, and it names one of these reasons (README, "Metrics": the split of {@code oom_count}).
 */
public enum OomReason {
  /** Not enough free bytes in the region, however they are arranged. */
  NO_MEMORY("no_memory"),
  /** Free bytes ≥ the request, but no arrangement of them can hold it. */
  FRAGMENTATION("fragmentation"),
  /** Larger than any block or size class the allocator has, whatever is free. */
  TOO_LARGE("too_large");

  private final String label;

  OomReason(String label) {
    this.label = label;
  }

  /** Returns the name used in result files. */
  public String label() {
    return label;
  }
}

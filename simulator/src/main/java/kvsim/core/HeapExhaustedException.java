package kvsim.core;

import java.util.Locale;

/**
 * The Java heap ran out during a run. A run keeps every live allocation in memory (the trace's ids
 * and the model's blocks), so an open-loop trace whose live set keeps growing needs heap in
 * proportion to its largest live set, not to its length. The CLI prints {@link #getMessage()} as
 * one line and exits with status 1.
 */
public final class HeapExhaustedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String where;
  private final String allocator;
  private final long liveAllocations;
  private final long maxHeapBytes;

  /**
   * @param where the trace and line being applied when the heap ran out
   * @param allocator the model being run
   * @param liveAllocations allocations live at that moment
   * @param maxHeapBytes the heap's limit ({@code Runtime.maxMemory()})
   */
  public HeapExhaustedException(String where, String allocator, long liveAllocations, long maxHeapBytes) {
    super((String) null, null, false, false);
    this.where = where;
    this.allocator = allocator;
    this.liveAllocations = liveAllocations;
    this.maxHeapBytes = maxHeapBytes;
  }

  /** Built only when printed, once the run's memory is free again. */
  @Override
  public String getMessage() {
    return String.format(
        Locale.ROOT,
        "out of memory at %s (%s's run, %,d allocations live): the Java heap of %s is too small. Every run keeps"
            + " its live allocations in memory, and the allocators run side by side. Run again with a larger heap,"
            + " e.g. KVSIM_JAVA_OPTS=-Xmx%dm ./kvsim ..., or with fewer allocators at once (-a)",
        where,
        allocator,
        liveAllocations,
        Bytes.format(maxHeapBytes),
        Math.max(256, 4 * (maxHeapBytes >> 20)));
  }
}

package kvsim.alloc;

/**
 * Receives what happens to a model, in the vocabulary of PyTorch's trace entries: the engine
 * reports allocations, frees and refusals ({@code alloc}, {@code free_completed}, {@code oom});
 * the model itself reports device-level actions ({@code segment_alloc}, {@code segment_free},
 * {@code segment_map}, {@code segment_unmap}) from inside {@link Allocator#allocate} and {@link
 * Allocator#free}. Models that manage a pre-reserved arena report nothing at device level; a
 * recorder treats their region as one segment. All methods default to doing nothing.
 */
public interface AllocatorListener {
  /** The listener was registered with {@code allocator}, before the first event. */
  default void attach(Allocator allocator) {}

  /** The engine is about to apply an event at this simulated time. */
  default void time(long timeNanos) {}

  /** A request was served. */
  default void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {}

  /**
   * A live allocation was freed: it was requested as {@code requestedBytes} and held {@code
   * extents}, both 0 and null for a listener whose {@link #readsFreeDetails} is false.
   */
  default void freed(long id, long requestedBytes, long stream, Extents extents) {}

  /**
   * Whether {@link #freed} reads its {@code requestedBytes} and {@code extents}. The engine keeps the
   * requested size of every live allocation in a map and asks the model for the extents only for a
   * listener that does: two more table lookups per allocation and free.
   */
  default boolean readsFreeDetails() {
    return true;
  }

  /** A request was refused. */
  default void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {}

  /** A new segment was obtained from the driver. */
  default void segmentAlloc(long addressBytes, long sizeBytes, long stream) {}

  /** A segment was returned to the driver. */
  default void segmentFree(long addressBytes, long sizeBytes, long stream) {}

  /** Pages of an expandable segment were mapped. */
  default void segmentMap(long addressBytes, long sizeBytes, long stream) {}

  /** Pages of an expandable segment were unmapped. */
  default void segmentUnmap(long addressBytes, long sizeBytes, long stream) {}

  /**
   * Returns a listener that passes every call to {@code first}, then to {@code second} (a run that
   * records a snapshot and a memory map at once); either may be null.
   */
  static AllocatorListener both(AllocatorListener first, AllocatorListener second) {
    if (first == null || second == null) {
      return first == null ? second : first;
    }
    return new AllocatorListener() {
      @Override
      public void attach(Allocator allocator) {
        first.attach(allocator);
        second.attach(allocator);
      }

      @Override
      public void time(long timeNanos) {
        first.time(timeNanos);
        second.time(timeNanos);
      }

      @Override
      public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
        first.allocated(id, request, extents, allocatedBytes);
        second.allocated(id, request, extents, allocatedBytes);
      }

      @Override
      public void freed(long id, long requestedBytes, long stream, Extents extents) {
        first.freed(id, requestedBytes, stream, extents);
        second.freed(id, requestedBytes, stream, extents);
      }

      @Override
      public boolean readsFreeDetails() {
        return first.readsFreeDetails() || second.readsFreeDetails();
      }

      @Override
      public void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {
        first.refused(id, request, outcome);
        second.refused(id, request, outcome);
      }

      @Override
      public void segmentAlloc(long addressBytes, long sizeBytes, long stream) {
        first.segmentAlloc(addressBytes, sizeBytes, stream);
        second.segmentAlloc(addressBytes, sizeBytes, stream);
      }

      @Override
      public void segmentFree(long addressBytes, long sizeBytes, long stream) {
        first.segmentFree(addressBytes, sizeBytes, stream);
        second.segmentFree(addressBytes, sizeBytes, stream);
      }

      @Override
      public void segmentMap(long addressBytes, long sizeBytes, long stream) {
        first.segmentMap(addressBytes, sizeBytes, stream);
        second.segmentMap(addressBytes, sizeBytes, stream);
      }

      @Override
      public void segmentUnmap(long addressBytes, long sizeBytes, long stream) {
        first.segmentUnmap(addressBytes, sizeBytes, stream);
        second.segmentUnmap(addressBytes, sizeBytes, stream);
      }
    };
  }
}

package kvsim.alloc;

/**
 * The answer to one request: the memory, or an out-of-memory report. Running out of memory is an
 * outcome, never an exception: the caller (engine or scheduler) decides what happens next.
 */
public sealed interface AllocOutcome permits AllocOutcome.Allocated, AllocOutcome.OutOfMemory {

  /** Returns whether the request was served. */
  boolean succeeded();

  /**
   * A served request.
   *
   * @param handle the allocator's name for this allocation, passed back to {@link Allocator#free}
   * @param allocatedBytes bytes taken from the allocator, rounding and whole blocks included
   * @param extents where the memory lies
   */
  record Allocated(long handle, long allocatedBytes, Extents extents) implements AllocOutcome {
    @Override
    public boolean succeeded() {
      return true;
    }
  }

  /**
   * A refused request.
   *
   * @param reason why
   * @param requestedBytes what was asked for
   * @param freeBytes bytes free at the time (as {@link Allocator#freeBytes()})
   * @param largestFreeBytes the largest request that could have been served
   */
  record OutOfMemory(OomReason reason, long requestedBytes, long freeBytes, long largestFreeBytes)
      implements AllocOutcome {
    @Override
    public boolean succeeded() {
      return false;
    }

    /** Classifies a refusal of a request that fits no block class from the free-byte counts. */
    public static OutOfMemory classify(long requestedBytes, long freeBytes, long largestFreeBytes) {
      OomReason reason = freeBytes >= requestedBytes ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
      return new OutOfMemory(reason, requestedBytes, freeBytes, largestFreeBytes);
    }
  }
}

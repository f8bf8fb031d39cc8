package kvsim.alloc;

/**
 * Receives the device-level actions of a model, in the vocabulary of PyTorch's trace entries
 * ({@code segment_alloc}, {@code segment_free}, {@code segment_map}, {@code segment_unmap}). Models
 * that manage a pre-reserved arena report one {@code segment_alloc} for the whole region when the
 * first request arrives.
 */
public interface AllocatorListener {
  /** A new segment was obtained from the driver. */
  default void segmentAlloc(long addressBytes, long sizeBytes, long stream) {}

  /** A segment was returned to the driver. */
  default void segmentFree(long addressBytes, long sizeBytes, long stream) {}

  /** Pages of an expandable segment were mapped. */
  default void segmentMap(long addressBytes, long sizeBytes, long stream) {}

  /** Pages of an expandable segment were unmapped. */
  default void segmentUnmap(long addressBytes, long sizeBytes, long stream) {}
}

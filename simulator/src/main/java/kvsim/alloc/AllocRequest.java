package kvsim.alloc;

import kvsim.core.Tag;

/**
 * One memory request as an allocator model sees it.
 *
 * @param sizeBytes bytes asked for (positive)
 * @param tag what the memory is for
 * @param splittable whether the memory may be handed out as several extents (pages); KV may,
 *     activations may not
 * @param stream the CUDA stream the request is made on (0 = default stream); only stream-aware
 *     models such as PyTorch's caching allocator use it
 */
public record AllocRequest(long sizeBytes, Tag tag, boolean splittable, long stream) {
  public AllocRequest {
    if (sizeBytes <= 0) {
      throw new IllegalArgumentException("request size must be positive, got " + sizeBytes);
    }
  }

  /** A request on the default stream, splittable as its tag says. */
  public static AllocRequest of(long sizeBytes, Tag tag) {
    return new AllocRequest(sizeBytes, tag, tag.splittableByDefault(), 0);
  }
}

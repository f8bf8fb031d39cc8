package kvsim.devicemodel;

/**
 * A contiguous range of the simulated device's address space that one allocator model manages.
 * Addresses are byte offsets from the start of device memory.
 *
 * @param name what the region holds ({@code kv}, {@code activations}, {@code weights}, {@code all})
 * @param baseBytes first address of the region
 * @param sizeBytes length of the region
 */
public record Region(String name, long baseBytes, long sizeBytes) {
  public Region {
    if (baseBytes < 0 || sizeBytes < 0) {
      throw new IllegalArgumentException("region " + name + " has a negative base or size");
    }
    // The end address must be a long: every model computes offsets up to it.
    if (sizeBytes > Long.MAX_VALUE - baseBytes) {
      throw new IllegalArgumentException("region " + name + " ends past the largest address " + Long.MAX_VALUE);
    }
  }

  /** Returns the first address past the region. */
  public long endBytes() {
    return baseBytes + sizeBytes;
  }

  /** Returns whether [offset, offset + size) lies inside the region. */
  public boolean contains(long offsetBytes, long lengthBytes) {
    // Compared as a length left before the end, so that a huge length cannot wrap the sum around.
    return offsetBytes >= baseBytes
        && offsetBytes <= endBytes()
        && lengthBytes >= 0
        && lengthBytes <= endBytes() - offsetBytes;
  }
}

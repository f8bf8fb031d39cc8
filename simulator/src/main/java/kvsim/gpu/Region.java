package kvsim.gpu;

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
  }

  /** Returns the first address past the region. */
  public long endBytes() {
    return baseBytes + sizeBytes;
  }

  /** Returns whether [offset, offset + size) lies inside the region. */
  public boolean contains(long offsetBytes, long lengthBytes) {
    return offsetBytes >= baseBytes && lengthBytes >= 0 && offsetBytes + lengthBytes <= endBytes();
  }
}

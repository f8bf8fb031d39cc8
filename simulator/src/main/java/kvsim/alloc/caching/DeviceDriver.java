package kvsim.alloc.caching;

import java.util.function.LongPredicate;

/**
 * What the caching allocator asks of the CUDA driver: {@code cudaMalloc}/{@code cudaFree} for
 * classic segments, and for expandable segments an address reservation ({@code
 * cuMemAddressReserve}) whose pages are mapped and unmapped ({@code cuMemCreate}+{@code cuMemMap},
 * {@code cuMemUnmap}+{@code cuMemRelease}). The allocator decides sizes; the driver decides
 * addresses and whether there is room. {@link RegionDriver} models a device region; a replay driver
 * hands out the addresses a recording shows.
 */
public interface DeviceDriver {
  /** Returns the address of a new segment of {@code sizeBytes}, or -1 when the device has no room. */
  long malloc(long sizeBytes, long stream);

  /** Returns a segment to the device. */
  void free(long addressBytes, long sizeBytes);

  /** Reserves virtual address space for an expandable segment and returns its base. */
  long reserve(long sizeBytes, long pageBytes, long stream);

  /** Releases a reservation whose pages are all unmapped. */
  void releaseReservation(long addressBytes, long sizeBytes);

  /** Backs whole pages with memory; all or nothing; returns false when the device has no room. */
  boolean map(long addressBytes, long sizeBytes, long stream);

  /** Releases the memory behind whole pages. */
  void unmap(long addressBytes, long sizeBytes);

  /** Records a segment that existed before the model started (snapshot replay). */
  default void adopt(long addressBytes, long sizeBytes) {}

  /** Returns the device's free bytes, as {@code cudaMemGetInfo} would. */
  long freeBytes();

  /**
   * Records whether the segment at {@code addressBytes}, if the driver has one there, could be freed
   * to make room (the caller holds it whole and free). A new segment counts as not releasable until
   * marked; a segment at an address the driver does not know is ignored.
   */
  void markReleasable(long addressBytes, boolean releasable);

  /**
   * Returns the largest {@code cudaMalloc} that would succeed if every segment marked releasable
   * ({@link #markReleasable}) were freed first; it must equal {@link
   * #largestMallocBytes(LongPredicate)} with a predicate that holds for exactly those segments.
   */
  long largestMallocBytes();

  /**
   * Returns the largest {@code cudaMalloc} that would succeed if every segment for which {@code
   * releasable} holds (given its address) were freed first. This is the reference computation,
   * which may walk every segment; checks compare {@link #largestMallocBytes()} with it.
   */
  long largestMallocBytes(LongPredicate releasable);
}

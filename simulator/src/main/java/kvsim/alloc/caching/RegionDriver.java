package kvsim.alloc.caching;

import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import kvsim.alloc.support.FreeExtentTree;
import kvsim.devicemodel.Region;

/**
 * The driver model over one kvsim region: the device memory the caching allocator draws from
 * (a real driver's free memory also holds the CUDA context and other processes' memory, which a
 * simulation cannot see, so the capacity is modelled explicitly; pages are 2 MiB).
 *
 * <ul>
 *   <li>Capacity is the region rounded inwards to 2 MiB boundaries. Classic segments and mapped
 *       pages of expandable segments both consume it; a request beyond it fails, as {@code
 *       cudaMalloc} or {@code cuMemCreate} would with {@code cudaErrorMemoryAllocation}.
 *   <li>{@code cudaMalloc} places a segment at the lowest 2 MiB-aligned address of the region where
 *       it fits (first fit), so classic segments always lie inside the region.
 *   <li>Expandable reservations are virtual: reservation k starts at the region's aligned base plus
 *       the sizes of the reservations before it. PyTorch reserves 1.125 × device memory per
 *       segment, so only the first reservation's lower part falls inside the region; only mapped
 *       pages consume capacity.
 * </ul>
 *
 * <p>Note [Contiguous segments]: a real GPU maps a {@code cudaMalloc} through page tables, so its
 * success depends only on free bytes. kvsim's device is one flat address space, so a classic
 * segment needs one contiguous free range of the region; after much release and re-allocation of
 * differently sized segments a request can fail although enough bytes are free in total. Such
 * refusals are counted in {@link #contiguityRefusals()}.
 *
 * <p>Free ranges are kept in a {@link FreeExtentTree}, whose first-fit search is O(log n): on a
 * full device nearly every request ends in {@code cudaMalloc} attempts that fail, and a walk over
 * every free range per attempt was a large part of a replay.
 *
 * <p>Segments the allocator marks releasable ({@link #markReleasable}) are tracked in a {@link
 * ReleasableRuns}, so {@link #largestMallocBytes()} needs no walk over the segments (Note
 * [Releasable runs]).
 */
public final class RegionDriver implements DeviceDriver {
  /** Address and size granularity of segments: 2 MiB. */
  public static final long GRANULE_BYTES = 2L << 20;

  private final long baseBytes;
  private final long capacityBytes;
  private final FreeExtentTree freeRanges = new FreeExtentTree();
  private final TreeMap<Long, Long> segments = new TreeMap<>(); // start -> size (classic)
  private final ReleasableRuns runs;
  private long usedBytes;
  private long nextReservation;
  private long contiguityRefusals;

  /** A driver over the region's 2 MiB-aligned interior. */
  public RegionDriver(Region region) {
    long base = ceil(region.baseBytes());
    long end = Math.max(base, (region.endBytes() / GRANULE_BYTES) * GRANULE_BYTES);
    this.baseBytes = base;
    this.capacityBytes = end - base;
    if (capacityBytes > 0) {
      freeRanges.insert(base, capacityBytes);
    }
    this.nextReservation = base;
    this.runs = new ReleasableRuns(base, end);
  }

  /** Rounds up to 2 MiB without forming {@code bytes + 2 MiB - 1}, which wraps near 2^63. */
  private static long ceil(long bytes) {
    long r = bytes % GRANULE_BYTES;
    return r == 0 ? bytes : Math.addExact(bytes, GRANULE_BYTES - r);
  }

  /** Returns the device memory this driver manages. */
  public long capacityBytes() {
    return capacityBytes;
  }

  /** Returns the first address of the managed range. */
  public long baseBytes() {
    return baseBytes;
  }

  /** Returns how many {@code cudaMalloc}s failed for want of a contiguous range, not of bytes. */
  public long contiguityRefusals() {
    return contiguityRefusals;
  }

  @Override
  public long malloc(long sizeBytes, long stream) {
    long need = ceil(sizeBytes);
    // used + need > capacity, as a difference: used never exceeds capacity, so it cannot wrap.
    if (need > capacityBytes - usedBytes) {
      return -1;
    }
    int range = freeRanges.firstFit(need);
    if (range == FreeExtentTree.NONE) {
      contiguityRefusals++;
      return -1;
    }
    long start = freeRanges.takeLow(range, need);
    segments.put(start, need);
    runs.block(start, start + need);
    usedBytes += need;
    return start;
  }

  @Override
  public void free(long addressBytes, long sizeBytes) {
    Long size = segments.remove(addressBytes);
    if (size == null) {
      throw new IllegalStateException("cudaFree of 0x" + Long.toHexString(addressBytes) + ", which is no segment");
    }
    if (runs.isBlocking(addressBytes)) {
      runs.unblock(addressBytes);
    }
    usedBytes -= size;
    freeRanges.insert(addressBytes, size);
  }

  @Override
  public void adopt(long addressBytes, long sizeBytes) {
    // Larger than the device: refused before the rounding, which could overflow.
    if (sizeBytes > capacityBytes) {
      throw new IllegalArgumentException("segment at 0x" + Long.toHexString(addressBytes) + " is larger than the region");
    }
    long need = ceil(sizeBytes);
    // Adoption happens once per recorded segment, so a walk to the range holding it is fine.
    // Differences instead of sums below, which a recorded size near 2^63 could wrap.
    int r = freeRanges.first();
    while (r != FreeExtentTree.NONE && freeRanges.offsetOf(r) + freeRanges.sizeOf(r) <= addressBytes) {
      r = freeRanges.next(r);
    }
    long rangeStart = r == FreeExtentTree.NONE ? 0 : freeRanges.offsetOf(r);
    long rangeEnd = r == FreeExtentTree.NONE ? 0 : rangeStart + freeRanges.sizeOf(r);
    if (r == FreeExtentTree.NONE || rangeStart > addressBytes || rangeEnd - addressBytes < need || need > capacityBytes - usedBytes) {
      throw new IllegalArgumentException("segment at 0x" + Long.toHexString(addressBytes) + " is not free in the region");
    }
    freeRanges.remove(r);
    if (rangeStart < addressBytes) {
      freeRanges.insert(rangeStart, addressBytes - rangeStart);
    }
    if (addressBytes + need < rangeEnd) {
      freeRanges.insert(addressBytes + need, rangeEnd - addressBytes - need);
    }
    segments.put(addressBytes, need);
    runs.block(addressBytes, addressBytes + need);
    usedBytes += need;
  }

  @Override
  public long reserve(long sizeBytes, long pageBytes, long stream) {
    long base = nextReservation;
    // Reservations are never reused; exact, so that address space running out past 2^63 (after
    // some 10^8 reservations of a large device) fails loudly instead of aliasing addresses.
    nextReservation = Math.addExact(nextReservation, ceil(sizeBytes));
    return base;
  }

  @Override
  public void releaseReservation(long addressBytes, long sizeBytes) {}

  @Override
  public boolean map(long addressBytes, long sizeBytes, long stream) {
    // used + size > capacity, as a difference that cannot wrap.
    if (sizeBytes > capacityBytes - usedBytes) {
      return false;
    }
    usedBytes += sizeBytes;
    return true;
  }

  @Override
  public void unmap(long addressBytes, long sizeBytes) {
    usedBytes -= sizeBytes;
  }

  @Override
  public long freeBytes() {
    return capacityBytes - usedBytes;
  }

  /** Returns the bytes held by segments and mapped pages. */
  public long usedBytes() {
    return usedBytes;
  }

  @Override
  public void markReleasable(long addressBytes, boolean releasable) {
    Long size = segments.get(addressBytes);
    if (size == null || releasable != runs.isBlocking(addressBytes)) {
      return;
    }
    if (releasable) {
      runs.unblock(addressBytes);
    } else {
      runs.block(addressBytes, addressBytes + size);
    }
  }

  @Override
  public long largestMallocBytes() {
    return runs.largestRunBytes();
  }

  /**
   * Checks the free ranges (a well-formed tree that, with the segments, covers the capacity) and
   * returns what is wrong, or null.
   */
  public String checkFreeRanges(String owner) {
    freeRanges.checkInvariants(owner);
    long segmentBytes = 0;
    for (long size : segments.values()) {
      segmentBytes += size;
    }
    if (freeRanges.freeBytes() + segmentBytes != capacityBytes) {
      return "free ranges hold " + freeRanges.freeBytes() + " B and segments " + segmentBytes + " B of " + capacityBytes + " B";
    }
    return null;
  }

  /**
   * Returns what differs between the tracked runs and a walk with {@code releasable} (which segments
   * are blocking, and the largest run), or null when they agree.
   */
  public String checkReleasable(LongPredicate releasable) {
    String problem = runs.check();
    if (problem != null) {
      return problem;
    }
    int blocking = 0;
    for (long start : segments.keySet()) {
      boolean blocks = !releasable.test(start);
      if (blocks != runs.isBlocking(start)) {
        return "segment 0x" + Long.toHexString(start) + " is tracked as " + (blocks ? "releasable" : "blocking");
      }
      blocking += blocks ? 1 : 0;
    }
    if (blocking != runs.blockingCount()) {
      return runs.blockingCount() + " segments are tracked as blocking but " + blocking + " are";
    }
    long walked = largestMallocBytes(releasable);
    if (walked != largestMallocBytes()) {
      return "largest cudaMalloc is " + largestMallocBytes() + " B tracked but " + walked + " B by a walk";
    }
    return null;
  }

  @Override
  public long largestMallocBytes(LongPredicate releasable) {
    long best = 0;
    long cursor = baseBytes;
    long end = baseBytes + capacityBytes;
    // Walk the segments in address order; free gaps and releasable segments extend the current run.
    long run = 0;
    for (Map.Entry<Long, Long> s : segments.entrySet()) {
      long start = s.getKey();
      run += start - cursor;
      if (releasable.test(start)) {
        run += s.getValue();
      } else {
        best = Math.max(best, run);
        run = 0;
      }
      cursor = start + s.getValue();
    }
    run += end - cursor;
    best = Math.max(best, run);
    return best;
  }
}

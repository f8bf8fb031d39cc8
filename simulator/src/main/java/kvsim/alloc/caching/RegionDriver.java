package kvsim.alloc.caching;

import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import kvsim.gpu.Region;

/**
 * The driver model over one kvsim region: the device memory the caching allocator draws from
 * (spec §10: model device capacity explicitly; pages are 2 MiB).
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
 */
public final class RegionDriver implements DeviceDriver {
  /** Address and size granularity of segments: 2 MiB. */
  public static final long GRANULE_BYTES = 2L << 20;

  private final long baseBytes;
  private final long capacityBytes;
  private final TreeMap<Long, Long> freeRanges = new TreeMap<>(); // start -> end
  private final TreeMap<Long, Long> segments = new TreeMap<>(); // start -> size (classic)
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
      freeRanges.put(base, end);
    }
    this.nextReservation = base;
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
    for (Map.Entry<Long, Long> r : freeRanges.entrySet()) {
      long start = r.getKey();
      long end = r.getValue();
      if (end - start >= need) {
        freeRanges.remove(start);
        if (end - start > need) {
          freeRanges.put(start + need, end);
        }
        segments.put(start, need);
        usedBytes += need;
        return start;
      }
    }
    contiguityRefusals++;
    return -1;
  }

  @Override
  public void free(long addressBytes, long sizeBytes) {
    Long size = segments.remove(addressBytes);
    if (size == null) {
      throw new IllegalStateException("cudaFree of 0x" + Long.toHexString(addressBytes) + ", which is no segment");
    }
    usedBytes -= size;
    long start = addressBytes;
    long end = addressBytes + size;
    Map.Entry<Long, Long> before = freeRanges.floorEntry(start);
    if (before != null && before.getValue() == start) {
      start = before.getKey();
      freeRanges.remove(start);
    }
    Long afterEnd = freeRanges.remove(end);
    if (afterEnd != null) {
      end = afterEnd;
    }
    freeRanges.put(start, end);
  }

  @Override
  public void adopt(long addressBytes, long sizeBytes) {
    // Larger than the device: refused before the rounding, which could overflow.
    if (sizeBytes > capacityBytes) {
      throw new IllegalArgumentException("segment at 0x" + Long.toHexString(addressBytes) + " is larger than the region");
    }
    long need = ceil(sizeBytes);
    Map.Entry<Long, Long> r = freeRanges.floorEntry(addressBytes);
    // Differences instead of sums, which a recorded size near 2^63 could wrap.
    if (r == null || r.getValue() - addressBytes < need || need > capacityBytes - usedBytes) {
      throw new IllegalArgumentException("segment at 0x" + Long.toHexString(addressBytes) + " is not free in the region");
    }
    freeRanges.remove(r.getKey());
    if (r.getKey() < addressBytes) {
      freeRanges.put(r.getKey(), addressBytes);
    }
    if (addressBytes + need < r.getValue()) {
      freeRanges.put(addressBytes + need, r.getValue());
    }
    segments.put(addressBytes, need);
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

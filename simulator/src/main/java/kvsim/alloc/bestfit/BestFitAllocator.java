package kvsim.alloc.bestfit;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.support.AllocationSlots;
import kvsim.alloc.support.ExtentSizeIndex;
import kvsim.alloc.support.FreeExtentTree;
import kvsim.alloc.support.RegionAlignment;
import kvsim.devicemodel.Region;

/**
 * Best fit over one contiguous region, the classic sequential-fit policy that picks the free extent
 * wasting the least (Knuth, TAOCP vol. 1 §2.5; Wilson et al., "Dynamic Storage Allocation: A
 * Survey and Critical Review", 1995, which finds address-ordered best fit among the least
 * fragmenting policies), as a plain arena allocator on a GPU would run it. It differs from {@code
 * first-fit} only in which free extent it picks.
 *
 * <ul>
 *   <li>The whole region is one free extent at the start and the region is reserved throughout.
 *   <li>A request is rounded up to the alignment (option {@code alignment}, a power of two, default 512 B); the
 *       rounded size is what the allocation holds ({@code allocatedBytes} includes the rounding).
 *   <li>It takes the smallest free extent that can hold the rounded size, the lowest-address one
 *       among extents of that size, and splits off the low part: the allocation is [start, start +
 *       rounded), the rest of the extent stays free.
 *   <li>A free merges the extent with its free neighbours on both sides, so no two free extents
 *       ever touch.
 *   <li>When no extent fits, the refusal is {@code fragmentation} if the free bytes could hold the
 *       rounded size, {@code no_memory} otherwise. Requests are never split.
 *   <li>Freeing a handle that is not live is an error; a handle names one allocation only, so a
 *       stale handle is caught even after its slot has been reused.
 *   <li>Every operation is O(log n) in the number of free extents: an address-ordered {@link
 *       FreeExtentTree} finds the neighbours to merge with, and an {@link ExtentSizeIndex} ordered
 *       by (size, address) finds the best fit.
 * </ul>
 *
 * <p>Offsets relative to the region's base are multiples of the alignment. A region whose size is
 * not a multiple of it keeps an unusable tail in its top free extent, which is why {@link
 * #largestFreeBytes()} is the largest free extent rounded down to the alignment.
 *
 * <p>Latency defaults are first-fit's: 50 ns per allocation and per free, plus 10 ns per tree level
 * walked (the best-fit search of the size index on allocation, the neighbour search of the address
 * tree on free), a pointer-chasing search in host memory at a few ns per cache-resident level.
 *
 * <p>Handles and the live allocations are {@link AllocationSlots} (its Note [Handles]), which also
 * checks that free extents and allocations tile the region (its Note [Tiling]).
 */
public final class BestFitAllocator implements Allocator {
  /** Registry name. */
  public static final String NAME = "best-fit";

  /** Default latencies: 50 ns per call plus 10 ns per tree level walked, as first-fit's (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(50, 10, 50, 10, 0, 0);

  /** Default alignment: 512 B, the granularity of PyTorch's and CUDA's sub-allocations. */
  public static final long DEFAULT_ALIGNMENT_BYTES = 512;

  private final Region region;
  private final RegionAlignment alignment;
  private final LatencyModel latency;
  private final FreeExtentTree free;
  private final ExtentSizeIndex bySize;
  private final AllocationSlots slots;

  // Gauges: exact and O(1); reserved bytes are the region's size.
  private final AllocatorStats stats;

  /** Builds the model from its registry context (option {@code alignment}). */
  public BestFitAllocator(AllocatorContext context) {
    this(context.region(), RegionAlignment.option(context, DEFAULT_ALIGNMENT_BYTES), context.latency(DEFAULT_LATENCY));
  }

  /** Builds best fit over {@code region} with requests rounded up to {@code alignmentBytes}. */
  public BestFitAllocator(Region region, long alignmentBytes) {
    this(region, alignmentBytes, DEFAULT_LATENCY);
  }

  /** As {@link #BestFitAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public BestFitAllocator(Region region, long alignmentBytes, LatencyModel latency) {
    this.alignment = new RegionAlignment(region, alignmentBytes);
    this.region = region;
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    this.latency = latency;
    this.free = new FreeExtentTree(1024);
    this.bySize = new ExtentSizeIndex(1024);
    this.slots = new AllocationSlots(1024);
    if (region.sizeBytes() > 0) {
      free.insert(region.baseBytes(), region.sizeBytes());
      bySize.add(region.sizeBytes(), region.baseBytes());
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Returns the alignment requests are rounded up to. */
  public long alignmentBytes() {
    return alignment.bytes();
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (size > region.sizeBytes()) {
      // Refused before rounding, which could overflow for sizes near Long.MAX_VALUE.
      stats.addModelledNanos(latency.allocNanos(0));
      return refuse(size, size);
    }
    long rounded = alignment.roundUp(size);
    int best = bySize.bestFit(rounded);
    stats.addModelledNanos(latency.allocNanos(bySize.lastSteps()));
    if (best == ExtentSizeIndex.NONE) {
      return refuse(size, rounded);
    }
    long have = bySize.sizeOf(best);
    long at = bySize.offsetOf(best);
    bySize.removeFound();
    if (have > rounded) {
      bySize.add(have - rounded, at + rounded);
    }
    free.takeLow(free.find(at), rounded);
    long handle = slots.add(at, rounded, size);
    stats.onAlloc(size, rounded);
    return new AllocOutcome.Allocated(handle, rounded, Extents.single(at, rounded));
  }

  private AllocOutcome.OutOfMemory refuse(long requestedBytes, long roundedBytes) {
    long freeNow = freeBytes();
    OomReason reason = freeNow >= roundedBytes ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
    return new AllocOutcome.OutOfMemory(reason, requestedBytes, freeNow, largestFreeBytes());
  }

  @Override
  public void free(long handle) {
    int slot = slots.slotOf(handle, NAME);
    long at = slots.offsetOf(slot);
    long bytes = slots.allocatedOf(slot);
    int merged = free.insert(at, bytes);
    stats.addModelledNanos(latency.freeNanos(free.lastSteps()));
    // The merged extent tells which neighbours it swallowed: their entries leave the size index.
    long mergedAt = free.offsetOf(merged);
    long mergedBytes = free.sizeOf(merged);
    long end = at + bytes;
    if (mergedAt < at) {
      bySize.remove(at - mergedAt, mergedAt);
    }
    if (mergedAt + mergedBytes > end) {
      bySize.remove(mergedAt + mergedBytes - end, end);
    }
    bySize.add(mergedBytes, mergedAt);
    stats.onFree(slots.requestedOf(slot), bytes);
    slots.release(slot);
  }

  @Override
  public Extents extentsOf(long handle) {
    int slot = slots.slotOf(handle, NAME);
    return Extents.single(slots.offsetOf(slot), slots.allocatedOf(slot));
  }

  @Override
  public long freeBytes() {
    return region.sizeBytes() - stats.allocatedBytes();
  }

  @Override
  public long largestFreeBytes() {
    long largest = free.largestBytes();
    return alignment.roundDown(largest);
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  /** Returns {@code free_extents}: the number of free extents, a direct measure of fragmentation. */
  @Override
  public Map<String, Long> extraMetrics() {
    return Map.of("free_extents", (long) free.extentCount());
  }

  @Override
  public void checkInvariants() {
    free.checkInvariants(NAME);
    bySize.checkInvariants(NAME);
    if (free.freeBytes() + stats.allocatedBytes() != region.sizeBytes()) {
      throw new InvariantViolation(
          NAME,
          "bytes do not balance: " + free.freeBytes() + " free + " + stats.allocatedBytes() + " allocated != "
              + region.sizeBytes() + " region");
    }
    long[][] byAddress = free.toArrays();
    checkSizeIndex(byAddress[0], byAddress[1]);
    long allocated = 0;
    long requested = 0;
    int live = 0;
    for (int slot = 0; slot < slots.slotsUsed(); slot++) {
      if (!slots.isLive(slot)) {
        continue;
      }
      long rounded = slots.allocatedOf(slot);
      long offset = slots.offsetOf(slot);
      long asked = slots.requestedOf(slot);
      alignment.checkAllocation(NAME, offset, rounded, asked);
      allocated += rounded;
      requested += asked;
      live++;
    }
    stats.check(NAME, region.sizeBytes(), allocated, requested, live);
    slots.checkInvariants(NAME);
    slots.checkTiling(NAME, region.baseBytes(), region.endBytes(), byAddress[0], byAddress[1], byAddress[0].length);
  }

  /** Checks that the size index holds exactly the free extents of the address tree. */
  private void checkSizeIndex(long[] offsets, long[] sizes) {
    long[][] indexed = bySize.toArrays();
    if (indexed[0].length != offsets.length) {
      throw new InvariantViolation(
          NAME, "size index holds " + indexed[0].length + " extents, the address tree " + offsets.length);
    }
    // Both sorted by address, the two lists must be equal.
    Integer[] order = new Integer[indexed[0].length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(indexed[1][a], indexed[1][b]));
    for (int i = 0; i < order.length; i++) {
      if (indexed[1][order[i]] != offsets[i] || indexed[0][order[i]] != sizes[i]) {
        throw new InvariantViolation(
            NAME,
            "size index holds [" + indexed[1][order[i]] + ", +" + indexed[0][order[i]] + "), the address tree ["
                + offsets[i] + ", +" + sizes[i] + ")");
      }
    }
  }

  @Override
  public List<SegmentLayout> layout() {
    long[][] extents = free.toArrays();
    return List.of(
        new SegmentLayout(
            region.baseBytes(), region.sizeBytes(), "region", 0, false, slots.blocksWith(extents[0], extents[1], extents[0].length)));
  }
}

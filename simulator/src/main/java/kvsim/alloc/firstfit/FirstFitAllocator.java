package kvsim.alloc.firstfit;

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
import kvsim.alloc.support.FreeExtentTree;
import kvsim.alloc.support.RegionAlignment;
import kvsim.devicemodel.Region;

/**
 * Address-ordered first fit over one contiguous region, the classic sequential-fit allocator
 * (Knuth, TAOCP vol. 1 §2.5; Wilson et al., "Dynamic Storage Allocation: A Survey and Critical
 * Review", 1995), as a plain arena allocator on a GPU would run it.
 *
 * <ul>
 *   <li>The whole region is one free extent at the start and the region is reserved throughout.
 *   <li>A request is rounded up to the alignment (option {@code alignment}, a power of two, default 512 B); the
 *       rounded size is what the allocation holds ({@code allocatedBytes} includes the rounding).
 *   <li>It takes the lowest-address free extent that can hold the rounded size and splits off the
 *       low part: the allocation is [start, start + rounded), the rest of the extent stays free.
 *   <li>A free merges the extent with its free neighbours on both sides, so no two free extents
 *       ever touch.
 *   <li>When no extent fits, the refusal is {@code fragmentation} if the free bytes could hold the
 *       rounded size, {@code no_memory} otherwise. Requests are never split.
 *   <li>Freeing a handle that is not live is an error; a handle names one allocation only, so a
 *       stale handle is caught even after its slot has been reused.
 *   <li>Every operation is O(log n) in the number of free extents ({@link FreeExtentTree}).
 * </ul>
 *
 * <p>Offsets relative to the region's base are multiples of the alignment. A region whose size is
 * not a multiple of it keeps an unusable tail in its top free extent, which is why {@link
 * #largestFreeBytes()} is the largest free extent rounded down to the alignment.
 *
 * <p>Latency defaults: 50 ns per allocation and per free, plus 10 ns per tree level walked (the
 * search for the first fit, or for the neighbours of a freed extent): a pointer-chasing search in
 * host memory, as measured for balanced-tree allocators, at a few ns per cache-resident level.
 *
 * <p>Handles and the live allocations are {@link AllocationSlots} (its Note [Handles]), which also
 * checks that free extents and allocations tile the region (its Note [Tiling]).
 */
public final class FirstFitAllocator implements Allocator {
  /** Default latencies: 50 ns per call plus 10 ns per tree level walked (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(50, 10, 50, 10, 0, 0);

  /** Default alignment: 512 B, the granularity of PyTorch's and CUDA's sub-allocations. */
  public static final long DEFAULT_ALIGNMENT_BYTES = 512;

  private final Region region;
  private final RegionAlignment alignment;
  private final LatencyModel latency;
  private final FreeExtentTree free;
  private final AllocationSlots slots;

  private final AllocatorStats stats;

  /** Builds the model from its registry context (option {@code alignment}). */
  public FirstFitAllocator(AllocatorContext context) {
    this(context.region(), RegionAlignment.option(context, DEFAULT_ALIGNMENT_BYTES), context.latency(DEFAULT_LATENCY));
  }

  /** Builds first fit over {@code region} with requests rounded up to {@code alignmentBytes}. */
  public FirstFitAllocator(Region region, long alignmentBytes) {
    this(region, alignmentBytes, DEFAULT_LATENCY);
  }

  /** As {@link #FirstFitAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public FirstFitAllocator(Region region, long alignmentBytes, LatencyModel latency) {
    this.alignment = new RegionAlignment(region, alignmentBytes);
    this.region = region;
    this.latency = latency;
    this.free = new FreeExtentTree(1024);
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    if (region.sizeBytes() > 0) {
      free.insert(region.baseBytes(), region.sizeBytes());
    }
    this.slots = new AllocationSlots(1024);
  }

  @Override
  public String name() {
    return "first-fit";
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
    int node = free.firstFit(rounded);
    stats.addModelledNanos(latency.allocNanos(free.lastSteps()));
    if (node == FreeExtentTree.NONE) {
      return refuse(size, rounded);
    }
    long at = free.takeLow(node, rounded);
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
    int slot = slots.slotOf(handle, name());
    long bytes = slots.allocatedOf(slot);
    free.insert(slots.offsetOf(slot), bytes);
    stats.addModelledNanos(latency.freeNanos(free.lastSteps()));
    stats.onFree(slots.requestedOf(slot), bytes);
    slots.release(slot);
  }

  @Override
  public Extents extentsOf(long handle) {
    int slot = slots.slotOf(handle, name());
    return Extents.single(slots.offsetOf(slot), slots.allocatedOf(slot));
  }

  @Override
  public AllocatorStats stats() {
    return stats;
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
    free.checkInvariants(name());
    if (free.freeBytes() + stats.allocatedBytes() != region.sizeBytes()) {
      throw new InvariantViolation(
          name(),
          "bytes do not balance: " + free.freeBytes() + " free + " + stats.allocatedBytes() + " allocated != "
              + region.sizeBytes() + " region");
    }
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
      alignment.checkAllocation(name(), offset, rounded, asked);
      allocated += rounded;
      requested += asked;
      live++;
    }
    stats.check(name(), region.sizeBytes(), allocated, requested, live);
    slots.checkInvariants(name());
    long[][] extents = free.toArrays();
    slots.checkTiling(name(), region.baseBytes(), region.endBytes(), extents[0], extents[1], extents[0].length);
  }

  @Override
  public List<SegmentLayout> layout() {
    long[][] extents = free.toArrays();
    return List.of(
        new SegmentLayout(
            region.baseBytes(), region.sizeBytes(), "region", 0, false, slots.blocksWith(extents[0], extents[1], extents[0].length)));
  }
}

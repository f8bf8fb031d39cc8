package kvsim.alloc.bestfit;

import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.support.ExtentArena;
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
 *       kvsim.alloc.support.FreeExtentTree} finds the neighbours to merge with, and an {@link kvsim.alloc.support.ExtentSizeIndex} ordered
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
 * <p>The model is an {@link ExtentArena} with fit {@link ExtentArena.Fit#BEST}, which holds the
 * structures below and runs every operation.
 *
 * <p>Handles and the live allocations are {@link kvsim.alloc.support.AllocationSlots} (its Note [Handles]), which also
 * checks that free extents and allocations tile the region (its Note [Tiling]).
 */
public final class BestFitAllocator implements Allocator {
  /** Registry name. */
  public static final String NAME = "best-fit";

  /** Default latencies: 50 ns per call plus 10 ns per tree level walked, as first-fit's (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(50, 10, 50, 10, 0, 0);

  /** Default alignment: 512 B, the granularity of PyTorch's and CUDA's sub-allocations. */
  public static final long DEFAULT_ALIGNMENT_BYTES = 512;

  /** The arena with this model's fit; every operation is its. */
  private final ExtentArena arena;

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
    this.arena = new ExtentArena(NAME, ExtentArena.Fit.BEST, region, alignmentBytes, latency);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Returns the alignment requests are rounded up to. */
  public long alignmentBytes() {
    return arena.alignmentBytes();
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    return arena.allocate(request);
  }

  @Override
  public void free(long handle) {
    arena.free(handle);
  }

  @Override
  public Extents extentsOf(long handle) {
    return arena.extentsOf(handle);
  }

  @Override
  public AllocatorStats stats() {
    return arena.stats();
  }

  @Override
  public long freeBytes() {
    return arena.freeBytes();
  }

  @Override
  public long largestFreeBytes() {
    return arena.largestFreeBytes();
  }

  @Override
  public LatencyModel latency() {
    return arena.latency();
  }

  /** Returns {@code free_extents}: the number of free extents, a direct measure of fragmentation. */
  @Override
  public Map<String, Long> extraMetrics() {
    return arena.extraMetrics();
  }

  @Override
  public void checkInvariants() {
    arena.checkInvariants();
  }

  @Override
  public List<SegmentLayout> layout() {
    return arena.layout();
  }
}

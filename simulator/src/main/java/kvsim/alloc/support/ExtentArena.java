package kvsim.alloc.support;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.devicemodel.Region;

/**
 * A sequential-fit arena over one contiguous region (Knuth, TAOCP vol. 1 §2.5; Wilson et al.,
 * "Dynamic Storage Allocation: A Survey and Critical Review", 1995): requests rounded up to an
 * alignment, a free extent chosen by a {@link Fit} and split low, frees merged with both
 * neighbours. The {@code first-fit} and {@code best-fit} models are this arena with their fit; their
 * class comments give the rules, which differ only in the extent chosen.
 *
 * <p>The address-ordered {@link FreeExtentTree} finds neighbours to merge with (and the first fit);
 * best fit keeps an {@link ExtentSizeIndex} ordered by (size, address) beside it. Handles and live
 * allocations are {@link AllocationSlots} (its Note [Handles]), which also checks that free extents
 * and allocations tile the region (its Note [Tiling]).
 *
 * <p>Note [Fit as a field]: the fit is a final enum field tested with one comparison on each call,
 * not a strategy object, so the search stays a direct call the JIT inlines (a strategy interface
 * with two implementations would be a bimorphic call on the hottest path of both models).
 */
public final class ExtentArena implements Allocator {
  /** Which free extent a request takes. */
  public enum Fit {
    /** The lowest-address extent that can hold the rounded size. */
    FIRST,
    /** The smallest extent that can hold the rounded size, the lowest-address one among equals. */
    BEST
  }

  private final String name;
  private final Fit fit;
  private final Region region;
  private final RegionAlignment alignment;
  private final LatencyModel latency;
  private final FreeExtentTree free;
  /** The best-fit index; null under first fit. */
  private final ExtentSizeIndex bySize;
  private final AllocationSlots slots;

  // Gauges: exact and O(1); reserved bytes are the region's size.
  private final AllocatorStats stats;

  /**
   * The starting room of the free-extent tree, the size index and the slot table, each grown by
   * doubling: small, since a seed sweep makes an allocator per cell and most cells are short (at 1,024
   * their arrays, 80 KB, were half of a cell's own cost in a sweep of one-operation cells).
   */
  static final int INITIAL_EXTENTS = 64;

  /**
   * Builds an arena named {@code name} (the model's registry name) over {@code region} with requests
   * rounded up to {@code alignmentBytes} (a power of two, {@link RegionAlignment}).
   */
  public ExtentArena(String name, Fit fit, Region region, long alignmentBytes, LatencyModel latency) {
    this.alignment = new RegionAlignment(region, alignmentBytes);
    this.name = name;
    this.fit = fit;
    this.region = region;
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    this.latency = latency;
    this.free = new FreeExtentTree(INITIAL_EXTENTS);
    this.bySize = fit == Fit.BEST ? new ExtentSizeIndex(INITIAL_EXTENTS) : null;
    this.slots = new AllocationSlots(INITIAL_EXTENTS);
    if (region.sizeBytes() > 0) {
      free.insert(region.baseBytes(), region.sizeBytes());
      if (bySize != null) {
        bySize.add(region.sizeBytes(), region.baseBytes());
      }
    }
  }

  @Override
  public String name() {
    return name;
  }

  /** Returns the fit in force. */
  public Fit fit() {
    return fit;
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
    long at = fit == Fit.FIRST ? takeFirstFit(rounded) : takeBestFit(rounded);
    if (at < 0) {
      return refuse(size, rounded);
    }
    long handle = slots.add(at, rounded, size);
    stats.onAlloc(size, rounded);
    return new AllocOutcome.Allocated(handle, rounded, Extents.single(at, rounded));
  }

  /** First fit: takes {@code rounded} bytes from the lowest-address extent that holds them; -1 if none. */
  private long takeFirstFit(long rounded) {
    int node = free.firstFit(rounded);
    stats.addModelledNanos(latency.allocNanos(free.lastSteps()));
    if (node == FreeExtentTree.NONE) {
      return -1;
    }
    return free.takeLow(node, rounded);
  }

  /** Best fit: takes {@code rounded} bytes from the smallest extent that holds them; -1 if none. */
  private long takeBestFit(long rounded) {
    int best = bySize.bestFit(rounded);
    stats.addModelledNanos(latency.allocNanos(bySize.lastSteps()));
    if (best == ExtentSizeIndex.NONE) {
      return -1;
    }
    long have = bySize.sizeOf(best);
    long at = bySize.offsetOf(best);
    bySize.removeFound();
    if (have > rounded) {
      bySize.add(have - rounded, at + rounded);
    }
    free.takeLow(free.find(at), rounded);
    return at;
  }

  private AllocOutcome.OutOfMemory refuse(long requestedBytes, long roundedBytes) {
    long freeNow = freeBytes();
    OomReason reason = freeNow >= roundedBytes ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
    return new AllocOutcome.OutOfMemory(reason, requestedBytes, freeNow, largestFreeBytes());
  }

  @Override
  public void free(long handle) {
    int slot = slots.slotOf(handle, name);
    long at = slots.offsetOf(slot);
    long bytes = slots.allocatedOf(slot);
    int merged = free.insert(at, bytes);
    stats.addModelledNanos(latency.freeNanos(free.lastSteps()));
    if (bySize != null) {
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
    }
    stats.onFree(slots.requestedOf(slot), bytes);
    slots.release(slot);
  }

  @Override
  public Extents extentsOf(long handle) {
    int slot = slots.slotOf(handle, name);
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
    free.checkInvariants(name);
    if (bySize != null) {
      bySize.checkInvariants(name);
    }
    if (free.freeBytes() + stats.allocatedBytes() != region.sizeBytes()) {
      throw new InvariantViolation(
          name,
          "bytes do not balance: " + free.freeBytes() + " free + " + stats.allocatedBytes() + " allocated != "
              + region.sizeBytes() + " region");
    }
    long[][] byAddress = free.toArrays();
    if (bySize != null) {
      checkSizeIndex(byAddress[0], byAddress[1]);
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
      alignment.checkAllocation(name, offset, rounded, asked);
      allocated += rounded;
      requested += asked;
      live++;
    }
    stats.check(name, region.sizeBytes(), allocated, requested, live);
    slots.checkInvariants(name);
    slots.checkTiling(name, region.baseBytes(), region.endBytes(), byAddress[0], byAddress[1], byAddress[0].length);
  }

  /** Checks that the size index holds exactly the free extents of the address tree. */
  private void checkSizeIndex(long[] offsets, long[] sizes) {
    long[][] indexed = bySize.toArrays();
    if (indexed[0].length != offsets.length) {
      throw new InvariantViolation(
          name, "size index holds " + indexed[0].length + " extents, the address tree " + offsets.length);
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
            name,
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

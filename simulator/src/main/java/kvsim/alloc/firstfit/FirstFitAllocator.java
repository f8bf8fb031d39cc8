package kvsim.alloc.firstfit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.support.FreeExtentTree;
import kvsim.core.Bytes;
import kvsim.devicemodel.Region;

/**
 * Address-ordered first fit over one contiguous region, the classic sequential-fit allocator
 * (Knuth, TAOCP vol. 1 §2.5; Wilson et al., "Dynamic Storage Allocation: A Survey and Critical
 * Review", 1995), as a plain arena allocator on a GPU would run it.
 *
 * <ul>
 *   <li>The whole region is one free extent at the start and the region is reserved throughout.
 *   <li>A request is rounded up to the alignment (option {@code alignment}, default 512 B); the
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
 * <p>Note [Tiling]: the invariant check sorts the starts and the ends of all pieces (free extents
 * and allocations) separately, which needs no per-piece objects. If every piece is non-empty, the
 * first start is the region's base, the last end its top, and the i-th end equals the (i+1)-th
 * start, then every address is covered by exactly one piece: at most one because no more starts
 * than ends-plus-one lie at or below any address, at least one because the next start never lies
 * past the previous end.
 *
 * <p>Note [Handles]: a handle is {@code generation << 32 | slot}. A slot is four longs of one
 * primitive array (offset, allocated bytes, requested bytes, generation); slots are reused from a
 * stack, and each reuse bumps the slot's generation, so the handles of freed allocations do not
 * become live again (until a slot has been reused 2^24 times). The generation keeps 24 bits so that
 * a handle stays below 2^56, as the {@link Allocator} contract asks: the replay engine keeps the
 * region of a memory plan in the bits above.
 */
public final class FirstFitAllocator implements Allocator {
  /** Default latencies: 50 ns per call plus 10 ns per tree level walked (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(50, 10, 50, 10, 0, 0);

  /** Default alignment: 512 B, the granularity of PyTorch's and CUDA's sub-allocations. */
  public static final long DEFAULT_ALIGNMENT_BYTES = 512;

  private static final long GENERATION_MASK = 0xFF_FFFFL; // handles below 2^56 (Note [Handles])
  private static final int SLOT_STRIDE = 4;
  private static final int ALLOCATED = 1;
  private static final int REQUESTED = 2;
  private static final int GENERATION = 3;

  private final Region region;
  private final long alignmentBytes;
  private final LatencyModel latency;
  private final FreeExtentTree free;

  // Slot s occupies slots[4s .. 4s + 3]: offset, allocated bytes (0 when not live), requested bytes,
  // generation; one cache line serves a free's checks and its extent.
  private long[] slots;
  private int[] freeSlots;
  private int freeSlotCount;
  private int slotsUsed; // slots [0, slotsUsed) have been handed out at least once

  private final AllocatorStats stats;

  /** Builds the model from its registry context (option {@code alignment}). */
  public FirstFitAllocator(AllocatorContext context) {
    this(context.region(), context.bytes("alignment", DEFAULT_ALIGNMENT_BYTES), context.latency(DEFAULT_LATENCY));
  }

  /** Builds first fit over {@code region} with requests rounded up to {@code alignmentBytes}. */
  public FirstFitAllocator(Region region, long alignmentBytes) {
    this(region, alignmentBytes, DEFAULT_LATENCY);
  }

  /** As {@link #FirstFitAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public FirstFitAllocator(Region region, long alignmentBytes, LatencyModel latency) {
    if (alignmentBytes <= 0) {
      throw new IllegalArgumentException("alignment must be positive, got " + alignmentBytes);
    }
    // allocate() refuses sizes above the region before rounding; this bound makes the rounding of
    // every size up to the region (and the mask's size + alignment - 1) fit in a long.
    if (Bytes.ceilDiv(region.sizeBytes(), alignmentBytes) > Long.MAX_VALUE / alignmentBytes) {
      throw new IllegalArgumentException(
          "a region of " + region.sizeBytes() + " B cannot be rounded to an alignment of " + alignmentBytes + " B");
    }
    this.region = region;
    this.alignmentBytes = alignmentBytes;
    this.latency = latency;
    this.free = new FreeExtentTree(1024);
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    if (region.sizeBytes() > 0) {
      free.insert(region.baseBytes(), region.sizeBytes());
    }
    int slotCapacity = 1024;
    this.slots = new long[slotCapacity * SLOT_STRIDE];
    this.freeSlots = new int[slotCapacity];
  }

  @Override
  public String name() {
    return "first-fit";
  }

  /** Returns the alignment requests are rounded up to. */
  public long alignmentBytes() {
    return alignmentBytes;
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (size > region.sizeBytes()) {
      // Refused before rounding, which could overflow for sizes near Long.MAX_VALUE.
      stats.addModelledNanos(latency.allocNanos(0));
      return refuse(size, size);
    }
    long rounded = roundUp(size);
    int node = free.firstFit(rounded);
    stats.addModelledNanos(latency.allocNanos(free.lastSteps()));
    if (node == FreeExtentTree.NONE) {
      return refuse(size, rounded);
    }
    long at = free.takeLow(node, rounded);
    int slot = takeSlot();
    int s = slot * SLOT_STRIDE;
    long generation = (slots[s + GENERATION] + 1) & GENERATION_MASK;
    slots[s] = at;
    slots[s + ALLOCATED] = rounded;
    slots[s + REQUESTED] = size;
    slots[s + GENERATION] = generation;
    stats.onAlloc(size, rounded);
    return new AllocOutcome.Allocated((generation << 32) | slot, rounded, Extents.single(at, rounded));
  }

  /** Rounds up to the alignment; a mask for a power of two, which spares the hot path a division. */
  private long roundUp(long sizeBytes) {
    return (alignmentBytes & (alignmentBytes - 1)) == 0
        ? (sizeBytes + alignmentBytes - 1) & -alignmentBytes
        : Bytes.roundUp(sizeBytes, alignmentBytes);
  }

  private AllocOutcome.OutOfMemory refuse(long requestedBytes, long roundedBytes) {
    long freeNow = freeBytes();
    OomReason reason = freeNow >= roundedBytes ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
    return new AllocOutcome.OutOfMemory(reason, requestedBytes, freeNow, largestFreeBytes());
  }

  @Override
  public void free(long handle) {
    int slot = checkedSlot(handle);
    int s = slot * SLOT_STRIDE;
    long bytes = slots[s + ALLOCATED];
    free.insert(slots[s], bytes);
    stats.addModelledNanos(latency.freeNanos(free.lastSteps()));
    stats.onFree(slots[s + REQUESTED], bytes);
    slots[s + ALLOCATED] = 0;
    slots[s + REQUESTED] = 0;
    freeSlots[freeSlotCount++] = slot;
  }

  private int takeSlot() {
    if (freeSlotCount > 0) {
      return freeSlots[--freeSlotCount];
    }
    if (slotsUsed == freeSlots.length) {
      int n = slotsUsed * 2;
      slots = Arrays.copyOf(slots, n * SLOT_STRIDE);
      freeSlots = Arrays.copyOf(freeSlots, n);
    }
    return slotsUsed++;
  }

  private int checkedSlot(long handle) {
    int slot = (int) handle;
    long generation = handle >>> 32;
    if (slot < 0
        || slot >= slotsUsed
        || slots[slot * SLOT_STRIDE + ALLOCATED] == 0
        || generation != slots[slot * SLOT_STRIDE + GENERATION]) {
      throw new AllocatorMisuseException(
          "first-fit: handle " + handle + " is not a live allocation (double free?)");
    }
    return slot;
  }

  @Override
  public Extents extentsOf(long handle) {
    int slot = checkedSlot(handle);
    return Extents.single(offsetOfSlot(slot), allocatedOfSlot(slot));
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
    return largest - largest % alignmentBytes;
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
    int pieces = free.extentCount();
    long[] starts = new long[pieces + slotsUsed];
    long[] ends = new long[pieces + slotsUsed];
    for (int node = free.first(), i = 0; node != FreeExtentTree.NONE; node = free.next(node), i++) {
      starts[i] = free.offsetOf(node);
      ends[i] = free.offsetOf(node) + free.sizeOf(node);
    }
    for (int slot = 0; slot < slotsUsed; slot++) {
      long rounded = allocatedOfSlot(slot);
      if (rounded == 0) {
        continue;
      }
      long offset = offsetOfSlot(slot);
      long asked = requestedOfSlot(slot);
      if (rounded != Bytes.roundUp(asked, alignmentBytes) || asked <= 0) {
        throw new InvariantViolation(name(), "allocation at " + offset + " holds " + rounded + " B for " + asked + " B");
      }
      if ((offset - region.baseBytes()) % alignmentBytes != 0) {
        throw new InvariantViolation(name(), "allocation at " + offset + " is not aligned");
      }
      starts[pieces] = offset;
      ends[pieces] = offset + rounded;
      pieces++;
      allocated += rounded;
      requested += asked;
      live++;
    }
    stats.check(name(), region.sizeBytes(), allocated, requested, live);
    if (live + freeSlotCount != slotsUsed) {
      throw new InvariantViolation(name(), "slot stack holds " + freeSlotCount + " slots, expected " + (slotsUsed - live));
    }
    checkTiling(Arrays.copyOf(starts, pieces), Arrays.copyOf(ends, pieces));
  }

  /**
   * Checks that free extents and allocations together tile the region exactly. With starts and
   * ends sorted on their own, the i-th end meeting the (i+1)-th start everywhere, the first start at
   * the base and the last end at the top leave no room for a gap or an overlap (Note [Tiling]).
   */
  private void checkTiling(long[] starts, long[] ends) {
    Arrays.sort(starts);
    Arrays.sort(ends);
    long cursor = region.baseBytes();
    for (int i = 0; i < starts.length; i++) {
      if (starts[i] != cursor || ends[i] <= starts[i]) {
        throw new InvariantViolation(
            name(),
            (starts[i] > cursor ? "gap" : "overlap") + " near address " + Math.min(starts[i], cursor)
                + ": free extents and allocations do not tile the region");
      }
      cursor = ends[i];
    }
    if (cursor != region.endBytes()) {
      throw new InvariantViolation(name(), "extents end at " + cursor + ", region ends at " + region.endBytes());
    }
  }

  @Override
  public List<SegmentLayout> layout() {
    int[] live =
        IntStream.range(0, slotsUsed)
            .filter(slot -> allocatedOfSlot(slot) != 0)
            .boxed()
            .sorted((a, b) -> Long.compare(offsetOfSlot(a), offsetOfSlot(b)))
            .mapToInt(Integer::intValue)
            .toArray();
    List<SegmentLayout.Block> blocks = new ArrayList<>(live.length + free.extentCount());
    int node = free.first();
    int i = 0;
    while (node != FreeExtentTree.NONE || i < live.length) {
      if (i == live.length || (node != FreeExtentTree.NONE && free.offsetOf(node) < offsetOfSlot(live[i]))) {
        blocks.add(new SegmentLayout.Block(free.offsetOf(node), free.sizeOf(node), 0, SegmentLayout.State.INACTIVE));
        node = free.next(node);
      } else {
        int slot = live[i++];
        blocks.add(
            new SegmentLayout.Block(
                offsetOfSlot(slot), allocatedOfSlot(slot), requestedOfSlot(slot), SegmentLayout.State.ACTIVE_ALLOCATED));
      }
    }
    return List.of(new SegmentLayout(region.baseBytes(), region.sizeBytes(), "region", 0, false, blocks));
  }

  private long offsetOfSlot(int slot) {
    return slots[slot * SLOT_STRIDE];
  }

  private long allocatedOfSlot(int slot) {
    return slots[slot * SLOT_STRIDE + ALLOCATED];
  }

  private long requestedOfSlot(int slot) {
    return slots[slot * SLOT_STRIDE + REQUESTED];
  }
}

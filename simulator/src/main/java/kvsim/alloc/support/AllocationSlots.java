package kvsim.alloc.support;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.SegmentLayout;

/**
 * The live allocations of a model that gives every allocation one extent: per allocation its
 * offset, allocated bytes and requested bytes, named by a handle that never becomes live again once
 * freed. It is mechanism only: where the extent lies is the model's policy, and the model keeps its
 * own byte gauges.
 *
 * <ul>
 *   <li>{@link #add}, {@link #slotOf} and {@link #release} cost O(1); freed slots are reused from a
 *       stack, most recently freed first, so a steady workload allocates nothing.
 *   <li>{@link #checkTiling} and {@link #blocksWith} serve the model's invariant check and layout:
 *       they merge the model's free extents with the live allocations.
 * </ul>
 *
 * <p>Note [Handles]: a handle is {@code generation << 32 | slot}. A slot is four longs of one
 * primitive array (offset, allocated bytes, requested bytes, generation); each reuse of a slot bumps
 * its generation, so the handles of freed allocations do not become live again (until a slot has
 * been reused 2^24 times). The generation keeps 24 bits so that a handle stays below 2^56, as the
 * {@link kvsim.alloc.Allocator} contract asks: the replay engine keeps the region of a memory plan in
 * the bits above.
 *
 * <p>Note [Tiling]: the tiling check sorts the starts and the ends of all pieces (free extents and
 * allocations) separately, which needs no per-piece objects. If every piece is non-empty, the first
 * start is the range's base, the last end its top, and the i-th end equals the (i+1)-th start, then
 * every address is covered by exactly one piece: at most one because no more starts than
 * ends-plus-one lie at or below any address, at least one because the next start never lies past
 * the previous end.
 */
public final class AllocationSlots {
  private static final long GENERATION_MASK = 0xFF_FFFFL; // handles below 2^56 (Note [Handles])
  private static final int SLOT_STRIDE = 4;
  private static final int ALLOCATED = 1;
  private static final int REQUESTED = 2;
  private static final int GENERATION = 3;

  // Slot s occupies slots[4s .. 4s + 3]: offset, allocated bytes (0 when not live), requested bytes,
  // generation; one cache line serves a free's checks and its extent.
  private long[] slots;
  private int[] freeSlots;
  private int freeSlotCount;
  private int slotsUsed; // slots [0, slotsUsed) have been handed out at least once

  /** Creates an empty table with room for {@code initialCapacity} allocations before it grows. */
  public AllocationSlots(int initialCapacity) {
    int n = Math.max(1, initialCapacity);
    slots = new long[n * SLOT_STRIDE];
    freeSlots = new int[n];
  }

  /** Records a live allocation of a positive {@code allocatedBytes} at {@code offsetBytes} and returns its handle. */
  public long add(long offsetBytes, long allocatedBytes, long requestedBytes) {
    int slot = takeSlot();
    int s = slot * SLOT_STRIDE;
    long generation = (slots[s + GENERATION] + 1) & GENERATION_MASK;
    slots[s] = offsetBytes;
    slots[s + ALLOCATED] = allocatedBytes;
    slots[s + REQUESTED] = requestedBytes;
    slots[s + GENERATION] = generation;
    return (generation << 32) | slot;
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

  /**
   * Returns the slot of a live handle; throws {@link AllocatorMisuseException} naming {@code owner}
   * when the handle is not live (never handed out, or freed).
   */
  public int slotOf(long handle, String owner) {
    int slot = (int) handle;
    long generation = handle >>> 32;
    if (slot < 0
        || slot >= slotsUsed
        || slots[slot * SLOT_STRIDE + ALLOCATED] == 0
        || generation != slots[slot * SLOT_STRIDE + GENERATION]) {
      throw new AllocatorMisuseException(owner + ": handle " + handle + " is not a live allocation (double free?)");
    }
    return slot;
  }

  /** Ends the allocation in a live slot; the slot is reused by a later {@link #add}. */
  public void release(int slot) {
    int s = slot * SLOT_STRIDE;
    slots[s + ALLOCATED] = 0;
    slots[s + REQUESTED] = 0;
    freeSlots[freeSlotCount++] = slot;
  }

  /** Returns the start address of the allocation in a slot. */
  public long offsetOf(int slot) {
    return slots[slot * SLOT_STRIDE];
  }

  /** Returns the allocated bytes of the allocation in a slot, 0 when the slot is not live. */
  public long allocatedOf(int slot) {
    return slots[slot * SLOT_STRIDE + ALLOCATED];
  }

  /** Returns the requested bytes of the allocation in a slot. */
  public long requestedOf(int slot) {
    return slots[slot * SLOT_STRIDE + REQUESTED];
  }

  /** Returns the number of slots ever handed out; live ones are those with {@link #isLive}. */
  public int slotsUsed() {
    return slotsUsed;
  }

  /** Returns whether a slot below {@link #slotsUsed()} holds a live allocation. */
  public boolean isLive(int slot) {
    return allocatedOf(slot) != 0;
  }

  /** Returns the number of live allocations. */
  public int liveCount() {
    return slotsUsed - freeSlotCount;
  }

  /** Checks that the stack of reusable slots holds exactly the slots that are not live. */
  public void checkInvariants(String owner) {
    int live = 0;
    for (int slot = 0; slot < slotsUsed; slot++) {
      if (isLive(slot)) {
        live++;
      }
    }
    if (live + freeSlotCount != slotsUsed) {
      throw new InvariantViolation(owner, "slot stack holds " + freeSlotCount + " slots, expected " + (slotsUsed - live));
    }
    for (int i = 0; i < freeSlotCount; i++) {
      if (freeSlots[i] < 0 || freeSlots[i] >= slotsUsed || isLive(freeSlots[i])) {
        throw new InvariantViolation(owner, "slot " + freeSlots[i] + " is on the stack of reusable slots but live");
      }
    }
  }

  /**
   * Checks that the free extents given ({@code freeOffsets[i]}, {@code freeSizes[i]} for i below
   * {@code freeCount}) and the live allocations together tile [baseBytes, endBytes) exactly
   * (Note [Tiling]); throws {@link InvariantViolation} naming {@code owner} at the first gap or
   * overlap.
   */
  public void checkTiling(
      String owner, long baseBytes, long endBytes, long[] freeOffsets, long[] freeSizes, int freeCount) {
    long[] starts = new long[freeCount + slotsUsed];
    long[] ends = new long[freeCount + slotsUsed];
    int pieces = 0;
    for (int i = 0; i < freeCount; i++, pieces++) {
      starts[pieces] = freeOffsets[i];
      ends[pieces] = freeOffsets[i] + freeSizes[i];
    }
    for (int slot = 0; slot < slotsUsed; slot++) {
      if (isLive(slot)) {
        starts[pieces] = offsetOf(slot);
        ends[pieces] = offsetOf(slot) + allocatedOf(slot);
        pieces++;
      }
    }
    starts = Arrays.copyOf(starts, pieces);
    ends = Arrays.copyOf(ends, pieces);
    Arrays.sort(starts);
    Arrays.sort(ends);
    long cursor = baseBytes;
    for (int i = 0; i < pieces; i++) {
      if (starts[i] != cursor || ends[i] <= starts[i]) {
        throw new InvariantViolation(
            owner,
            (starts[i] > cursor ? "gap" : "overlap") + " near address " + Math.min(starts[i], cursor)
                + ": free extents and allocations do not tile the region");
      }
      cursor = ends[i];
    }
    if (cursor != endBytes) {
      throw new InvariantViolation(owner, "extents end at " + cursor + ", region ends at " + endBytes);
    }
  }

  /**
   * Returns layout blocks for the free extents given (sorted by offset) and the live allocations,
   * merged in address order: free extents as inactive blocks, allocations as active ones with
   * their requested bytes.
   */
  public List<SegmentLayout.Block> blocksWith(long[] freeOffsets, long[] freeSizes, int freeCount) {
    int[] live =
        IntStream.range(0, slotsUsed)
            .filter(this::isLive)
            .boxed()
            .sorted((a, b) -> Long.compare(offsetOf(a), offsetOf(b)))
            .mapToInt(Integer::intValue)
            .toArray();
    List<SegmentLayout.Block> blocks = new ArrayList<>(live.length + freeCount);
    int f = 0;
    int i = 0;
    while (f < freeCount || i < live.length) {
      if (i == live.length || (f < freeCount && freeOffsets[f] < offsetOf(live[i]))) {
        blocks.add(new SegmentLayout.Block(freeOffsets[f], freeSizes[f], 0, SegmentLayout.State.INACTIVE));
        f++;
      } else {
        int slot = live[i++];
        blocks.add(
            new SegmentLayout.Block(
                offsetOf(slot), allocatedOf(slot), requestedOf(slot), SegmentLayout.State.ACTIVE_ALLOCATED));
      }
    }
    return blocks;
  }
}

package kvsim.alloc.buddy;

import java.util.ArrayList;
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
import kvsim.core.Bytes;
import kvsim.devicemodel.Region;

/**
 * The binary buddy allocator (Knowlton, "A Fast Storage Allocator", CACM 1965; Knuth, TAOCP vol. 1
 * §2.5), the contiguous baseline that the vLLM paper (Kwon et al., "Efficient Memory Management for
 * Large Language Model Serving with PagedAttention", SOSP 2023) gives its Orca baselines: a request
 * gets one block of the next power of two, so it wastes up to half of it.
 *
 * <ul>
 *   <li>Blocks are powers of two from the minimum block (option {@code min-block}, default 2 MiB,
 *       itself a power of two); a block of order k holds {@code min-block × 2^k} bytes.
 *   <li>The region is covered by top-level blocks, lowest address first: each is the largest power
 *       of two that fits in what is left of the region (Note [Top-level blocks]). A tail shorter than
 *       the minimum block is reserved but never handed out, and not counted as free.
 *   <li>A request is rounded up to the next power of two of at least the minimum block; the block
 *       is what the allocation holds ({@code allocatedBytes} includes the rounding). Requests are
 *       never split into several blocks.
 *   <li>It takes the smallest free block that holds the rounded size, the lowest-address one among
 *       free blocks of that order, and halves it until it has the rounded size; each split frees the
 *       upper half (the low half is split on or handed out).
 *   <li>A free merges the block with its buddy (the other half of the block it was split from)
 *       while the buddy is free and whole, up to the top-level block; buddies of different top-level
 *       blocks never merge. So no two free buddies are ever left apart.
 *   <li>Refusals: {@code too_large} when the rounded size exceeds the largest top-level block;
 *       {@code fragmentation} when the free bytes could hold the rounded size but no free block does;
 *       {@code no_memory} otherwise.
 *   <li>Freeing a handle that is not live is an error; a handle names one allocation only.
 *   <li>Every operation is O(orders × log64 blocks): a bitmap per order finds its lowest free block
 *       (Note [Free bitmaps]), and a mask of non-empty orders finds the smallest order that fits.
 * </ul>
 *
 * <p>Note [Top-level blocks]: with the region holding {@code units} minimum blocks (its size
 * divided by the minimum block, rounded down), the top-level blocks are the set bits of {@code
 * units}, largest first from the region's base: one of order t for each bit t. Each starts at the
 * sum of the larger ones, a multiple of its own size, so every block is aligned to its size
 * relative to the region's base, and two blocks are buddies exactly when their positions differ in
 * bit k alone. The top-level block that holds minimum block u is the one of the highest bit in
 * which u and {@code units} differ (where units has a 1 and u a 0), which takes one instruction to
 * find. This layout was chosen over one power-of-two arena rounded down (which would leave up to
 * half of the region unused) and over top-level blocks smallest first (which would misalign every
 * block after the first).
 *
 * <p>Note [Free bitmaps]: the free blocks of order k are a bitmap over the positions {@code 0 ..
 * units / 2^k}, with a summary bit per 64-bit word above it, so that the lowest free block is found
 * by reading one word per level. A mask with bit k set when order k has a free block finds the
 * smallest order that fits with one count of trailing zeros, and gives {@link #largestFreeBytes()}
 * in O(1). The bitmaps take about two bits per minimum block, so the region may hold at most
 * {@value #MAX_UNITS} minimum blocks.
 *
 * <p>Latency defaults: 30 ns per allocation and per free (the lookups in the order mask and one
 * bitmap), plus 20 ns per split or merge (an unlink and a link in the free lists of host memory,
 * a few tens of ns each when cache-resident). These are estimates in line with the other models,
 * not measurements; a calibration file replaces them.
 *
 * <p>Handles and the live allocations are {@link AllocationSlots} (its Note [Handles]), which also
 * checks that free blocks and allocations tile the region (its Note [Tiling]).
 */
public final class BuddyAllocator implements Allocator {
  /** Registry name. */
  public static final String NAME = "buddy";

  /** Default latencies: 30 ns per call plus 20 ns per split or merge (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(30, 20, 30, 20, 0, 0);

  /** Default minimum block: 2 MiB, the large-page size of GPU virtual memory (as the slab model's block). */
  public static final long DEFAULT_MIN_BLOCK_BYTES = 2 * Bytes.MiB;

  /** The most minimum blocks a region may hold: the free bitmaps then take about 64 MiB. */
  public static final long MAX_UNITS = 1L << 28;

  private final Region region;
  private final long minBlockBytes;
  private final int minShift; // log2(minBlockBytes)
  private final long units; // minimum blocks in the region
  private final int topOrder; // order of the largest top-level block; -1 when there is none
  private final LatencyModel latency;
  private final BlockBitmap[] freeByOrder;
  private final AllocationSlots slots;
  private long nonEmptyOrders; // bit k set when order k has a free block
  private long freeBlockBytes;
  private long splits;
  private long merges;

  // Gauges: exact and O(1); reserved bytes are the region's size.
  private final AllocatorStats stats;

  /** Builds the model from its registry context (option {@code min-block}). */
  public BuddyAllocator(AllocatorContext context) {
    this(context.region(), minBlockOf(context), context.latency(DEFAULT_LATENCY));
  }

  private static long minBlockOf(AllocatorContext context) {
    String given = context.optional("min-block");
    long minBlock = context.bytes("min-block", DEFAULT_MIN_BLOCK_BYTES);
    String problem = problemWith(context.region(), minBlock);
    if (problem == null && given != null && context.region().sizeBytes() > 0 && context.region().sizeBytes() < minBlock) {
      // A model over such a region refuses every request; as an option it is a mistake.
      problem = "is larger than the region under test (" + Bytes.format(context.region().sizeBytes()) + "), which then holds no block";
    }
    if (problem != null) {
      throw context.bad("min-block", given == null ? Long.toString(minBlock) : given, problem);
    }
    return minBlock;
  }

  /** Returns why {@code minBlockBytes} cannot serve {@code region}, or null. */
  private static String problemWith(Region region, long minBlockBytes) {
    if (minBlockBytes <= 0 || Long.bitCount(minBlockBytes) != 1) {
      return "must be a power of two";
    }
    long units = region.sizeBytes() / minBlockBytes;
    if (units > MAX_UNITS) {
      return "the region of " + Bytes.format(region.sizeBytes()) + " holds " + units + " blocks of it, more than "
          + MAX_UNITS + "; use a larger min-block";
    }
    return null;
  }

  /** Builds a buddy allocator over {@code region} with blocks from {@code minBlockBytes} (a power of two). */
  public BuddyAllocator(Region region, long minBlockBytes) {
    this(region, minBlockBytes, DEFAULT_LATENCY);
  }

  /** As {@link #BuddyAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public BuddyAllocator(Region region, long minBlockBytes, LatencyModel latency) {
    String problem = problemWith(region, minBlockBytes);
    if (problem != null) {
      throw new IllegalArgumentException("min-block " + minBlockBytes + ": " + problem);
    }
    this.region = region;
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    this.minBlockBytes = minBlockBytes;
    this.minShift = Long.numberOfTrailingZeros(minBlockBytes);
    this.units = region.sizeBytes() / minBlockBytes;
    this.topOrder = 63 - Long.numberOfLeadingZeros(units);
    this.latency = latency;
    this.freeByOrder = new BlockBitmap[topOrder + 1];
    for (int k = 0; k <= topOrder; k++) {
      freeByOrder[k] = new BlockBitmap((int) (units >>> k));
    }
    this.slots = new AllocationSlots(1024);
    // Note [Top-level blocks]: one free block per set bit of units, largest first.
    for (int t = topOrder; t >= 0; t--) {
      if ((units & (1L << t)) != 0) {
        long start = units & -(2L << t); // the bits above t: the larger blocks before this one
        addFree(t, (int) (start >>> t));
      }
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Returns the size of the smallest block. */
  public long minBlockBytes() {
    return minBlockBytes;
  }

  /** Returns the size of the largest top-level block, 0 when the region holds no minimum block. */
  public long largestTopBlockBytes() {
    return topOrder < 0 ? 0 : minBlockBytes << topOrder;
  }

  private void addFree(int order, int position) {
    freeByOrder[order].set(position);
    nonEmptyOrders |= 1L << order;
    freeBlockBytes += minBlockBytes << order;
  }

  private void removeFree(int order, int position) {
    BlockBitmap free = freeByOrder[order];
    free.clear(position);
    if (free.count() == 0) {
      nonEmptyOrders &= ~(1L << order);
    }
    freeBlockBytes -= minBlockBytes << order;
  }

  /** Returns the order of the top-level block that holds minimum block {@code unit} (Note [Top-level blocks]). */
  private int topOrderOf(long unit) {
    return 63 - Long.numberOfLeadingZeros(unit ^ units);
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (size > largestTopBlockBytes()) {
      // Tested before rounding, which could overflow for sizes near Long.MAX_VALUE.
      stats.addModelledNanos(latency.allocNanos(0));
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    int order = orderOf(size);
    long fits = nonEmptyOrders >>> order;
    if (fits == 0) {
      stats.addModelledNanos(latency.allocNanos(0));
      long rounded = minBlockBytes << order;
      long freeNow = freeBytes();
      OomReason reason = freeNow >= rounded ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
      return new AllocOutcome.OutOfMemory(reason, size, freeNow, largestFreeBytes());
    }
    int k = order + Long.numberOfTrailingZeros(fits);
    int position = freeByOrder[k].lowest();
    removeFree(k, position);
    int levels = k - order;
    while (k > order) {
      k--;
      position <<= 1;
      addFree(k, position + 1); // the upper half stays free, the lower half is split on or handed out
    }
    splits += levels;
    stats.addModelledNanos(latency.allocNanos(levels));
    long bytes = minBlockBytes << order;
    long at = region.baseBytes() + ((long) position << (minShift + order));
    long handle = slots.add(at, bytes, size);
    stats.onAlloc(size, bytes);
    return new AllocOutcome.Allocated(handle, bytes, Extents.single(at, bytes));
  }

  /** Returns the order of the block for a request of at most the largest top-level block. */
  private int orderOf(long sizeBytes) {
    int log2 = 64 - Long.numberOfLeadingZeros(sizeBytes - 1); // ceil(log2(size)), 0 for 1 B
    return Math.max(0, log2 - minShift);
  }

  @Override
  public void free(long handle) {
    int slot = slots.slotOf(handle, NAME);
    long at = slots.offsetOf(slot);
    long bytes = slots.allocatedOf(slot);
    int order = Long.numberOfTrailingZeros(bytes) - minShift;
    int position = (int) ((at - region.baseBytes()) >>> (minShift + order));
    int top = topOrderOf((long) position << order);
    int levels = 0;
    while (order < top && freeByOrder[order].get(position ^ 1)) {
      removeFree(order, position ^ 1);
      position >>>= 1;
      order++;
      levels++;
    }
    addFree(order, position);
    merges += levels;
    stats.addModelledNanos(latency.freeNanos(levels));
    stats.onFree(slots.requestedOf(slot), bytes);
    slots.release(slot);
  }

  @Override
  public Extents extentsOf(long handle) {
    int slot = slots.slotOf(handle, NAME);
    return Extents.single(slots.offsetOf(slot), slots.allocatedOf(slot));
  }

  /** Returns the bytes in free blocks; the tail shorter than a minimum block is not among them. */
  @Override
  public long freeBytes() {
    return freeBlockBytes;
  }

  /** Returns the size of the largest free block. */
  @Override
  public long largestFreeBytes() {
    return nonEmptyOrders == 0 ? 0 : minBlockBytes << (63 - Long.numberOfLeadingZeros(nonEmptyOrders));
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  /**
   * Returns {@code free_blocks} (free blocks of all orders), {@code splits} and {@code merges}
   * (halvings and buddy merges so far).
   */
  @Override
  public Map<String, Long> extraMetrics() {
    long blocks = 0;
    for (BlockBitmap free : freeByOrder) {
      blocks += free.count();
    }
    return Map.of("free_blocks", blocks, "splits", splits, "merges", merges);
  }

  @Override
  public void checkInvariants() {
    long freeFound = 0;
    long orders = 0;
    List<long[]> freeBlocks = new ArrayList<>();
    for (int k = 0; k <= topOrder; k++) {
      BlockBitmap free = freeByOrder[k];
      free.checkInvariants(NAME, "free bitmap of order " + k);
      if (free.count() > 0) {
        orders |= 1L << k;
      }
      for (int position : free.members()) {
        long unit = (long) position << k;
        int top = topOrderOf(unit);
        if (k > top) {
          throw new InvariantViolation(
              NAME, "free block of order " + k + " at block " + unit + " lies in a top-level block of order " + top);
        }
        if (k < top && free.get(position ^ 1)) {
          throw new InvariantViolation(
              NAME, "free buddies of order " + k + " at blocks " + unit + " and " + ((long) (position ^ 1) << k) + " were not merged");
        }
        freeFound += minBlockBytes << k;
        freeBlocks.add(new long[] {region.baseBytes() + (unit << minShift), minBlockBytes << k});
      }
    }
    if (orders != nonEmptyOrders || freeFound != freeBlockBytes) {
      throw new InvariantViolation(
          NAME, "free bitmaps hold " + freeFound + " B in orders " + Long.toBinaryString(orders) + ", counters say "
              + freeBlockBytes + " B in " + Long.toBinaryString(nonEmptyOrders));
    }
    long usable = units * minBlockBytes;
    if (freeBlockBytes + stats.allocatedBytes() != usable) {
      throw new InvariantViolation(
          NAME, "bytes do not balance: " + freeBlockBytes + " free + " + stats.allocatedBytes() + " allocated != " + usable + " usable");
    }
    long allocated = 0;
    long requested = 0;
    int live = 0;
    for (int slot = 0; slot < slots.slotsUsed(); slot++) {
      if (!slots.isLive(slot)) {
        continue;
      }
      long bytes = slots.allocatedOf(slot);
      long offset = slots.offsetOf(slot);
      long asked = slots.requestedOf(slot);
      checkAllocation(offset, bytes, asked);
      allocated += bytes;
      requested += asked;
      live++;
    }
    stats.check(NAME, region.sizeBytes(), allocated, requested, live);
    slots.checkInvariants(NAME);
    long[] offsets = freeBlocks.stream().mapToLong(b -> b[0]).toArray();
    long[] sizes = freeBlocks.stream().mapToLong(b -> b[1]).toArray();
    slots.checkTiling(NAME, region.baseBytes(), region.baseBytes() + usable, offsets, sizes, offsets.length);
  }

  /** Checks that a live allocation is the block its request rounds to, inside one top-level block and aligned in it. */
  private void checkAllocation(long offset, long bytes, long asked) {
    if (asked <= 0 || asked > bytes || bytes < minBlockBytes || Long.bitCount(bytes) != 1 || orderOf(asked) != orderOf(bytes)) {
      throw new InvariantViolation(NAME, "allocation at " + offset + " holds " + bytes + " B for " + asked + " B");
    }
    long relative = offset - region.baseBytes();
    if (relative < 0 || relative % minBlockBytes != 0 || relative / minBlockBytes >= units) {
      throw new InvariantViolation(NAME, "allocation at " + offset + " does not start at a block of the region");
    }
    long unit = relative >>> minShift;
    int top = topOrderOf(unit);
    long topStart = units & -(2L << top); // Note [Top-level blocks]
    int order = Long.numberOfTrailingZeros(bytes) - minShift;
    if (order > top || ((unit - topStart) & ((1L << order) - 1)) != 0) {
      throw new InvariantViolation(
          NAME, "allocation at " + offset + " of " + bytes + " B is not aligned to its size in its top-level block");
    }
  }

  @Override
  public List<SegmentLayout> layout() {
    List<long[]> freeBlocks = new ArrayList<>();
    for (int k = 0; k <= topOrder; k++) {
      for (int position : freeByOrder[k].members()) {
        freeBlocks.add(new long[] {region.baseBytes() + ((long) position << (minShift + k)), minBlockBytes << k});
      }
    }
    freeBlocks.sort((a, b) -> Long.compare(a[0], b[0]));
    long[] offsets = freeBlocks.stream().mapToLong(b -> b[0]).toArray();
    long[] sizes = freeBlocks.stream().mapToLong(b -> b[1]).toArray();
    List<SegmentLayout.Block> blocks = new ArrayList<>(slots.blocksWith(offsets, sizes, offsets.length));
    long usableEnd = region.baseBytes() + units * minBlockBytes;
    if (usableEnd < region.endBytes()) {
      blocks.add(new SegmentLayout.Block(usableEnd, region.endBytes() - usableEnd, 0, SegmentLayout.State.INACTIVE));
    }
    return List.of(new SegmentLayout(region.baseBytes(), region.sizeBytes(), "region", 0, false, blocks));
  }
}

package kvsim.alloc.slab;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.support.FixedBlockPool;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.devicemodel.Region;

/**
 * A slab allocator with one block size, the baseline of the slab-allocator literature (Bonwick's
 * slab idea reduced to one size class, as GPU KV-cache papers use it).
 *
 * <ul>
 *   <li>The region is cut into {@code floor(region / block-size)} equal blocks (default 2 MiB); a
 *       tail shorter than a block is reserved but never handed out.
 *   <li>Free blocks sit on a LIFO stack; at the start the lowest address is on top. Allocation pops,
 *       free pushes the allocation's blocks back in chain order (its last block ends on top). O(1)
 *       per block.
 *   <li>A splittable request takes {@code ceil(size / block)} blocks (not necessarily adjacent); an
 *       unsplittable request larger than a block is {@code too_large}.
 *   <li>Freeing a handle that is not live is an error (double free).
 * </ul>
 *
 * <p>Latency defaults: 20 ns per call plus 10 ns per block popped or pushed (a cache-resident stack
 * operation, as slab papers report tens of ns).
 *
 * <p>The blocks, the stack and the chains are {@link FixedBlockPool}, which the multi-slab model
 * shares; this class adds the request rules above.
 */
public final class SlabAllocator implements Allocator {
  /** Default latencies: 20 ns per call plus 10 ns per block (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(20, 10, 20, 10, 0, 0);

  /** Default block size: 2 MiB, the large-page size of GPU virtual memory. */
  public static final long DEFAULT_BLOCK_BYTES = 2 * Bytes.MiB;

  private final Region region;
  private final long blockBytes;
  private final LatencyModel latency;
  private final FixedBlockPool blocks;
  private final AllocatorStats stats;

  /** Builds the model from its registry context (option {@code block-size}). */
  public SlabAllocator(AllocatorContext context) {
    this(context.region(), blockBytesOf(context), context.latency(DEFAULT_LATENCY));
  }

  /** Reads option {@code block-size}: the region under test must hold at least one block and not more than a pool can count. */
  private static long blockBytesOf(AllocatorContext context) {
    String given = context.optional("block-size");
    long blockBytes = context.bytes("block-size", DEFAULT_BLOCK_BYTES);
    String problem = FixedBlockPool.problemWith(context.region().sizeBytes(), blockBytes, "the region under test", "block-size");
    if (problem == null) {
      return blockBytes;
    }
    if (given != null) {
      throw context.bad("block-size", given, problem);
    }
    throw new InputException("slab: " + problem);
  }

  /** Builds a slab over {@code region} with blocks of {@code blockBytes}. */
  public SlabAllocator(Region region, long blockBytes) {
    this(region, blockBytes, DEFAULT_LATENCY);
  }

  /** As {@link #SlabAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public SlabAllocator(Region region, long blockBytes, LatencyModel latency) {
    this.region = region;
    this.blockBytes = blockBytes;
    this.latency = latency;
    this.blocks =
        new FixedBlockPool(region.baseBytes(), blockBytes, FixedBlockPool.blockCountFor(region.sizeBytes(), blockBytes));
    this.stats = AllocatorStats.reserving(region.sizeBytes());
  }

  @Override
  public String name() {
    return "slab";
  }

  /** Returns the block size. */
  public long blockBytes() {
    return blockBytes;
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (!request.splittable() && size > blockBytes) {
      stats.addModelledNanos(latency.allocNanos(0));
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    // size > freeBytes() first: the same refusal as too few blocks, without overflow in ceilDiv.
    if (size > freeBytes() || Bytes.ceilDiv(size, blockBytes) > blocks.freeBlocks()) {
      stats.addModelledNanos(latency.allocNanos(0));
      return AllocOutcome.OutOfMemory.classify(size, freeBytes(), largestFreeBytes());
    }
    int n = (int) Bytes.ceilDiv(size, blockBytes);
    int head = blocks.take(n, size);
    stats.onAlloc(size, n * blockBytes);
    stats.addModelledNanos(latency.allocNanos(n));
    return new AllocOutcome.Allocated(head, n * blockBytes, blocks.extentsOf(head));
  }

  @Override
  public void free(long handle) {
    int head = checkedHead(handle);
    long requested = blocks.requestedOf(head);
    int n = blocks.release(head);
    stats.onFree(requested, n * blockBytes);
    stats.addModelledNanos(latency.freeNanos(n));
  }

  private int checkedHead(long handle) {
    if (!blocks.isHead(handle)) {
      throw new AllocatorMisuseException("slab: handle " + handle + " is not a live allocation (double free?)");
    }
    return (int) handle;
  }

  @Override
  public Extents extentsOf(long handle) {
    return blocks.extentsOf(checkedHead(handle));
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  @Override
  public long freeBytes() {
    return (long) blocks.freeBlocks() * blockBytes;
  }

  @Override
  public long largestFreeBytes() {
    return (long) blocks.freeBlocks() * blockBytes;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public void checkInvariants() {
    blocks.checkInvariants(name());
    stats.check(name(), region.sizeBytes(), blocks.allocatedBlocks() * blockBytes, blocks.requestedBytes(), blocks.liveAllocations());
  }

  @Override
  public List<SegmentLayout> layout() {
    List<SegmentLayout.Block> layoutBlocks = new ArrayList<>(blocks.blockCount() + 1);
    blocks.appendLayout(layoutBlocks);
    long tail = region.endBytes() - blocks.endBytes();
    if (tail > 0) {
      layoutBlocks.add(new SegmentLayout.Block(blocks.endBytes(), tail, 0, SegmentLayout.State.INACTIVE));
    }
    return List.of(
        new SegmentLayout(region.baseBytes(), region.sizeBytes(), "slab-" + blockBytes, 0, false, layoutBlocks));
  }
}

package kvsim.alloc.slab;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;
import kvsim.gpu.Region;

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
 */
public final class SlabAllocator implements Allocator {
  /** Default block size: 2 MiB, the large-page size of GPU virtual memory. */
  public static final long DEFAULT_BLOCK_BYTES = 2 * Bytes.MiB;

  private static final byte FREE = 0;
  private static final byte HEAD = 1;
  private static final byte MEMBER = 2;

  private final Region region;
  private final long blockBytes;
  private final int blockCount;
  private final LatencyModel latency;

  private final int[] freeStack;
  private int freeCount;
  private final int[] next; // chain of an allocation's blocks, -1 at the end
  private final byte[] state;
  private final long[] requestedOfHead;
  private final int[] lengthOfHead;

  private long allocatedBlocks;
  private long requestedBytes;
  private long liveAllocations;
  private long modelledNanos;

  /** Builds the model from its registry context (option {@code block-size}). */
  public SlabAllocator(AllocatorContext context) {
    this(context.region(), context.bytes("block-size", DEFAULT_BLOCK_BYTES));
  }

  /** Builds a slab over {@code region} with blocks of {@code blockBytes}. */
  public SlabAllocator(Region region, long blockBytes) {
    if (blockBytes <= 0) {
      throw new IllegalArgumentException("block size must be positive");
    }
    long count = region.sizeBytes() / blockBytes;
    if (count > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("too many blocks: " + count + "; use a larger block size");
    }
    this.region = region;
    this.blockBytes = blockBytes;
    this.blockCount = (int) count;
    this.latency = new LatencyModel(20, 10, 20, 10, 0, 0);
    this.freeStack = new int[blockCount];
    this.next = new int[blockCount];
    this.state = new byte[blockCount];
    this.requestedOfHead = new long[blockCount];
    this.lengthOfHead = new int[blockCount];
    for (int i = 0; i < blockCount; i++) {
      freeStack[i] = blockCount - 1 - i; // block 0 on top
    }
    freeCount = blockCount;
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
      modelledNanos += latency.allocNanos(0);
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    long needed = Bytes.ceilDiv(size, blockBytes);
    if (needed > freeCount) {
      modelledNanos += latency.allocNanos(0);
      return AllocOutcome.OutOfMemory.classify(size, freeBytes(), largestFreeBytes());
    }
    int n = (int) needed;
    Extents.Builder extents = new Extents.Builder(n == 1 ? 1 : 4);
    int head = freeStack[--freeCount];
    state[head] = HEAD;
    extents.add(region.baseBytes() + head * blockBytes, blockBytes);
    int prev = head;
    for (int i = 1; i < n; i++) {
      int b = freeStack[--freeCount];
      state[b] = MEMBER;
      next[prev] = b;
      extents.add(region.baseBytes() + b * blockBytes, blockBytes);
      prev = b;
    }
    next[prev] = -1;
    requestedOfHead[head] = size;
    lengthOfHead[head] = n;
    allocatedBlocks += n;
    requestedBytes += size;
    liveAllocations++;
    modelledNanos += latency.allocNanos(n);
    return new AllocOutcome.Allocated(head, n * blockBytes, extents.build());
  }

  @Override
  public void free(long handle) {
    int head = checkedHead(handle);
    int n = 0;
    for (int b = head; b != -1; ) {
      int following = next[b];
      state[b] = FREE;
      next[b] = -1;
      freeStack[freeCount++] = b;
      n++;
      b = following;
    }
    allocatedBlocks -= n;
    requestedBytes -= requestedOfHead[head];
    requestedOfHead[head] = 0;
    lengthOfHead[head] = 0;
    liveAllocations--;
    modelledNanos += latency.freeNanos(n);
  }

  private int checkedHead(long handle) {
    if (handle < 0 || handle >= blockCount || state[(int) handle] != HEAD) {
      throw new AllocatorMisuseException("slab: handle " + handle + " is not a live allocation (double free?)");
    }
    return (int) handle;
  }

  @Override
  public Extents extentsOf(long handle) {
    int head = checkedHead(handle);
    Extents.Builder extents = new Extents.Builder(4);
    for (int b = head; b != -1; b = next[b]) {
      extents.add(region.baseBytes() + b * blockBytes, blockBytes);
    }
    return extents.build();
  }

  @Override
  public long reservedBytes() {
    return region.sizeBytes();
  }

  @Override
  public long allocatedBytes() {
    return allocatedBlocks * blockBytes;
  }

  @Override
  public long requestedBytes() {
    return requestedBytes;
  }

  @Override
  public long freeBytes() {
    return (long) freeCount * blockBytes;
  }

  @Override
  public long largestFreeBytes() {
    return (long) freeCount * blockBytes;
  }

  @Override
  public long liveAllocations() {
    return liveAllocations;
  }

  @Override
  public long modelledNanos() {
    return modelledNanos;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public void checkInvariants() {
    boolean[] seen = new boolean[blockCount];
    for (int i = 0; i < freeCount; i++) {
      int b = freeStack[i];
      if (b < 0 || b >= blockCount) {
        throw new InvariantViolation(name(), "free stack holds block " + b + " outside the slab");
      }
      if (seen[b]) {
        throw new InvariantViolation(name(), "block " + b + " is twice on the free stack");
      }
      if (state[b] != FREE) {
        throw new InvariantViolation(name(), "block " + b + " is on the free stack but allocated");
      }
      seen[b] = true;
    }
    long owned = 0;
    long requested = 0;
    long heads = 0;
    for (int h = 0; h < blockCount; h++) {
      if (state[h] != HEAD) {
        continue;
      }
      heads++;
      requested += requestedOfHead[h];
      int len = 0;
      for (int b = h; b != -1; b = next[b]) {
        if (seen[b]) {
          throw new InvariantViolation(name(), "block " + b + " belongs to two allocations or is also free");
        }
        if (b != h && state[b] != MEMBER) {
          throw new InvariantViolation(name(), "block " + b + " in the chain of " + h + " is not a member");
        }
        seen[b] = true;
        len++;
      }
      if (len != lengthOfHead[h]) {
        throw new InvariantViolation(name(), "allocation " + h + " has " + len + " blocks, expected " + lengthOfHead[h]);
      }
      if (requestedOfHead[h] > (long) len * blockBytes || requestedOfHead[h] <= (long) (len - 1) * blockBytes) {
        throw new InvariantViolation(name(), "allocation " + h + " holds " + len + " blocks for " + requestedOfHead[h] + " B");
      }
      owned += len;
    }
    for (int b = 0; b < blockCount; b++) {
      if (!seen[b]) {
        throw new InvariantViolation(name(), "block " + b + " is neither free nor allocated (leaked)");
      }
    }
    if (owned != allocatedBlocks || owned + freeCount != blockCount) {
      throw new InvariantViolation(
          name(), "bytes do not balance: " + owned + " allocated + " + freeCount + " free blocks != " + blockCount);
    }
    if (requested != requestedBytes || heads != liveAllocations) {
      throw new InvariantViolation(name(), "requested bytes or live count do not match the allocations");
    }
  }

  @Override
  public List<SegmentLayout> layout() {
    long[] requestedOfBlock = new long[blockCount];
    for (int h = 0; h < blockCount; h++) {
      if (state[h] == HEAD) {
        long left = requestedOfHead[h];
        for (int b = h; b != -1; b = next[b]) {
          requestedOfBlock[b] = Math.min(left, blockBytes);
          left -= requestedOfBlock[b];
        }
      }
    }
    List<SegmentLayout.Block> blocks = new ArrayList<>(blockCount + 1);
    for (int b = 0; b < blockCount; b++) {
      SegmentLayout.State s =
          state[b] == FREE ? SegmentLayout.State.INACTIVE : SegmentLayout.State.ACTIVE_ALLOCATED;
      blocks.add(new SegmentLayout.Block(region.baseBytes() + b * blockBytes, blockBytes, requestedOfBlock[b], s));
    }
    long tail = region.sizeBytes() - (long) blockCount * blockBytes;
    if (tail > 0) {
      blocks.add(
          new SegmentLayout.Block(
              region.baseBytes() + (long) blockCount * blockBytes, tail, 0, SegmentLayout.State.INACTIVE));
    }
    return List.of(
        new SegmentLayout(region.baseBytes(), region.sizeBytes(), "slab-" + blockBytes, 0, false, blocks));
  }
}

package kvsim.alloc.support;

import java.util.List;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;

/**
 * Equal blocks laid end to end from a base address, with a LIFO stack of free block indices: the
 * mechanism under the slab models. It decides nothing about which requests come here or how many
 * blocks they need.
 *
 * <ul>
 *   <li>Block {@code i} is [base + i × blockBytes, base + (i + 1) × blockBytes).
 *   <li>At the start every block is free and block 0 is on top of the stack.
 *   <li>{@link #take} pops blocks and chains them in pop order; the first block (the head) names
 *       the allocation. {@link #release} pushes the chain back in chain order, so the allocation's
 *       last block ends on top. Both cost O(1) per block.
 *   <li>The pool keeps the requested bytes and block count of each live allocation, and totals of
 *       allocated blocks, requested bytes and live allocations.
 * </ul>
 *
 * <p>Note [Block arrays]: one {@code int} per block holds its chain link, with {@code FREE} for a
 * free block; the block count and requested bytes are filled for heads only, a block count above 0
 * marking a head. A free thus reads one small array entry per block plus the head's two entries,
 * which matters once the blocks outgrow the processor caches.
 */
public final class FixedBlockPool {
  private static final int FREE = -2; // next[] of a free block
  private static final int END = -1; // next[] of an allocation's last block

  private final long baseBytes;
  private final long blockBytes;
  private final int blockCount;

  private final int[] freeStack;
  private int freeCount;
  private final int[] next; // chain link, END, or FREE
  private final int[] lengthOfHead; // block count, 0 unless the block is a head
  private final long[] requestedOfHead;

  private long allocatedBlocks;
  private long requestedBytes;
  private long liveAllocations;

  /**
   * Returns why {@code lengthBytes} ({@code what}, e.g. "the region under test") cannot be cut into
   * blocks of {@code blockBytes} as an option ({@code option}) asks: no block at all, or more than
   * a pool counts; null when it can.
   */
  public static String problemWith(long lengthBytes, long blockBytes, String what, String option) {
    if (blockBytes <= 0) {
      return "must be positive";
    }
    long count = lengthBytes / blockBytes;
    if (count == 0) {
      return "is larger than " + what + " (" + Bytes.format(lengthBytes) + "), which then holds no block";
    }
    if (count > Integer.MAX_VALUE - 8) {
      return "makes " + count + " blocks of " + what + " (" + Bytes.format(lengthBytes) + "), more than " + (Integer.MAX_VALUE - 8)
          + "; use a larger " + option;
    }
    return null;
  }

  /** Returns how many blocks of {@code blockBytes} fit in {@code lengthBytes}; rejects too many. */
  public static int blockCountFor(long lengthBytes, long blockBytes) {
    if (blockBytes <= 0) {
      throw new IllegalArgumentException("block size must be positive");
    }
    long count = lengthBytes / blockBytes;
    if (count > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("too many blocks: " + count + "; use a larger block size");
    }
    return (int) count;
  }

  /** Creates a pool of {@code blockCount} free blocks of {@code blockBytes} from {@code baseBytes}. */
  public FixedBlockPool(long baseBytes, long blockBytes, int blockCount) {
    if (blockBytes <= 0 || blockCount < 0 || blockCount > Integer.MAX_VALUE - 8 || baseBytes < 0) {
      throw new IllegalArgumentException(
          "bad pool: base " + baseBytes + ", block " + blockBytes + " B, " + blockCount + " blocks");
    }
    // Every block address, up to endBytes(), must be a long; checked once here so that the
    // address arithmetic of take, extentsOf and layout cannot wrap.
    if (blockCount > 0 && blockBytes > (Long.MAX_VALUE - baseBytes) / blockCount) {
      throw new IllegalArgumentException(
          "bad pool: " + blockCount + " blocks of " + blockBytes + " B from " + baseBytes + " end past the largest address");
    }
    this.baseBytes = baseBytes;
    this.blockBytes = blockBytes;
    this.blockCount = blockCount;
    this.freeStack = new int[blockCount];
    this.next = new int[blockCount];
    this.lengthOfHead = new int[blockCount];
    this.requestedOfHead = new long[blockCount];
    for (int i = 0; i < blockCount; i++) {
      freeStack[i] = blockCount - 1 - i; // block 0 on top
      next[i] = FREE;
    }
    freeCount = blockCount;
  }

  /** Returns the first address of block 0. */
  public long baseBytes() {
    return baseBytes;
  }

  /** Returns the first address past the last block. */
  public long endBytes() {
    return baseBytes + (long) blockCount * blockBytes;
  }

  /** Returns the block size. */
  public long blockBytes() {
    return blockBytes;
  }

  /** Returns the number of blocks. */
  public int blockCount() {
    return blockCount;
  }

  /** Returns the number of free blocks. */
  public int freeBlocks() {
    return freeCount;
  }

  /** Returns the number of blocks in live allocations. */
  public long allocatedBlocks() {
    return allocatedBlocks;
  }

  /** Returns the bytes asked for, summed over live allocations. */
  public long requestedBytes() {
    return requestedBytes;
  }

  /** Returns the number of live allocations. */
  public long liveAllocations() {
    return liveAllocations;
  }

  /** Returns the start address of block {@code block}. */
  public long addressOf(int block) {
    return baseBytes + block * blockBytes;
  }

  /** Returns whether {@code index} is the head block of a live allocation. */
  public boolean isHead(long index) {
    return index >= 0 && index < blockCount && lengthOfHead[(int) index] > 0;
  }

  /**
   * Pops {@code blocks} blocks (1 ≤ blocks ≤ {@link #freeBlocks()}) for a request of {@code
   * requestedBytes} and returns the head block.
   */
  public int take(int blocks, long requestedBytes) {
    if (blocks <= 0 || blocks > freeCount) {
      throw new IllegalArgumentException("cannot take " + blocks + " blocks, " + freeCount + " free");
    }
    int head = freeStack[--freeCount];
    int prev = head;
    for (int i = 1; i < blocks; i++) {
      int b = freeStack[--freeCount];
      next[prev] = b;
      prev = b;
    }
    next[prev] = END;
    requestedOfHead[head] = requestedBytes;
    lengthOfHead[head] = blocks;
    allocatedBlocks += blocks;
    this.requestedBytes += requestedBytes;
    liveAllocations++;
    return head;
  }

  /** Pushes a live allocation's blocks back in chain order and returns how many there were. */
  public int release(int head) {
    if (!isHead(head)) {
      throw new IllegalArgumentException("block " + head + " is not the head of a live allocation");
    }
    int n = 0;
    for (int b = head; b != END; ) {
      int following = next[b];
      next[b] = FREE;
      freeStack[freeCount++] = b;
      n++;
      b = following;
    }
    allocatedBlocks -= n;
    requestedBytes -= requestedOfHead[head];
    requestedOfHead[head] = 0;
    lengthOfHead[head] = 0;
    liveAllocations--;
    return n;
  }

  /** Returns the number of blocks of a live allocation. */
  public int lengthOf(int head) {
    return lengthOfHead[head];
  }

  /** Returns the bytes asked for by a live allocation. */
  public long requestedOf(int head) {
    return requestedOfHead[head];
  }

  /** Returns the extents of a live allocation, in chain order, adjacent blocks merged. */
  public Extents extentsOf(int head) {
    if (next[head] == END) {
      return Extents.single(addressOf(head), blockBytes);
    }
    Extents.Builder extents = new Extents.Builder(lengthOf(head));
    for (int b = head; b != END; b = next[b]) {
      extents.add(addressOf(b), blockBytes);
    }
    return extents.build();
  }

  /**
   * Checks the free stack and the chains: every block is free or in exactly one allocation, chain
   * lengths and block counts fit the requested bytes, and the totals balance. Throws {@link
   * InvariantViolation} naming {@code owner} when broken.
   */
  public void checkInvariants(String owner) {
    boolean[] seen = new boolean[blockCount];
    if (freeCount < 0 || freeCount > blockCount) {
      throw new InvariantViolation(owner, "free stack holds " + freeCount + " of " + blockCount + " blocks");
    }
    for (int i = 0; i < freeCount; i++) {
      int b = freeStack[i];
      if (b < 0 || b >= blockCount) {
        throw new InvariantViolation(owner, "free stack holds block " + b + " outside the slab");
      }
      if (seen[b]) {
        throw new InvariantViolation(owner, "block " + b + " is twice on the free stack");
      }
      if (next[b] != FREE || lengthOfHead[b] != 0) {
        throw new InvariantViolation(owner, "block " + b + " is on the free stack but allocated");
      }
      seen[b] = true;
    }
    long owned = 0;
    long requested = 0;
    long heads = 0;
    for (int h = 0; h < blockCount; h++) {
      if (lengthOfHead[h] == 0) {
        continue;
      }
      heads++;
      long requestedByHead = requestedOfHead[h];
      requested += requestedByHead;
      int len = 0;
      for (int b = h; b != END; b = next[b]) {
        if (b < 0 || b >= blockCount) {
          throw new InvariantViolation(owner, "the chain of " + h + " leads to " + b + ", not a block");
        }
        if (seen[b]) {
          throw new InvariantViolation(owner, "block " + b + " belongs to two allocations or is also free");
        }
        if (b != h && lengthOfHead[b] != 0) {
          throw new InvariantViolation(owner, "block " + b + " in the chain of " + h + " is not a member");
        }
        seen[b] = true;
        len++;
      }
      if (len != lengthOfHead[h]) {
        throw new InvariantViolation(owner, "allocation " + h + " has " + len + " blocks, expected " + lengthOfHead[h]);
      }
      if (requestedByHead > (long) len * blockBytes || requestedByHead <= (long) (len - 1) * blockBytes) {
        throw new InvariantViolation(owner, "allocation " + h + " holds " + len + " blocks for " + requestedByHead + " B");
      }
      owned += len;
    }
    for (int b = 0; b < blockCount; b++) {
      if (!seen[b]) {
        throw new InvariantViolation(owner, "block " + b + " is neither free nor allocated (leaked)");
      }
    }
    if (owned != allocatedBlocks || owned + freeCount != blockCount) {
      throw new InvariantViolation(
          owner, "bytes do not balance: " + owned + " allocated + " + freeCount + " free blocks != " + blockCount);
    }
    if (requested != requestedBytes || heads != liveAllocations) {
      throw new InvariantViolation(owner, "requested bytes or live count do not match the allocations");
    }
  }

  /**
   * Appends one layout block per pool block, in address order, each with the share of its
   * allocation's requested bytes that falls in it (filled in chain order).
   */
  public void appendLayout(List<SegmentLayout.Block> out) {
    long[] requestedOfBlock = new long[blockCount];
    for (int h = 0; h < blockCount; h++) {
      if (lengthOfHead[h] > 0) {
        long left = requestedOfHead[h];
        for (int b = h; b != END; b = next[b]) {
          requestedOfBlock[b] = Math.min(left, blockBytes);
          left -= requestedOfBlock[b];
        }
      }
    }
    for (int b = 0; b < blockCount; b++) {
      SegmentLayout.State s =
          next[b] == FREE ? SegmentLayout.State.INACTIVE : SegmentLayout.State.ACTIVE_ALLOCATED;
      out.add(new SegmentLayout.Block(addressOf(b), blockBytes, requestedOfBlock[b], s));
    }
  }
}

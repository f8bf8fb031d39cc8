package kvsim.alloc.paged;

import kvsim.alloc.InvariantViolation;

/**
 * The physical KV blocks of one device: reference counts, block hashes, the hash index and the free
 * structures, after vLLM v1's {@code BlockPool} ({@code vllm/v1/core/block_pool.py} at commit ec5ef0a, with
 * {@code FreeKVCacheBlockQueue} from {@code vllm/v1/core/kv_cache_utils.py}) with the v0 free lists
 * as an alternative (vLLM at commit 1fb9c1b: {@code vllm/core/block/naive_block.py}, {@code
 * vllm/core/block/prefix_caching_block.py} and {@code vllm/core/evictor_v2.py}).
 *
 * <p>v1 ({@link Kind#V1}):
 *
 * <ul>
 *   <li>Block ids run from 0 to N−1; block 0 is popped at construction and kept as the null block,
 *       never freed, never cached, never counted as free ({@code BlockPool}'s constructor).
 *   <li>One {@link FreeBlockQueue} holds every other block whose reference count is zero, never
 *       used and cached-but-unreferenced alike ({@code FreeKVCacheBlockQueue}).
 *   <li>Allocation pops from the head; a popped block that still holds a hash is evicted then and
 *       only then: its index entry is removed and its hash cleared (lazy eviction, {@code get_new_blocks}).
 *   <li>A hit on a free block unlinks it from the middle of the queue ({@code touch}).
 *   <li>{@link #freeBlocks} decrements every block's count first, then appends those that reached
 *       zero to the tail in the order given ({@code BlockPool.free_blocks}).
 * </ul>
 *
 * <p>v0 ({@link Kind#V0_LIFO}, {@link Kind#V0_FIFO}), after {@code BlockSpaceManagerV2}:
 *
 * <ul>
 *   <li>No null block: ids 0 … N−1 are all usable.
 *   <li>Hashless free blocks sit in a deque, ascending at the start. Allocation takes the front; a
 *       freed hashless block returns to the front (LIFO, v0's naive allocator) or the back (FIFO).
 *   <li>Cached blocks with no references sit in the {@link LruEvictor}. Allocation takes a hashless
 *       block first and evicts only when none is left (v0's prefix-caching allocator).
 *   <li>Every touch and every release stamps the block's last-access time with the pool clock.
 * </ul>
 *
 * <p>Block hashes are 128-bit values from {@link BlockHasher}, or caller-supplied ids; a block holds
 * one only while it is in the hash index.
 */
final class BlockPool {
  /** Which free structures the pool keeps. */
  enum Kind {
    /** vLLM v1: one free queue, null block 0. */
    V1,
    /** vLLM v0: free deque reused front first (a freed block is reused first), LRU evictor. */
    V0_LIFO,
    /** vLLM v0 evictor with a first-in first-out free deque. */
    V0_FIFO
  }

  private final String name;
  private final int numBlocks;
  private final boolean caching;
  private final Kind kind;
  private final int nullBlock;

  private final int[] refCnt;
  /** Block hashes, interleaved: block {@code b}'s high half at {@code 2b}, low half at {@code 2b + 1}; the index reads them too. */
  private final long[] hashes;
  private final boolean[] hashed;
  private final int[] hashedTokens;
  private final long[] lastAccessed;
  private final BlockHashIndex index;

  private final FreeBlockQueue queue;
  private final IntDeque fresh;
  private final LruEvictor evictor;

  private long now;
  private long evictionCount;

  /** Builds a pool of {@code numBlocks} blocks; {@code name} prefixes invariant failures. */
  BlockPool(String name, int numBlocks, boolean caching, Kind kind) {
    int minimum = kind == Kind.V1 ? 2 : 1;
    if (numBlocks < minimum) {
      throw new IllegalArgumentException(
          "a " + (kind == Kind.V1 ? "v1" : "v0") + " pool needs at least " + minimum + " blocks, got " + numBlocks);
    }
    this.name = name;
    this.numBlocks = numBlocks;
    this.caching = caching;
    this.kind = kind;
    this.refCnt = new int[numBlocks];
    this.hashes = new long[2 * numBlocks];
    this.hashed = new boolean[numBlocks];
    this.hashedTokens = new int[numBlocks];
    this.lastAccessed = new long[numBlocks];
    this.index = new BlockHashIndex(numBlocks, hashes);
    if (kind == Kind.V1) {
      queue = new FreeBlockQueue(numBlocks);
      nullBlock = queue.popLeft();
      fresh = null;
      evictor = null;
    } else {
      queue = null;
      nullBlock = -1;
      fresh = new IntDeque(numBlocks);
      for (int b = 0; b < numBlocks; b++) {
        fresh.addLast(b);
      }
      evictor = new LruEvictor(lastAccessed, hashedTokens);
    }
  }

  /** Returns N, the null block included. */
  private BlockListener listener;

  int numBlocks() {
    return numBlocks;
  }

  /** Returns the null block's id, or -1 when the pool has none (v0). */
  int nullBlock() {
    return nullBlock;
  }

  /** Returns the blocks that can ever be handed out. */
  int usableBlocks() {
    return nullBlock >= 0 ? numBlocks - 1 : numBlocks;
  }

  /** Returns the pool's free-structure kind. */
  Kind kind() {
    return kind;
  }

  /** Returns whether prefix caching is on. */
  boolean cachingEnabled() {
    return caching;
  }

  /** Whether eviction reads the blocks' access times (an LRU evictor, v0's pool). */
  boolean readsAccessTimes() {
    return evictor != null;
  }

  /** Sets the logical clock used for v0 last-access stamps. */
  void setNow(long now) {
    this.now = now;
  }

  /** Returns the blocks with no references (cached-but-unreferenced included). */
  int numFreeBlocks() {
    return queue != null ? queue.size() : fresh.size() + evictor.size();
  }

  /** Returns the blocks that hold a hash (are in the hash index). */
  int numCachedBlocks() {
    return index.blockCount();
  }

  /** Returns the evictions performed so far. */
  long evictionCount() {
    return evictionCount;
  }

  /** Returns a block's reference count. */
  int refCnt(int block) {
    return refCnt[block];
  }

  /** Returns whether a block holds a hash. */
  boolean hasHash(int block) {
    return hashed[block];
  }

  /** Returns the high 64 bits of a block's hash. */
  long hashHi(int block) {
    return hashes[2 * block];
  }

  /** Returns the low 64 bits of a block's hash. */
  long hashLo(int block) {
    return hashes[2 * block + 1];
  }

  /** Returns the tokens from the start of the sequence to the end of a cached block. */
  int hashedTokens(int block) {
    return hashedTokens[block];
  }

  /** Returns a block's last-access stamp (v0). */
  long lastAccessed(int block) {
    return lastAccessed[block];
  }

  /** Returns the first inserted block holding this hash, or -1. */
  int lookup(long hi, long lo) {
    return index.get(hi, lo);
  }

  /**
   * Pops {@code n} blocks for allocation, evicting cached ones as they are popped ({@code get_new_blocks}), and
   * appends them to {@code out}, the evicted ones to {@code evicted}.
   */
  void getNewBlocks(int n, IntList out, IntList evicted) {
    if (n > numFreeBlocks()) {
      throw new IllegalStateException("cannot get " + n + " free blocks from the pool (" + numFreeBlocks() + " free)");
    }
    for (int i = 0; i < n; i++) {
      out.add(popBlock(evicted));
    }
  }

  /** Pops one block for allocation; see {@link #getNewBlocks}. */
  int popBlock(IntList evicted) {
    int b;
    if (queue != null) {
      b = queue.popLeft();
      if (hashed[b]) {
        evict(b, evicted);
      }
    } else if (fresh.size() > 0) {
      b = fresh.pollFirst();
    } else {
      b = evictor.evict();
      evict(b, evicted);
    }
    if (refCnt[b] != 0) {
      throw new IllegalStateException("popped block " + b + " has references");
    }
    refCnt[b] = 1;
    if (listener != null) {
      listener.taken(b);
    }
    if (queue == null) {
      lastAccessed[b] = now; // only v0's LRU evictor reads access times
    }
    return b;
  }

  private void evict(int b, IntList evicted) {
    index.remove(b); // before the hash is cleared: the index reads it
    hashed[b] = false;
    hashes[2 * b] = 0;
    hashes[2 * b + 1] = 0;
    hashedTokens[b] = 0;
    evictionCount++;
    if (evicted != null) {
      evicted.add(b);
    }
  }

  /** Adds a reference to a block, taking it out of the free structures if it had none. */
  void touch(int b) {
    if (b == nullBlock) {
      return;
    }
    if (refCnt[b] == 0) {
      if (queue != null) {
        queue.remove(b);
      } else if (hashed[b]) {
        evictor.remove(b);
      } else {
        throw new IllegalStateException("touch of hashless free block " + b);
      }
      if (listener != null) {
        listener.taken(b);
      }
    }
    refCnt[b]++;
    lastAccessed[b] = now;
  }

  /**
   * Drops one reference from each of {@code blocks[from … to)}, taken in that order or reversed,
   * and returns the blocks that reached zero to the free structures in the same order: all counts
   * are decremented first, then the released blocks are appended ({@code free_blocks}).
   */
  void freeBlocks(int[] blocks, int from, int to, boolean reverse) {
    for (int i = from; i < to; i++) {
      int b = blocks[i];
      if (b == nullBlock) {
        continue;
      }
      if (refCnt[b] <= 0) {
        throw new IllegalStateException("free of block " + b + " with no references");
      }
      refCnt[b]--;
    }
    if (reverse) {
      for (int i = to - 1; i >= from; i--) {
        releaseIfUnreferenced(blocks[i]);
      }
    } else {
      for (int i = from; i < to; i++) {
        releaseIfUnreferenced(blocks[i]);
      }
    }
  }

  /** Drops one reference from a single block (a copy-on-write source, a deduplicated block). */
  void freeBlock(int b) {
    if (b == nullBlock) {
      return;
    }
    if (refCnt[b] <= 0) {
      throw new IllegalStateException("free of block " + b + " with no references");
    }
    refCnt[b]--;
    releaseIfUnreferenced(b);
  }

  private void releaseIfUnreferenced(int b) {
    if (b == nullBlock || refCnt[b] != 0) {
      return;
    }
    if (queue != null) {
      // a block appears once per table, so a second occurrence in one call cannot reach here twice
      if (!queue.contains(b)) {
        queue.append(b);
        released(b);
      }
      return;
    }
    lastAccessed[b] = now;
    if (hashed[b]) {
      if (!evictor.contains(b)) {
        evictor.add(b);
        released(b);
      }
    } else if (kind == Kind.V0_LIFO) {
      fresh.addFirst(b);
      released(b);
    } else {
      fresh.addLast(b);
      released(b);
    }
  }

  private void released(int b) {
    if (listener != null) {
      listener.released(b);
    }
  }

  /** Sets the listener told of every block taken and released (null: none). */
  void listen(BlockListener l) {
    this.listener = l;
  }

  /**
   * Publishes a full block under its hash ({@code cache_full_blocks}): the block must hold no hash yet; a block
   * already holding the same hash stays cached too.
   */
  void cacheBlock(int b, long hi, long lo, int tokensThroughBlock) {
    if (!caching) {
      throw new IllegalStateException("caching is off");
    }
    if (b == nullBlock) {
      throw new IllegalStateException("the null block is never cached");
    }
    if (hashed[b]) {
      throw new IllegalStateException("block " + b + " already holds a hash");
    }
    hashed[b] = true;
    hashes[2 * b] = hi; // before the index reads it
    hashes[2 * b + 1] = lo;
    hashedTokens[b] = tokensThroughBlock;
    index.insert(hi, lo, b);
  }

  /**
   * Clears the hash index and every block hash when no usable block is referenced ({@code reset_prefix_cache});
   * returns false and changes nothing otherwise.
   */
  boolean resetPrefixCache() {
    if (numFreeBlocks() != usableBlocks()) {
      return false;
    }
    if (evictor != null) {
      for (int b : evictor.toArray()) {
        fresh.addLast(b);
      }
      evictor.clear();
    }
    for (int b = 0; b < numBlocks; b++) {
      hashed[b] = false;
      hashes[2 * b] = 0;
      hashes[2 * b + 1] = 0;
      hashedTokens[b] = 0;
    }
    index.clear();
    return true;
  }

  /** Returns the free blocks in the order allocation would take them. */
  int[] freeOrder() {
    if (queue != null) {
      return queue.toArray();
    }
    int[] out = new int[fresh.size() + evictor.size()];
    for (int i = 0; i < fresh.size(); i++) {
      out[i] = fresh.get(i);
    }
    int[] lru = evictor.toArray();
    System.arraycopy(lru, 0, out, fresh.size(), lru.length);
    return out;
  }

  /**
   * Checks the pool against the reference counts the caller derived from its block tables: every
   * usable block is in exactly one of the free structures or referenced, reference counts equal the
   * expected ones, the hash index and the block hashes agree, and the free queue is a proper doubly
   * linked list. Throws {@link InvariantViolation}.
   */
  void checkInvariants(int[] expectedRefCnt) {
    boolean[] inFree = new boolean[numBlocks];
    if (queue != null) {
      fail(queue.check(inFree));
    } else {
      for (int i = 0; i < fresh.size(); i++) {
        int b = fresh.get(i);
        if (b < 0 || b >= numBlocks) {
          fail("free deque holds block " + b + " outside the pool");
        }
        if (inFree[b]) {
          fail("block " + b + " is twice in the free deque");
        }
        if (hashed[b]) {
          fail("block " + b + " in the free deque holds a hash");
        }
        inFree[b] = true;
      }
      int inEvictor = 0;
      for (int b : evictor.toArray()) {
        if (inFree[b]) {
          fail("block " + b + " is in both the free deque and the evictor");
        }
        if (!hashed[b]) {
          fail("block " + b + " is in the evictor without a hash");
        }
        inFree[b] = true;
        inEvictor++;
      }
      if (inEvictor != evictor.size()) {
        fail("evictor size does not match its contents");
      }
    }
    for (int b = 0; b < numBlocks; b++) {
      if (refCnt[b] < 0) {
        fail("block " + b + " has a negative reference count " + refCnt[b]);
      }
      if (b == nullBlock) {
        if (inFree[b] || refCnt[b] != 0 || hashed[b]) {
          fail("the null block is free, referenced or cached");
        }
        continue;
      }
      if (refCnt[b] != expectedRefCnt[b]) {
        fail("block " + b + " has ref_cnt " + refCnt[b] + " but " + expectedRefCnt[b] + " tables hold it");
      }
      if (inFree[b] == (refCnt[b] > 0)) {
        fail(
            "block "
                + b
                + (inFree[b] ? " is free but referenced (ref_cnt " + refCnt[b] + ")" : " is neither free nor referenced"));
      }
      if (!caching && hashed[b]) {
        fail("block " + b + " holds a hash with caching off");
      }
      if (hashed[b] && hashedTokens[b] <= 0) {
        fail("cached block " + b + " covers no tokens");
      }
    }
    boolean[] listed = new boolean[numBlocks];
    fail(index.check(hashed, listed));
    for (int b = 0; b < numBlocks; b++) {
      if (listed[b] != hashed[b]) {
        fail("block " + b + (hashed[b] ? " holds a hash but is not indexed" : " is indexed without a hash"));
      }
    }
  }

  private void fail(String problem) {
    if (problem != null) {
      throw new InvariantViolation(name, problem);
    }
  }
}

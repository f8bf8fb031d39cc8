package kvsim.alloc.paged;

import java.util.Arrays;

/**
 * vLLM v1's {@code BlockHashToBlockMap} ({@code vllm/v1/core/block_pool.py} at commit ec5ef0a):
 * block hash → the cached blocks that hold it.
 *
 * <ul>
 *   <li>Keys are 128-bit block hashes (two longs); see {@link BlockHasher}.
 *   <li>Several blocks may hold the same hash (no deduplication in v1); they are kept in insertion
 *       order and {@link #get} returns the first inserted one still present.
 *   <li>Removing a block removes only its own entry.
 * </ul>
 *
 * <p>Open addressing with linear probing over a power-of-two table at least twice the number of
 * blocks (there are never more keys than blocks), with backward-shift deletion, so no tombstones
 * accumulate. Duplicates form a circular doubly linked list per key through {@code dupNext} and
 * {@code dupPrev}, indexed by block id; the table stores the first block only, whose key is the
 * hash the block itself holds (Note [Keys read from the blocks]), beside its key's home slot (Note
 * [Home slots kept in the table]), and {@code slotOf} remembers, for each first block, the slot it
 * is stored in (Note [Removal without a probe]).
 */
final class BlockHashIndex {
  private static final int EMPTY = -1;
  /** An empty slot of {@code table}; no entry is all ones, since no home slot is -1. */
  private static final long EMPTY_SLOT = -1L;

  /**
   * The blocks' hashes, owned by the pool: block {@code b}'s high half at {@code 2b}, its low half
   * at {@code 2b + 1}; a block's entry must not change while it is in the index.
   */
  private final long[] blockHashes;
  /** Per slot: the home slot of its key in the high half, the key's first block in the low half. */
  private final long[] table;
  /** For a block that is the first of its key, the slot that key sits in; stale for any other block. */
  private final int[] slotOf;
  private final int mask;
  private final int[] dupNext;
  private final int[] dupPrev;
  private int keys;
  private int blocks;

  // Note [Keys read from the blocks]: a serving run inserts and removes a block's hash for almost
  // every block it allocates. The table used to hold each key beside its first block, 20 bytes a
  // slot at twice the blocks: 300 KiB for 7,600 blocks, more than the pool's own arrays, and with
  // them more than a core's L2 cache. A key is always the hash its first block holds, which the
  // pool keeps anyway, so the table holds the block id instead of the key (4 bytes a slot then) and
  // a probe reads the key from the block. The pool writes a block's hash before inserting it and
  // clears it only after removing it, so the key never changes under the index.
  //
  // Note [Home slots kept in the table]: reading a key from its block is a read from another array,
  // at a random place. A backward shift after a removal read the key of every entry after the hole
  // until an empty slot, and hashed it again, to find the entry's home slot; a probe read the key
  // of every entry it passed. So each slot keeps its key's home slot beside the block (8 bytes a
  // slot): the shift reads the homes from the slots it passes, and a probe reads a block's key only
  // where the home slot matches. Removing cached blocks from the index was an eighth of a serving
  // run's engine thread in async-profiler samples (the week's first 90 minutes, vllm) before this,
  // and half that after; insertion took more than before, as the table, twice as large, misses
  // the cache more often. The run as a whole gained a little (about 2%, near the noise).

  // Note [A sparse table]: the table had at least twice as many slots as the pool has blocks (a
  // load of at most a half). On the week's first 90 minutes through vllm (7,598 blocks in 16,384
  // slots; 19.0 M probes, 17.8 M removals) a probe passed 1.23 full slots before it ended, and a
  // removal's backward shift 1.79. At eight slots a block (65,536 slots, 512 KiB) they pass 0.18
  // and 0.22, and the whole run took 0.88 of the time (six interleaved pairs, the same results):
  // each slot passed is a read, and each entry shifted a write into slotOf, at places the cache no
  // longer holds beside the pool's arrays. A larger table is another matter: eight slots a block
  // for JMH's BlockDecodeBenchmark pool of 33,281 blocks (4 MiB instead of 1 MiB) made its decode
  // steps slower in two forks of three. So the sparse table is kept to SPARSE_MAX_SLOTS, the size
  // measured, and a larger pool gets twice its blocks or more, as before.

  /** The most slots a table gets for sparseness alone (Note [A sparse table]): 512 KiB. */
  static final int SPARSE_MAX_SLOTS = 1 << 16;

  /** The table's slots for {@code numBlocks} blocks: a power of two, eight a block up to {@link #SPARSE_MAX_SLOTS}, never fewer than twice the blocks. */
  static int capacity(int numBlocks) {
    int dense = Integer.highestOneBit(Math.max(4, numBlocks) * 2 - 1) << 1;
    long sparse = Long.highestOneBit(Math.max(4L, numBlocks) * 8 - 1) << 1;
    return (int) Math.max(dense, Math.min(sparse, SPARSE_MAX_SLOTS));
  }

  /** Builds an empty index over the hashes of {@code numBlocks} blocks, interleaved in {@code blockHashes}. */
  BlockHashIndex(int numBlocks, long[] blockHashes) {
    if (blockHashes.length < 2 * numBlocks) {
      throw new IllegalArgumentException("hashes of " + blockHashes.length / 2 + " blocks for " + numBlocks);
    }
    int capacity = capacity(numBlocks);
    this.blockHashes = blockHashes;
    table = new long[capacity];
    Arrays.fill(table, EMPTY_SLOT);
    mask = capacity - 1;
    dupNext = new int[numBlocks];
    dupPrev = new int[numBlocks];
    slotOf = new int[numBlocks];
    Arrays.fill(dupNext, EMPTY);
    Arrays.fill(dupPrev, EMPTY);
  }

  private int homeSlot(long hi, long lo) {
    long h = hi ^ (lo * 0x9E3779B97F4A7C15L);
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    return (int) h & mask;
  }

  private static int blockOf(long entry) {
    return (int) entry;
  }

  private static int homeOf(long entry) {
    return (int) (entry >>> 32);
  }

  private static long entry(int home, int block) {
    return (long) home << 32 | block & 0xFFFFFFFFL;
  }

  /** The slot that holds this hash, or {@code -1 - s} where {@code s} is the empty slot it would take. */
  private int find(long hi, long lo) {
    return find(hi, lo, homeSlot(hi, lo));
  }

  /** {@link #find(long, long)} for a hash whose home slot is {@code home}. */
  private int find(long hi, long lo, int home) {
    int s = home;
    long e;
    while ((e = table[s]) != EMPTY_SLOT) {
      if (homeOf(e) == home) {
        int b = blockOf(e);
        if (blockHashes[2 * b] == hi && blockHashes[2 * b + 1] == lo) {
          return s;
        }
      }
      s = (s + 1) & mask;
    }
    return -1 - s;
  }

  /** Returns the first inserted block holding this hash, or -1. */
  int get(long hi, long lo) {
    int s = find(hi, lo);
    return s >= 0 ? blockOf(table[s]) : -1;
  }

  /** Adds {@code block}, which holds this hash already, after any blocks there under it. */
  void insert(long hi, long lo, int block) {
    if (dupNext[block] != EMPTY) {
      throw new IllegalStateException("block " + block + " is already in the hash index");
    }
    if (blockHashes[2 * block] != hi || blockHashes[2 * block + 1] != lo) {
      throw new IllegalStateException("block " + block + " does not hold the hash it is indexed under");
    }
    int home = homeSlot(hi, lo);
    int s = find(hi, lo, home);
    if (s >= 0) {
      int first = blockOf(table[s]);
      int last = dupPrev[first];
      dupNext[last] = block;
      dupPrev[block] = last;
      dupNext[block] = first;
      dupPrev[first] = block;
    } else {
      s = -1 - s;
      table[s] = entry(home, block);
      slotOf[block] = s;
      dupNext[block] = block;
      dupPrev[block] = block;
      keys++;
    }
    blocks++;
  }

  // Note [Removal without a probe]: every block a serving run allocates is, once the cache has
  // filled, a cached block evicted as it leaves the free queue, so removal is as frequent as
  // insertion. It used to probe for the block's key first; the key's slot changes only when the
  // key is inserted, when its first block changes and when a backward shift moves it, so the index
  // keeps it per first block instead. A block that is not first of its key needs no slot: it is
  // only unlinked from its list.

  /** Removes {@code block}, which must still hold the hash it was inserted under, from the index. */
  void remove(int block) {
    int n = dupNext[block];
    if (n == EMPTY) {
      throw new IllegalStateException("block " + block + " is not in the hash index");
    }
    int s = slotOf[block];
    boolean first = blockOf(table[s]) == block;
    if (n == block) {
      deleteSlot(s);
    } else {
      int p = dupPrev[block];
      dupNext[p] = n;
      dupPrev[n] = p;
      if (first) {
        table[s] = entry(homeOf(table[s]), n);
        slotOf[n] = s;
      }
    }
    dupNext[block] = EMPTY;
    dupPrev[block] = EMPTY;
    blocks--;
  }

  private void deleteSlot(int s) {
    table[s] = EMPTY_SLOT;
    keys--;
    int hole = s;
    int i = (s + 1) & mask;
    long e;
    while ((e = table[i]) != EMPTY_SLOT) {
      int home = homeOf(e);
      // move entry i into the hole when its home slot is not in (hole, i] cyclically
      boolean movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
      if (movable) {
        table[hole] = e;
        slotOf[blockOf(e)] = hole;
        table[i] = EMPTY_SLOT;
        hole = i;
      }
      i = (i + 1) & mask;
    }
  }

  /** Returns the number of blocks in the index, duplicates included. */
  int blockCount() {
    return blocks;
  }

  /** Returns the number of distinct hashes. */
  int keyCount() {
    return keys;
  }

  /** Returns whether {@code block} is in the index. */
  boolean contains(int block) {
    return dupNext[block] != EMPTY;
  }

  /** Removes every entry. */
  void clear() {
    Arrays.fill(table, EMPTY_SLOT);
    Arrays.fill(dupNext, EMPTY);
    Arrays.fill(dupPrev, EMPTY);
    keys = 0;
    blocks = 0;
  }

  /**
   * Checks the index against the blocks' own hashes: every entry records its key's home slot, is
   * reachable from it and records its slot, every listed block is marked as hashed and holds its
   * first block's key, the duplicate lists are proper circular lists, and the counts match; marks
   * the listed blocks in {@code listed}. Returns the problem or null.
   */
  String check(boolean[] hashed, boolean[] listed) {
    int seenKeys = 0;
    int seenBlocks = 0;
    for (int s = 0; s <= mask; s++) {
      if (table[s] == EMPTY_SLOT) {
        continue;
      }
      int first = blockOf(table[s]);
      seenKeys++;
      if (first < 0 || first >= dupNext.length) {
        return "index lists block " + first + " outside the pool";
      }
      long keyHi = blockHashes[2 * first];
      long keyLo = blockHashes[2 * first + 1];
      if (homeOf(table[s]) != homeSlot(keyHi, keyLo)) {
        return "hash at slot " + s + " records home slot " + homeOf(table[s]) + ", not its own";
      }
      if (find(keyHi, keyLo) != s) {
        return "hash at slot " + s + " is not reachable from its home slot";
      }
      if (slotOf[first] != s) {
        return "first block " + first + " of the hash at slot " + s + " records slot " + slotOf[first];
      }
      int b = first;
      int steps = 0;
      do {
        if (b < 0 || b >= dupNext.length) {
          return "index lists block " + b + " outside the pool";
        }
        if (listed[b]) {
          return "block " + b + " is listed twice in the hash index";
        }
        listed[b] = true;
        if (!hashed[b] || blockHashes[2 * b] != keyHi || blockHashes[2 * b + 1] != keyLo) {
          return "block " + b + " is indexed under a hash it does not hold";
        }
        if (dupPrev[dupNext[b]] != b) {
          return "duplicate list of block " + b + " is not doubly linked";
        }
        seenBlocks++;
        if (++steps > dupNext.length) {
          return "duplicate list at slot " + s + " does not close";
        }
        b = dupNext[b];
      } while (b != first);
    }
    if (seenKeys != keys || seenBlocks != blocks) {
      return "index counts " + keys + " keys / " + blocks + " blocks but holds " + seenKeys + " / " + seenBlocks;
    }
    for (int b = 0; b < dupNext.length; b++) {
      if (!listed[b] && (dupNext[b] != EMPTY || dupPrev[b] != EMPTY)) {
        return "block " + b + " has duplicate links but is not indexed";
      }
    }
    return null;
  }
}

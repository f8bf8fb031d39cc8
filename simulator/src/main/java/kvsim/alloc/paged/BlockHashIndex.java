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
 * {@code dupPrev}, indexed by block id; the table stores the first block, and {@code slotOf}
 * remembers, for each first block, the slot it is stored in (Note [Removal without a probe]).
 */
final class BlockHashIndex {
  private static final int EMPTY = -1;

  /** The keys, interleaved: slot {@code s} holds its high half at {@code 2s}, its low half at {@code 2s + 1}. */
  private final long[] keyHalves;
  private final int[] firstBlock;
  /** For a block that is the first of its key, the slot that key sits in; stale for any other block. */
  private final int[] slotOf;
  private final int mask;
  private final int[] dupNext;
  private final int[] dupPrev;
  private int keys;
  private int blocks;

  /** Builds an empty index for a pool of {@code numBlocks} blocks. */
  BlockHashIndex(int numBlocks) {
    int capacity = Integer.highestOneBit(Math.max(4, numBlocks) * 2 - 1) << 1;
    keyHalves = new long[2 * capacity];
    firstBlock = new int[capacity];
    Arrays.fill(firstBlock, EMPTY);
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

  private int find(long hi, long lo) {
    int s = homeSlot(hi, lo);
    while (firstBlock[s] != EMPTY) {
      if (keyHalves[2 * s] == hi && keyHalves[2 * s + 1] == lo) {
        return s;
      }
      s = (s + 1) & mask;
    }
    return -1 - s;
  }

  /** Returns the first inserted block holding this hash, or -1. */
  int get(long hi, long lo) {
    int s = find(hi, lo);
    return s >= 0 ? firstBlock[s] : -1;
  }

  /** Adds {@code block} under this hash, after any blocks already there. */
  void insert(long hi, long lo, int block) {
    if (dupNext[block] != EMPTY) {
      throw new IllegalStateException("block " + block + " is already in the hash index");
    }
    int s = find(hi, lo);
    if (s >= 0) {
      int first = firstBlock[s];
      int last = dupPrev[first];
      dupNext[last] = block;
      dupPrev[block] = last;
      dupNext[block] = first;
      dupPrev[first] = block;
    } else {
      s = -1 - s;
      keyHalves[2 * s] = hi;
      keyHalves[2 * s + 1] = lo;
      firstBlock[s] = block;
      slotOf[block] = s;
      dupNext[block] = block;
      dupPrev[block] = block;
      keys++;
    }
    blocks++;
  }

  // Note [Removal without a probe]: every block a serving run allocates is, once the cache has
  // filled, a cached block evicted as it leaves the free queue, so removal is as frequent as
  // insertion. It used to probe for the block's key first, a miss or two in a table of some
  // hundred kilobytes; the key's slot changes only when the key is inserted, when its first block
  // changes and when a backward shift moves it, so the index keeps it per first block instead.
  // A block that is not first of its key needs no slot: it is only unlinked from its list.

  /** Removes {@code block}, which holds this hash, from the index. */
  void remove(long hi, long lo, int block) {
    int n = dupNext[block];
    if (n == EMPTY) {
      throw new IllegalStateException("block " + block + " is not in the hash index");
    }
    int s = slotOf[block];
    boolean first = firstBlock[s] == block;
    if (first && (keyHalves[2 * s] != hi || keyHalves[2 * s + 1] != lo)) {
      throw new IllegalStateException("block " + block + " is not in the hash index under this hash");
    }
    if (n == block) {
      deleteSlot(s);
    } else {
      int p = dupPrev[block];
      dupNext[p] = n;
      dupPrev[n] = p;
      if (first) {
        firstBlock[s] = n;
        slotOf[n] = s;
      }
    }
    dupNext[block] = EMPTY;
    dupPrev[block] = EMPTY;
    blocks--;
  }

  private void deleteSlot(int s) {
    firstBlock[s] = EMPTY;
    keys--;
    int hole = s;
    int i = (s + 1) & mask;
    while (firstBlock[i] != EMPTY) {
      int home = homeSlot(keyHalves[2 * i], keyHalves[2 * i + 1]);
      // move entry i into the hole when its home slot is not in (hole, i] cyclically
      boolean movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
      if (movable) {
        keyHalves[2 * hole] = keyHalves[2 * i];
        keyHalves[2 * hole + 1] = keyHalves[2 * i + 1];
        firstBlock[hole] = firstBlock[i];
        slotOf[firstBlock[hole]] = hole;
        firstBlock[i] = EMPTY;
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
    Arrays.fill(firstBlock, EMPTY);
    Arrays.fill(dupNext, EMPTY);
    Arrays.fill(dupPrev, EMPTY);
    keys = 0;
    blocks = 0;
  }

  /**
   * Checks the index against the blocks' own hashes: every entry is reachable from its home slot,
   * every listed block holds the key, the duplicate lists are proper circular lists, and the counts
   * match; marks the listed blocks in {@code listed}. Returns the problem or null.
   */
  String check(long[] hashHi, long[] hashLo, boolean[] hashed, boolean[] listed) {
    int seenKeys = 0;
    int seenBlocks = 0;
    for (int s = 0; s <= mask; s++) {
      int first = firstBlock[s];
      if (first == EMPTY) {
        continue;
      }
      seenKeys++;
      if (find(keyHalves[2 * s], keyHalves[2 * s + 1]) != s) {
        return "hash at slot " + s + " is not reachable from its home slot";
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
        if (b == first && slotOf[b] != s) {
          return "first block " + b + " of the hash at slot " + s + " records slot " + slotOf[b];
        }
        if (!hashed[b] || hashHi[b] != keyHalves[2 * s] || hashLo[b] != keyHalves[2 * s + 1]) {
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

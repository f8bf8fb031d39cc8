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
 * {@code dupPrev}, indexed by block id; the table stores the first block.
 */
final class BlockHashIndex {
  private static final int EMPTY = -1;

  private final long[] keyHi;
  private final long[] keyLo;
  private final int[] firstBlock;
  private final int mask;
  private final int[] dupNext;
  private final int[] dupPrev;
  private int keys;
  private int blocks;

  /** Builds an empty index for a pool of {@code numBlocks} blocks. */
  BlockHashIndex(int numBlocks) {
    int capacity = Integer.highestOneBit(Math.max(4, numBlocks) * 2 - 1) << 1;
    keyHi = new long[capacity];
    keyLo = new long[capacity];
    firstBlock = new int[capacity];
    Arrays.fill(firstBlock, EMPTY);
    mask = capacity - 1;
    dupNext = new int[numBlocks];
    dupPrev = new int[numBlocks];
    Arrays.fill(dupNext, EMPTY);
    Arrays.fill(dupPrev, EMPTY);
  }

  private int slotOf(long hi, long lo) {
    long h = hi ^ (lo * 0x9E3779B97F4A7C15L);
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    return (int) h & mask;
  }

  private int find(long hi, long lo) {
    int s = slotOf(hi, lo);
    while (firstBlock[s] != EMPTY) {
      if (keyHi[s] == hi && keyLo[s] == lo) {
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
      keyHi[s] = hi;
      keyLo[s] = lo;
      firstBlock[s] = block;
      dupNext[block] = block;
      dupPrev[block] = block;
      keys++;
    }
    blocks++;
  }

  /** Removes {@code block}, which holds this hash, from the index. */
  void remove(long hi, long lo, int block) {
    int s = find(hi, lo);
    if (s < 0 || dupNext[block] == EMPTY) {
      throw new IllegalStateException("block " + block + " is not in the hash index");
    }
    int n = dupNext[block];
    if (n == block) {
      deleteSlot(s);
    } else {
      int p = dupPrev[block];
      dupNext[p] = n;
      dupPrev[n] = p;
      if (firstBlock[s] == block) {
        firstBlock[s] = n;
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
      int home = slotOf(keyHi[i], keyLo[i]);
      // move entry i into the hole when its home slot is not in (hole, i] cyclically
      boolean movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
      if (movable) {
        keyHi[hole] = keyHi[i];
        keyLo[hole] = keyLo[i];
        firstBlock[hole] = firstBlock[i];
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
      if (find(keyHi[s], keyLo[s]) != s) {
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
        if (!hashed[b] || hashHi[b] != keyHi[s] || hashLo[b] != keyLo[s]) {
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

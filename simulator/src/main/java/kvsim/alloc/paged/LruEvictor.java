package kvsim.alloc.paged;

import java.util.Arrays;
import java.util.TreeSet;

/**
 * vLLM v0's LRU evictor ({@code vllm/core/evictor_v2.py} {@code LRUEvictor} at commit 1fb9c1b): the cached blocks with no
 * references, evicted least recently accessed first.
 *
 * <ul>
 *   <li>The victim has the smallest last-access time; among equal times, the most hashed tokens
 *       (the deepest block of a prefix goes before its parents); among those, the block that
 *       entered the evictor first (v0 scans an insertion-ordered dictionary and keeps the first
 *       best).
 *   <li>A block's keys never change while it is in the evictor: a hit removes it first.
 * </ul>
 *
 * <p>Kept as a tree ordered by (last access, −hashed tokens, entry sequence): O(log n) per
 * operation instead of v0's linear scan, with the same victim.
 */
final class LruEvictor {
  private final long[] lastAccessed;
  private final int[] hashedTokens;
  private final long[] entrySeq;
  private final TreeSet<Integer> order;
  private long nextSeq;

  LruEvictor(long[] lastAccessed, int[] hashedTokens) {
    this.lastAccessed = lastAccessed;
    this.hashedTokens = hashedTokens;
    this.entrySeq = new long[lastAccessed.length];
    Arrays.fill(entrySeq, -1);
    this.order =
        new TreeSet<>(
            (a, b) -> {
              int c = Long.compare(lastAccessed[a], lastAccessed[b]);
              if (c != 0) {
                return c;
              }
              c = Integer.compare(hashedTokens[b], hashedTokens[a]);
              if (c != 0) {
                return c;
              }
              return Long.compare(entrySeq[a], entrySeq[b]);
            });
  }

  /** Returns the number of blocks held. */
  int size() {
    return order.size();
  }

  /** Returns whether {@code block} is held. */
  boolean contains(int block) {
    return entrySeq[block] >= 0;
  }

  /** Adds a cached block whose last reference was just dropped. */
  void add(int block) {
    if (entrySeq[block] >= 0) {
      throw new IllegalStateException("block " + block + " is already in the evictor");
    }
    entrySeq[block] = nextSeq++;
    order.add(block);
  }

  /** Removes {@code block} (a prefix-cache hit). */
  void remove(int block) {
    if (entrySeq[block] < 0 || !order.remove(block)) {
      throw new IllegalStateException("block " + block + " is not in the evictor");
    }
    entrySeq[block] = -1;
  }

  /** Removes and returns the victim. */
  int evict() {
    Integer b = order.pollFirst();
    if (b == null) {
      throw new IllegalStateException("evictor empty");
    }
    entrySeq[b] = -1;
    return b;
  }

  /** Returns the blocks in eviction order. */
  int[] toArray() {
    int[] out = new int[order.size()];
    int i = 0;
    for (int b : order) {
      out[i++] = b;
    }
    return out;
  }

  /** Removes every block. */
  void clear() {
    for (int b : order) {
      entrySeq[b] = -1;
    }
    order.clear();
  }
}

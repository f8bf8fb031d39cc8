package kvsim.core;

import java.util.Arrays;

/**
 * An open-addressing hash map from long keys to long values, without boxing: the engine maps
 * millions of trace ids to allocator handles with it. Linear probing, backward-shift deletion
 * (no tombstones), power-of-two capacity, load factor at most 1/2. {@link Long#MIN_VALUE} is
 * reserved as the empty marker and cannot be a key.
 *
 * <p>Keys and values are interleaved in one array (slot s holds its key at 2s and its value at
 * 2s + 1), so a lookup in a map far larger than the caches costs one cache miss, not two.
 */
public final class LongLongMap {
  private static final long EMPTY = Long.MIN_VALUE;

  private long[] table;
  private int size;
  private int mask;

  public LongLongMap() {
    this(16);
  }

  public LongLongMap(int expected) {
    int cap = Integer.highestOneBit(Math.max(4, expected) * 2 - 1) << 1;
    table = emptyTable(cap);
    mask = cap - 1;
  }

  private static long[] emptyTable(int slots) {
    long[] t = new long[2 * slots];
    for (int s = 0; s < t.length; s += 2) {
      t[s] = EMPTY;
    }
    return t;
  }

  private static int mix(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  /** Returns the number of entries. */
  public int size() {
    return size;
  }

  /** Returns the value for {@code key}, or {@code missing} when absent. */
  public long get(long key, long missing) {
    int i = mix(key) & mask;
    while (true) {
      long k = table[2 * i];
      if (k == key) {
        return table[2 * i + 1];
      }
      if (k == EMPTY) {
        return missing;
      }
      i = (i + 1) & mask;
    }
  }

  /** Returns whether {@code key} is present. */
  public boolean containsKey(long key) {
    int i = mix(key) & mask;
    while (true) {
      long k = table[2 * i];
      if (k == key) {
        return true;
      }
      if (k == EMPTY) {
        return false;
      }
      i = (i + 1) & mask;
    }
  }

  /** Puts an entry; returns false (and changes nothing) if the key was already present. */
  public boolean putIfAbsent(long key, long value) {
    if (key == EMPTY) {
      throw new IllegalArgumentException("key " + key + " is reserved");
    }
    int i = mix(key) & mask;
    while (true) {
      long k = table[2 * i];
      if (k == key) {
        return false;
      }
      if (k == EMPTY) {
        table[2 * i] = key;
        table[2 * i + 1] = value;
        if (++size * 2 > mask + 1) {
          grow();
        }
        return true;
      }
      i = (i + 1) & mask;
    }
  }

  /** Removes {@code key}; returns its value, or {@code missing} if it was absent. */
  public long remove(long key, long missing) {
    int i = mix(key) & mask;
    while (true) {
      long k = table[2 * i];
      if (k == EMPTY) {
        return missing;
      }
      if (k == key) {
        long v = table[2 * i + 1];
        shiftBack(i);
        size--;
        return v;
      }
      i = (i + 1) & mask;
    }
  }

  private void shiftBack(int hole) {
    int i = hole;
    while (true) {
      i = (i + 1) & mask;
      long k = table[2 * i];
      if (k == EMPTY) {
        break;
      }
      int home = mix(k) & mask;
      // Move k into the hole if its home is not cyclically in (hole, i].
      boolean between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
      if (!between) {
        table[2 * hole] = k;
        table[2 * hole + 1] = table[2 * i + 1];
        hole = i;
      }
    }
    table[2 * hole] = EMPTY;
  }

  private void grow() {
    long[] old = table;
    int slots = (mask + 1) * 2;
    table = emptyTable(slots);
    mask = slots - 1;
    size = 0;
    for (int s = 0; s < old.length; s += 2) {
      if (old[s] != EMPTY) {
        putIfAbsent(old[s], old[s + 1]);
      }
    }
  }
}

package kvsim.core;

import java.util.Arrays;

/**
 * An open-addressing hash map from long keys to long values, without boxing: the engine maps
 * millions of trace ids to allocator handles with it. Linear probing, backward-shift deletion
 * (no tombstones), power-of-two capacity, load factor at most 1/2. {@link Long#MIN_VALUE} is
 * reserved as the empty marker and cannot be a key.
 */
public final class LongLongMap {
  private static final long EMPTY = Long.MIN_VALUE;

  private long[] keys;
  private long[] values;
  private int size;
  private int mask;

  public LongLongMap() {
    this(16);
  }

  public LongLongMap(int expected) {
    int cap = Integer.highestOneBit(Math.max(4, expected) * 2 - 1) << 1;
    keys = new long[cap];
    values = new long[cap];
    Arrays.fill(keys, EMPTY);
    mask = cap - 1;
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
      long k = keys[i];
      if (k == key) {
        return values[i];
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
      long k = keys[i];
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
      long k = keys[i];
      if (k == key) {
        return false;
      }
      if (k == EMPTY) {
        keys[i] = key;
        values[i] = value;
        if (++size * 2 > keys.length) {
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
      long k = keys[i];
      if (k == EMPTY) {
        return missing;
      }
      if (k == key) {
        long v = values[i];
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
      long k = keys[i];
      if (k == EMPTY) {
        break;
      }
      int home = mix(k) & mask;
      // Move k into the hole if its home is not cyclically in (hole, i].
      boolean between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
      if (!between) {
        keys[hole] = k;
        values[hole] = values[i];
        hole = i;
      }
    }
    keys[hole] = EMPTY;
  }

  private void grow() {
    long[] oldKeys = keys;
    long[] oldValues = values;
    keys = new long[oldKeys.length * 2];
    values = new long[oldKeys.length * 2];
    Arrays.fill(keys, EMPTY);
    mask = keys.length - 1;
    size = 0;
    for (int j = 0; j < oldKeys.length; j++) {
      if (oldKeys[j] != EMPTY) {
        putIfAbsent(oldKeys[j], oldValues[j]);
      }
    }
  }
}

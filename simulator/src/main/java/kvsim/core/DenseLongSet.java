package kvsim.core;

/**
 * A set of longs kept as a bitset over one window of neighbouring values, with a hash set for the
 * values outside it: for sets of ids that are mostly close to each other, as a trace's ids are
 * (its generator or its program numbers allocations in order).
 *
 * <p>Note [Refused ids in a bitset]: a replay whose device refuses most allocations holds every
 * refused id until the trace frees it. In the 2 M-event churn trace, 1.13 M of 1.2 M allocations
 * are refused and about 400,000 are live at once; in the engine's id table (a {@link LongLongMap},
 * 16 MB there) each insertion and removal was a cache miss, 42 % of the warm replay's samples. The
 * refused ids carry no handle, so a bit each does: the 1.2 M ids of that trace take 150 KB, which a
 * core's cache holds. The window grows (either way) while it stays within two words per member, or
 * 1,024 words, whichever is more; a value it cannot reach goes to the hash set, so any ids work,
 * only slower.
 */
public final class DenseLongSet {
  private static final int MIN_WORDS = 1024;
  /** Bit {@code v - base} of the window stands for value {@code v}; {@code base} is a multiple of 64. */
  private long base;
  private long[] words = new long[0];
  /** Values outside the window (the map's values are unused); null until the first. */
  private LongLongMap outside;
  private int size;
  /** Whether {@link Long#MIN_VALUE}, which the hash set cannot hold, is in the set. */
  private boolean hasMinValue;

  /** Returns the number of values in the set. */
  public int size() {
    return size;
  }

  /** Returns whether {@code v} is in the set. */
  public boolean contains(long v) {
    if (v == Long.MIN_VALUE) {
      return hasMinValue;
    }
    if (inWindow(v) && (words[(int) ((v - base) >>> 6)] & (1L << (v - base))) != 0) {
      return true;
    }
    return outside != null && outside.containsKey(v); // it may have gone there before the window reached it
  }

  /** Adds {@code v}; returns false (and changes nothing) when it was in the set already. */
  public boolean add(long v) {
    if (v == Long.MIN_VALUE) { // the hash set's empty marker: kept apart
      if (hasMinValue) {
        return false;
      }
      hasMinValue = true;
      size++;
      return true;
    }
    if (outside != null && outside.containsKey(v)) {
      return false;
    }
    if (!reach(v)) {
      if (outside == null) {
        outside = new LongLongMap(16);
      }
      outside.putIfAbsent(v, 0);
      size++;
      return true;
    }
    int w = (int) ((v - base) >>> 6);
    long bit = 1L << (v - base);
    if ((words[w] & bit) != 0) {
      return false;
    }
    words[w] |= bit;
    size++;
    return true;
  }

  /** Removes {@code v}; returns whether it was in the set. */
  public boolean remove(long v) {
    if (v == Long.MIN_VALUE) {
      if (!hasMinValue) {
        return false;
      }
      hasMinValue = false;
      size--;
      return true;
    }
    if (inWindow(v)) {
      int w = (int) ((v - base) >>> 6);
      long bit = 1L << (v - base);
      if ((words[w] & bit) != 0) {
        words[w] &= ~bit;
        size--;
        return true;
      }
    }
    if (outside != null && outside.remove(v, -1) != -1) {
      size--;
      return true;
    }
    return false;
  }

  private boolean inWindow(long v) {
    long offset = v - base;
    return v >= base && offset >= 0 && offset < 64L * words.length;
  }

  /**
   * Makes the window cover {@code v} if it can within its size limit (Note [Refused ids in a
   * bitset]); returns whether it covers {@code v}.
   */
  private boolean reach(long v) {
    if (inWindow(v)) {
      return true;
    }
    long vBase = v & ~63L;
    if (vBase > Long.MAX_VALUE - 64L * MIN_WORDS) {
      return false; // too near the top of the longs for a window
    }
    if (words.length == 0) {
      base = vBase;
      words = new long[16];
      return true;
    }
    long end = base + 64L * words.length; // exclusive
    long lo = Math.min(base, vBase);
    long hi = Math.max(end, vBase + 64);
    long span = hi - lo;
    if (span <= 0) {
      return false; // wider than the longs can count
    }
    long needed = span >>> 6;
    long limit = Math.max(MIN_WORDS, 2L * (size + 1));
    if (needed > limit || needed > Integer.MAX_VALUE - 8) {
      return false;
    }
    int length = (int) Math.min(Math.max(needed, 2L * words.length), limit);
    long newBase;
    try {
      newBase = vBase < base ? Math.subtractExact(end, 64L * length) : base; // grown down: the old end stays
      Math.addExact(newBase, 64L * length);
    } catch (ArithmeticException e) {
      return false;
    }
    long[] grown = new long[length];
    System.arraycopy(words, 0, grown, (int) ((base - newBase) >>> 6), words.length);
    words = grown;
    base = newBase;
    return true;
  }
}

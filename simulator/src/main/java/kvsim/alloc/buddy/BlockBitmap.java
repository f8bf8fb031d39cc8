package kvsim.alloc.buddy;

import java.util.Arrays;
import kvsim.alloc.InvariantViolation;

/**
 * A set of block positions [0, size) with the lowest member found in O(log64 size): the free
 * blocks of one order of the buddy model. Level 0 holds one bit per position; each level above
 * holds one bit per word of the level below, set when that word is not zero, up to a level of one
 * word. {@link #set}, {@link #clear} and {@link #lowest} touch one word per level.
 */
final class BlockBitmap {
  private final long[][] levels;
  private final int size;
  private int count;

  /** Creates an empty set over positions [0, size). */
  BlockBitmap(int size) {
    if (size < 0) {
      throw new IllegalArgumentException("negative size " + size);
    }
    this.size = size;
    int words = Math.max(1, (size + 63) >>> 6);
    int depth = 1;
    for (int w = words; w > 1; w = (w + 63) >>> 6) {
      depth++;
    }
    levels = new long[depth][];
    for (int l = 0, w = words; l < depth; l++, w = (w + 63) >>> 6) {
      levels[l] = new long[w];
    }
  }

  /** Returns the number of positions. */
  int size() {
    return size;
  }

  /** Returns the number of members. */
  int count() {
    return count;
  }

  /** Returns whether {@code i} is a member. */
  boolean get(int i) {
    return (levels[0][i >>> 6] & (1L << i)) != 0;
  }

  /** Adds {@code i}, which must not be a member. */
  void set(int i) {
    count++;
    for (long[] level : levels) {
      long word = level[i >>> 6];
      level[i >>> 6] = word | (1L << i);
      if (word != 0) {
        return; // the levels above already record this word
      }
      i >>>= 6;
    }
  }

  /** Removes {@code i}, which must be a member. */
  void clear(int i) {
    count--;
    for (long[] level : levels) {
      long word = level[i >>> 6] & ~(1L << i);
      level[i >>> 6] = word;
      if (word != 0) {
        return; // the word still has members, so the levels above stay
      }
      i >>>= 6;
    }
  }

  /** Returns the lowest member, or -1 when the set is empty. */
  int lowest() {
    long[][] l = levels;
    int top = l.length - 1;
    if (l[top][0] == 0) {
      return -1;
    }
    int at = 0;
    for (int level = top; level >= 0; level--) {
      at = (at << 6) | Long.numberOfTrailingZeros(l[level][at]);
    }
    return at;
  }

  /** Returns the members in increasing order. */
  int[] members() {
    int[] out = new int[count];
    int n = 0;
    long[] bits = levels[0];
    for (int w = 0; w < bits.length; w++) {
      for (long word = bits[w]; word != 0; word &= word - 1) {
        if (n == out.length) {
          out = Arrays.copyOf(out, n + 1); // more bits than the count: reported by checkInvariants
        }
        out[n++] = (w << 6) | Long.numberOfTrailingZeros(word);
      }
    }
    return Arrays.copyOf(out, n);
  }

  /**
   * Checks that every level records exactly the non-zero words below it, that no position past the
   * size is a member, and the member count; throws {@link InvariantViolation} naming {@code owner}.
   */
  void checkInvariants(String owner, String what) {
    long[] bits = levels[0];
    int members = 0;
    for (int w = 0; w < bits.length; w++) {
      members += Long.bitCount(bits[w]);
      long past = (long) w * 64 + 64 - size; // positions of this word at or past the size
      if (past > 0 && past <= 64 && (bits[w] >>> (64 - past)) != 0) {
        throw new InvariantViolation(owner, what + ": a position past " + size + " is marked");
      }
      if (past > 64 && bits[w] != 0) {
        throw new InvariantViolation(owner, what + ": a position past " + size + " is marked");
      }
    }
    if (members != count) {
      throw new InvariantViolation(owner, what + ": " + members + " marked positions, count says " + count);
    }
    for (int l = 1; l < levels.length; l++) {
      long[] below = levels[l - 1];
      long[] level = levels[l];
      for (int w = 0; w < level.length * 64; w++) {
        boolean marked = (level[w >>> 6] & (1L << w)) != 0;
        boolean nonZero = w < below.length && below[w] != 0;
        if (marked != nonZero) {
          throw new InvariantViolation(owner, what + ": summary level " + l + " disagrees with word " + w + " below");
        }
      }
    }
  }
}

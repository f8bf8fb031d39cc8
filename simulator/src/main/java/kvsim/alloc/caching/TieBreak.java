package kvsim.alloc.caching;

import java.util.Comparator;

/**
 * How free blocks of equal stream and size are ordered in a pool's free-block set of PyTorch's
 * {@code c10/cuda/CUDACachingAllocator.cpp}, selectable by PyTorch version.
 *
 * <ul>
 *   <li>{@link #ADDRESS}: lowest block address first, as at @eb42ad6 and @001074d and in every
 *       release up to at least 2.11.
 *   <li>{@link #SEGMENT_AGE}: oldest segment first (a counter stamped when the segment is created
 *       and inherited by every block split from it), then lowest address, as in 2026 main
 *       (PR #183489/#183591, reported to ship from about 2.13).
 * </ul>
 */
public enum TieBreak {
  ADDRESS("address"),
  SEGMENT_AGE("segment-age");

  private final String label;

  TieBreak(String label) {
    this.label = label;
  }

  /** Returns the option value ({@code address} or {@code segment-age}). */
  public String label() {
    return label;
  }

  /** Returns the tie-break named by an option value; throws IllegalArgumentException otherwise. */
  public static TieBreak of(String label) {
    for (TieBreak t : values()) {
      if (t.label.equals(label)) {
        return t;
      }
    }
    throw new IllegalArgumentException("expected address or segment-age, got '" + label + "'");
  }

  /** Returns the pool order (stream, size, tie-break). */
  Comparator<Block> sizeOrder() {
    return this == ADDRESS ? TieBreak::compareByAddress : TieBreak::compareBySegmentAge;
  }

  private static int compareByAddress(Block a, Block b) {
    if (a.stream != b.stream) {
      return Long.compareUnsigned(a.stream, b.stream);
    }
    if (a.size != b.size) {
      return a.size < b.size ? -1 : 1;
    }
    return Long.compare(a.address, b.address);
  }

  private static int compareBySegmentAge(Block a, Block b) {
    if (a.stream != b.stream) {
      return Long.compareUnsigned(a.stream, b.stream);
    }
    if (a.size != b.size) {
      return a.size < b.size ? -1 : 1;
    }
    long sa = a.segment == null ? Long.MIN_VALUE : a.segment.serial;
    long sb = b.segment == null ? Long.MIN_VALUE : b.segment.serial;
    if (sa != sb) {
      return sa < sb ? -1 : 1;
    }
    return Long.compare(a.address, b.address);
  }

  /** The order of unmapped ranges of expandable segments: (stream, address). */
  static int compareByStreamAddress(Block a, Block b) {
    if (a.stream != b.stream) {
      return Long.compareUnsigned(a.stream, b.stream);
    }
    return Long.compare(a.address, b.address);
  }
}

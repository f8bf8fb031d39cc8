package kvsim.alloc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The address ranges that one allocation occupies: one for contiguous allocators, one per page or
 * slab block (adjacent ones merged) for paged and slab allocators. Stored packed as (offset, size)
 * pairs in one array so that a hot path allocates one object.
 */
public final class Extents {
  private final long[] packed; // offset0, size0, offset1, size1, ...
  private final int count;

  private Extents(long[] packed, int count) {
    this.packed = packed;
    this.count = count;
  }

  /** A single contiguous extent. */
  public static Extents single(long offsetBytes, long sizeBytes) {
    return new Extents(new long[] {offsetBytes, sizeBytes}, 1);
  }

  /** Returns the number of extents. */
  public int count() {
    return count;
  }

  /** Returns the start address of extent {@code i}. */
  public long offsetBytes(int i) {
    return packed[2 * i];
  }

  /** Returns the length of extent {@code i}. */
  public long sizeBytes(int i) {
    return packed[2 * i + 1];
  }

  /**
   * Returns the sum of the extents' lengths; throws ArithmeticException where it passes {@code
   * Long.MAX_VALUE}, which no extents inside one region can, so that a wrong allocation is not
   * hidden by a wrapped sum.
   */
  public long totalBytes() {
    long sum = 0;
    for (int i = 0; i < count; i++) {
      sum = Math.addExact(sum, packed[2 * i + 1]);
    }
    return sum;
  }

  /** Returns the extents as (offset, size) pairs. */
  public List<long[]> toList() {
    List<long[]> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      out.add(new long[] {packed[2 * i], packed[2 * i + 1]});
    }
    return out;
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < count; i++) {
      if (i > 0) {
        sb.append(", ");
      }
      sb.append('[').append(packed[2 * i]).append(", +").append(packed[2 * i + 1]).append(')');
    }
    return sb.append(']').toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Extents e
        && e.count == count
        && Arrays.equals(packed, 0, 2 * count, e.packed, 0, 2 * count);
  }

  @Override
  public int hashCode() {
    int h = count;
    for (int i = 0; i < 2 * count; i++) {
      h = 31 * h + Long.hashCode(packed[i]);
    }
    return h;
  }

  /**
   * Collects extents in the order they are added, merging an extent into the previous one when it
   * starts where that one ends.
   */
  public static final class Builder {
    private long[] packed;
    private int count;

    public Builder(int expected) {
      packed = new long[Math.max(2, 2 * expected)];
    }

    /** Adds [offset, offset + size). */
    public Builder add(long offsetBytes, long sizeBytes) {
      if (count > 0 && packed[2 * count - 2] + packed[2 * count - 1] == offsetBytes) {
        packed[2 * count - 1] += sizeBytes;
        return this;
      }
      if (2 * count + 2 > packed.length) {
        packed = Arrays.copyOf(packed, packed.length * 2);
      }
      packed[2 * count] = offsetBytes;
      packed[2 * count + 1] = sizeBytes;
      count++;
      return this;
    }

    public Extents build() {
      return new Extents(packed, count);
    }
  }
}

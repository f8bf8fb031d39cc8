package kvsim.alloc.paged;

import java.util.Arrays;

/** A growable array of ints: block tables, token ids and per-operation logs without boxing. */
final class IntList {
  private int[] items;
  private int size;

  IntList() {
    this(8);
  }

  IntList(int capacity) {
    items = new int[Math.max(1, capacity)];
  }

  /** Returns a list over {@code items}, whose first {@code size} entries are its elements; it owns the array from now on. */
  static IntList adopt(int[] items, int size) {
    IntList l = new IntList(0);
    l.items = items.length == 0 ? new int[1] : items;
    l.size = size;
    return l;
  }

  /** Returns the number of elements. */
  int size() {
    return size;
  }

  /** Returns whether the list is empty. */
  boolean isEmpty() {
    return size == 0;
  }

  /** Returns element {@code i}. */
  int get(int i) {
    if (i >= size) {
      throw new IndexOutOfBoundsException(i + " >= " + size);
    }
    return items[i];
  }

  /** Replaces element {@code i}. */
  void set(int i, int value) {
    if (i >= size) {
      throw new IndexOutOfBoundsException(i + " >= " + size);
    }
    items[i] = value;
  }

  /** Appends the value the backing array already holds at the end (the caller knows it is there). */
  void addPresent() {
    if (size == items.length) {
      throw new IllegalStateException("no value present after the last of " + size);
    }
    size++;
  }

  /** Appends a value. */
  void add(int value) {
    if (size == items.length) {
      items = Arrays.copyOf(items, items.length * 2);
    }
    items[size++] = value;
  }

  /** Appends every element of {@code other}. */
  void addAll(IntList other) {
    ensure(size + other.size);
    System.arraycopy(other.items, 0, items, size, other.size);
    size += other.size;
  }

  /** Appends {@code count} values of {@code source} starting at {@code from}. */
  void addAll(int[] source, int from, int count) {
    ensure(size + count);
    System.arraycopy(source, from, items, size, count);
    size += count;
  }

  /** Drops every element past the first {@code newSize}. */
  void truncate(int newSize) {
    if (newSize < size) {
      size = newSize;
    }
  }

  /** Removes every element. */
  void clear() {
    size = 0;
  }

  /** Returns the backing array; only the first {@link #size()} elements are meaningful. */
  int[] raw() {
    return items;
  }

  /** Returns a copy of the elements. */
  int[] toArray() {
    return Arrays.copyOf(items, size);
  }

  private void ensure(int capacity) {
    if (capacity > items.length) {
      items = Arrays.copyOf(items, Math.max(capacity, items.length * 2));
    }
  }

  @Override
  public String toString() {
    return Arrays.toString(toArray());
  }
}

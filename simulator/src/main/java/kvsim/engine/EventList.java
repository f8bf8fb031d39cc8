package kvsim.engine;

import java.util.Arrays;

/**
 * The pending events of a {@link Simulator}, ordered by (time, priority, insertion sequence): a
 * binary min-heap over an array, O(log n) to add and to take the first, with each event holding its
 * own heap slot so that {@link #remove} (a cancelled timer, a preempted request's next step) is
 * O(log n) too.
 */
final class EventList {
  private Event[] heap = new Event[16];
  private int size;

  /** Returns the number of pending events. */
  int size() {
    return size;
  }

  /** Adds an event whose time and sequence are set. */
  void add(Event e) {
    if (size == heap.length) {
      heap = Arrays.copyOf(heap, size * 2);
    }
    siftUp(size++, e);
  }

  /** Removes and returns the first event, or null when none is pending. */
  Event pollFirst() {
    if (size == 0) {
      return null;
    }
    Event first = heap[0];
    Event last = heap[--size];
    heap[size] = null;
    if (size > 0) {
      siftDown(0, last);
    }
    first.slot = -1;
    return first;
  }

  /** Removes a pending event; returns whether it was pending. */
  boolean remove(Event e) {
    int i = e.slot;
    if (i < 0 || i >= size || heap[i] != e) {
      return false;
    }
    Event last = heap[--size];
    heap[size] = null;
    if (i < size) {
      siftDown(i, last);
      if (heap[i] == last) {
        siftUp(i, last);
      }
    }
    e.slot = -1;
    return true;
  }

  private static boolean before(Event a, Event b) {
    if (a.timeNanos != b.timeNanos) {
      return a.timeNanos < b.timeNanos;
    }
    if (a.priority() != b.priority()) {
      return a.priority() < b.priority();
    }
    return a.sequence < b.sequence;
  }

  private void siftUp(int i, Event e) {
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      Event p = heap[parent];
      if (!before(e, p)) {
        break;
      }
      heap[i] = p;
      p.slot = i;
      i = parent;
    }
    heap[i] = e;
    e.slot = i;
  }

  private void siftDown(int i, Event e) {
    int half = size >>> 1;
    while (i < half) {
      int child = 2 * i + 1;
      Event c = heap[child];
      int right = child + 1;
      if (right < size && before(heap[right], c)) {
        child = right;
        c = heap[child];
      }
      if (!before(c, e)) {
        break;
      }
      heap[i] = c;
      c.slot = i;
      i = child;
    }
    heap[i] = e;
    e.slot = i;
  }
}

package kvsim.alloc.vattention;

import java.util.Arrays;
import java.util.function.IntPredicate;
import kvsim.alloc.InvariantViolation;

/**
 * Request slots numbered from 0, handed out lowest free first: a binary min-heap of the freed slots
 * below a high-water mark, and the mark itself for the next slot never used. With every slot below
 * the mark live, the mark is the lowest free slot, so {@link #take} needs no search. O(log f) per
 * operation for f freed slots, O(1) in a steady churn, where a free is soon followed by a take.
 */
final class LowestFreeSlots {
  private int[] heap = new int[16];
  private int size;
  private int used; // slots [0, used) have been handed out at least once

  /** Returns the lowest free slot and marks it taken. */
  int take() {
    if (size == 0) {
      return used++;
    }
    int lowest = heap[0];
    int last = heap[--size];
    if (size > 0) {
      siftDown(last);
    }
    return lowest;
  }

  /** Returns a taken slot to the free ones. */
  void release(int slot) {
    if (size == heap.length) {
      heap = Arrays.copyOf(heap, size * 2);
    }
    int i = size++;
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      if (heap[parent] <= slot) {
        break;
      }
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = slot;
  }

  private void siftDown(int slot) {
    int i = 0;
    int half = size >>> 1;
    while (i < half) {
      int child = 2 * i + 1;
      if (child + 1 < size && heap[child + 1] < heap[child]) {
        child++;
      }
      if (slot <= heap[child]) {
        break;
      }
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = slot;
  }

  /** Returns how many slots have ever been handed out: the live ones and the freed ones. */
  int used() {
    return used;
  }

  /** Returns how many slots below {@link #used()} are free. */
  int freeCount() {
    return size;
  }

  /**
   * Checks the heap order and that the free slots are distinct, below {@link #used()} and not
   * {@code live}; throws {@link InvariantViolation} naming {@code owner} when broken.
   */
  void checkInvariants(String owner, IntPredicate live) {
    boolean[] seen = new boolean[used];
    for (int i = 0; i < size; i++) {
      int s = heap[i];
      if (s < 0 || s >= used || seen[s] || live.test(s)) {
        throw new InvariantViolation(owner, "free slot " + s + " is out of range, listed twice or live");
      }
      seen[s] = true;
      if (i > 0 && heap[(i - 1) >>> 1] > s) {
        throw new InvariantViolation(owner, "the free slots are out of heap order at position " + i);
      }
    }
  }
}

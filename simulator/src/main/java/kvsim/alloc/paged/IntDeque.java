package kvsim.alloc.paged;

/**
 * A bounded ring buffer of block ids: v0's free list of hashless blocks ({@code
 * vllm/core/block/naive_block.py} at vLLM commit 1fb9c1b), a {@code
 * deque} from which allocation takes the front and to which a free returns a block at the front
 * (LIFO, the v0 default) or the back (FIFO).
 */
final class IntDeque {
  private final int[] ring;
  private int head;
  private int size;

  IntDeque(int capacity) {
    ring = new int[Math.max(1, capacity)];
  }

  /** Returns the number of ids held. */
  int size() {
    return size;
  }

  /** Adds an id at the front. */
  void addFirst(int value) {
    if (size == ring.length) {
      throw new IllegalStateException("deque full");
    }
    head = head == 0 ? ring.length - 1 : head - 1;
    ring[head] = value;
    size++;
  }

  /** Adds an id at the back. */
  void addLast(int value) {
    if (size == ring.length) {
      throw new IllegalStateException("deque full");
    }
    int at = head + size;
    ring[at >= ring.length ? at - ring.length : at] = value;
    size++;
  }

  /** Removes and returns the front id; the deque must not be empty. */
  int pollFirst() {
    if (size == 0) {
      throw new IllegalStateException("deque empty");
    }
    int v = ring[head];
    head = head + 1 == ring.length ? 0 : head + 1;
    size--;
    return v;
  }

  /** Returns the id at position {@code i} from the front. */
  int get(int i) {
    int at = head + i;
    return ring[at >= ring.length ? at - ring.length : at];
  }

  /** Removes every id. */
  void clear() {
    head = 0;
    size = 0;
  }
}

package kvsim.alloc.paged;

/**
 * vLLM v1's {@code FreeKVCacheBlockQueue} ({@code vllm/v1/core/kv_cache_utils.py} at commit
 * ec5ef0a): one doubly linked list, with a sentinel at
 * each end, of every block whose reference count is zero.
 *
 * <ul>
 *   <li>At construction the queue holds blocks {@code 0 … n−1} in ascending order.
 *   <li>{@link #popLeft()} takes the head; {@link #append(int)} puts a block at the tail.
 *   <li>{@link #remove(int)} unlinks a block from anywhere in O(1) (a prefix-cache hit on a free
 *       block).
 * </ul>
 *
 * <p>Links live in two int arrays indexed by block id; sentinels are ids {@code n} (head) and {@code
 * n + 1} (tail). A block outside the queue has both links at {@code -1}.
 */
final class FreeBlockQueue {
  private final int[] prev;
  private final int[] next;
  private final int head;
  private final int tail;
  private int size;

  /** Builds the queue of {@code numBlocks} blocks, ascending. */
  FreeBlockQueue(int numBlocks) {
    prev = new int[numBlocks + 2];
    next = new int[numBlocks + 2];
    head = numBlocks;
    tail = numBlocks + 1;
    int last = head;
    for (int b = 0; b < numBlocks; b++) {
      next[last] = b;
      prev[b] = last;
      last = b;
    }
    next[last] = tail;
    prev[tail] = last;
    prev[head] = -1;
    next[tail] = -1;
    size = numBlocks;
  }

  /** Returns the number of blocks in the queue. */
  int size() {
    return size;
  }

  /** Returns whether {@code block} is in the queue. */
  boolean contains(int block) {
    return prev[block] != -1;
  }

  /** Removes and returns the head block; the queue must not be empty. */
  int popLeft() {
    int b = next[head];
    if (b == tail) {
      throw new IllegalStateException("no free blocks");
    }
    int after = next[b];
    next[head] = after;
    prev[after] = head;
    prev[b] = -1;
    next[b] = -1;
    size--;
    return b;
  }

  /** Unlinks {@code block}, which must be in the queue. */
  void remove(int block) {
    int p = prev[block];
    int n = next[block];
    if (p == -1) {
      throw new IllegalStateException("block " + block + " is not in the free queue");
    }
    next[p] = n;
    prev[n] = p;
    prev[block] = -1;
    next[block] = -1;
    size--;
  }

  /** Appends {@code block}, which must not be in the queue, at the tail. */
  void append(int block) {
    if (prev[block] != -1) {
      throw new IllegalStateException("block " + block + " is already in the free queue");
    }
    int last = prev[tail];
    next[last] = block;
    prev[block] = last;
    next[block] = tail;
    prev[tail] = block;
    size++;
  }

  /** Returns the first block, or -1 when empty. */
  int first() {
    int b = next[head];
    return b == tail ? -1 : b;
  }

  /** Returns the block after {@code block}, or -1 at the end. */
  int after(int block) {
    int b = next[block];
    return b == tail ? -1 : b;
  }

  /** Returns the blocks head first. */
  int[] toArray() {
    int[] out = new int[size];
    int i = 0;
    for (int b = next[head]; b != tail && i < size; b = next[b]) {
      out[i++] = b;
    }
    return out;
  }

  /**
   * Checks that the links form one proper list from head to tail of {@link #size()} blocks, that
   * every link is mirrored, and that blocks outside it have no links; returns the problem or null.
   */
  String check(boolean[] inQueueOut) {
    int n = prev.length - 2;
    if (prev[head] != -1 || next[tail] != -1) {
      return "a sentinel has an outer link";
    }
    int count = 0;
    int before = head;
    for (int b = next[head]; b != tail; b = next[b]) {
      if (b < 0 || b >= n) {
        return "link to " + b + " outside the pool after " + before;
      }
      if (prev[b] != before) {
        return "block " + b + " has prev " + prev[b] + " but follows " + before;
      }
      if (inQueueOut[b]) {
        return "block " + b + " is twice in the free queue (cycle)";
      }
      inQueueOut[b] = true;
      if (++count > n) {
        return "free queue longer than the pool";
      }
      before = b;
    }
    if (prev[tail] != before) {
      return "tail sentinel's prev is " + prev[tail] + ", last block is " + before;
    }
    if (count != size) {
      return "free queue holds " + count + " blocks but its size is " + size;
    }
    for (int b = 0; b < n; b++) {
      if (!inQueueOut[b] && (prev[b] != -1 || next[b] != -1)) {
        return "block " + b + " is outside the free queue but has links";
      }
    }
    return null;
  }
}

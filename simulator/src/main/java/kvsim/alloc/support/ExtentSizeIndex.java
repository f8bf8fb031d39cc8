package kvsim.alloc.support;

import java.util.Arrays;
import kvsim.alloc.InvariantViolation;

/**
 * Free extents ordered by (size, address), in an AVL tree: the index a best-fit model keeps beside
 * the address-ordered {@link FreeExtentTree}. It is mechanism only: it stores keys and finds the
 * smallest that fits; merging neighbours is the address tree's job.
 *
 * <ul>
 *   <li>{@link #bestFit} returns the smallest extent of at least a given size, the lowest address
 *       among extents of that size; {@link #removeFound} drops it without a second search.
 *   <li>{@link #add}, {@link #remove}, {@link #bestFit} and {@link #removeFound} cost O(log n) for n
 *       extents; {@link #count()} costs O(1).
 *   <li>The tree is the {@link AvlTree} that {@link FreeExtentTree} also is, keyed by (size,
 *       address) and without subtree maxima: nodes are indices into primitive arrays and removed
 *       nodes are recycled; there is no randomness, so the same operations walk the same levels.
 * </ul>
 */
public final class ExtentSizeIndex extends AvlTree {
  /** The index that stands for "no extent". */
  public static final int NONE = AvlTree.NONE;

  // The tree (AvlTree) holds size and offset as a node's keys, two longs per node (n << 1); path[foundAt] is the node the last
  // bestFit returned.
  private int foundAt = -1;

  /** Creates an empty index with room for {@code initialCapacity} extents before it grows. */
  public ExtentSizeIndex(int initialCapacity) {
    super(initialCapacity, false);
  }

  /** Returns the number of extents. */
  public int count() {
    return count;
  }

  /** Returns the size of an extent. */
  public long sizeOf(int node) {
    return firstKey(node);
  }

  /** Returns the start address of an extent. */
  public long offsetOf(int node) {
    return secondKey(node);
  }

  /** Returns the number of tree levels the last {@link #bestFit} walked. */
  public int lastSteps() {
    return lastSteps;
  }

  /** Compares the key of node {@code n} with (sizeBytes, offsetBytes). */
  private int compareTo(int n, long sizeBytes, long offsetBytes) {
    int b = n << 1;
    int c = Long.compare(node[b], sizeBytes);
    return c != 0 ? c : Long.compare(node[b + SECOND], offsetBytes);
  }

  /**
   * Returns the extent with the smallest size of at least {@code minSizeBytes}, the lowest address
   * among equal sizes, or {@link #NONE}.
   */
  public int bestFit(long minSizeBytes) {
    long[] keys = node;
    long[] links = kids;
    int best = NONE;
    int bestAt = -1;
    int depth = 0;
    for (int n = root; n != NONE; depth++) {
      push(depth, n);
      if (keys[n << 1] >= minSizeBytes) {
        best = n;
        bestAt = depth;
        n = (int) links[n];
      } else {
        n = (int) (links[n] >>> 32);
      }
    }
    lastSteps = Math.max(1, depth);
    foundAt = bestAt;
    return best;
  }

  /** Removes the extent the last {@link #bestFit} returned; the index must not have changed since. */
  public void removeFound() {
    if (foundAt < 0) {
      throw new IllegalStateException("no extent found by the last search");
    }
    int k = foundAt;
    foundAt = -1;
    unlink(k);
    count--;
  }

  /** Adds an extent; throws IllegalArgumentException if that exact extent is already present. */
  public void add(long sizeBytes, long offsetBytes) {
    foundAt = -1;
    int depth = 0;
    int n = root;
    int c = 0;
    while (n != NONE) {
      push(depth++, n);
      c = compareTo(n, sizeBytes, offsetBytes);
      if (c == 0) {
        throw new IllegalArgumentException("extent [" + offsetBytes + ", +" + sizeBytes + ") is already indexed");
      }
      n = c > 0 ? left(n) : right(n);
    }
    int x = newNode(sizeBytes, offsetBytes);
    count++;
    if (depth == 0) {
      root = x;
      return;
    }
    int parent = path[depth - 1];
    if (c > 0) {
      setLeft(parent, x, 0);
    } else {
      setRight(parent, x, 0);
    }
    rebalanceUpwards(depth - 1, true);
  }

  /** Removes an extent; throws IllegalArgumentException if it is not present. */
  public void remove(long sizeBytes, long offsetBytes) {
    foundAt = -1;
    int depth = 0;
    for (int n = root; n != NONE; ) {
      push(depth++, n);
      int c = compareTo(n, sizeBytes, offsetBytes);
      if (c == 0) {
        unlink(depth - 1);
        count--;
        return;
      }
      n = c > 0 ? left(n) : right(n);
    }
    throw new IllegalArgumentException("extent [" + offsetBytes + ", +" + sizeBytes + ") is not indexed");
  }

  /**
   * Returns the extents in (size, address) order as two arrays, {@code {sizes, offsets}}, each of
   * {@link #count()} entries; O(n).
   */
  public long[][] toArrays() {
    return keysInOrder();
  }

  /**
   * Checks the tree's structure: (size, address) order, heights and balance, and the extent count.
   * Throws {@link InvariantViolation} naming {@code owner} when broken.
   */
  public void checkInvariants(String owner) {
    if (!sentinelIntact()) {
      throw new InvariantViolation(owner, "size index sentinel was written");
    }
    int[] stack = new int[count + 2];
    int depth = 0;
    int visited = 0;
    int previous = NONE;
    for (int n = root; n != NONE || depth > 0; ) {
      while (n != NONE) {
        if (depth == stack.length) {
          throw new InvariantViolation(owner, "size index is deeper than its extent count (cycle?)");
        }
        stack[depth++] = n;
        n = left(n);
      }
      n = stack[--depth];
      if (++visited > count) {
        throw new InvariantViolation(owner, "size index holds more nodes than its count " + count);
      }
      if (sizeOf(n) <= 0 || offsetOf(n) < 0) {
        throw new InvariantViolation(owner, "size index holds extent [" + offsetOf(n) + ", +" + sizeOf(n) + ")");
      }
      if (previous != NONE && compareTo(previous, sizeOf(n), offsetOf(n)) >= 0) {
        throw new InvariantViolation(
            owner, "size index out of order at extent [" + offsetOf(n) + ", +" + sizeOf(n) + ")");
      }
      int l = left(n);
      int r = right(n);
      if (height[n] != heightFromKids(n) || Math.abs(height[l] - height[r]) > 1) {
        throw new InvariantViolation(
            owner, "size index out of balance at extent [" + offsetOf(n) + ", +" + sizeOf(n) + ")");
      }
      previous = n;
      n = r;
    }
    if (visited != count) {
      throw new InvariantViolation(owner, "size index holds " + visited + " extents, its count says " + count);
    }
  }
}

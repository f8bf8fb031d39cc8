package kvsim.alloc.support;

import java.util.Arrays;
import kvsim.alloc.InvariantViolation;

/**
 * The free extents of one address range, ordered by address, in a treap whose nodes also carry the
 * largest free size in their subtree. It is mechanism only: which extent to pick and which end of
 * it to cut is the caller's policy.
 *
 * <ul>
 *   <li>Extents never overlap and never touch: {@link #insert} merges a new extent with the one
 *       that ends where it starts and the one that starts where it ends.
 *   <li>{@link #firstFit} returns the lowest-address extent of at least a given size, {@link
 *       #takeLow} cuts bytes off an extent's low end and {@link #remove} drops a whole extent. All
 *       three, and {@link #insert}, cost O(log n) expected for n extents; {@link #largestBytes()},
 *       {@link #extentCount()} and {@link #freeBytes()} cost O(1).
 *   <li>Nodes are indices into parallel primitive arrays; removed nodes are recycled, so a steady
 *       workload allocates nothing.
 * </ul>
 *
 * <p>Note [Deterministic treap]: a treap keeps its shape balanced in expectation by giving each
 * node a random priority and keeping the priorities heap-ordered. Here the priorities come from a
 * SplitMix64 sequence with a fixed seed, one value per node creation, so the same sequence of
 * operations always builds the same tree: the tree levels walked, which the latency models charge
 * for, are reproducible across runs and machines.
 *
 * <p>Note [Augmented maximum]: each node stores the largest extent size in its subtree. The
 * first-fit descent goes left whenever the left subtree can hold the request, which finds the
 * lowest-address fit in one root-to-node walk. After a change the maxima are recomputed upwards and
 * the walk stops at the first node whose maximum did not change, since nothing above it can change
 * either.
 */
public final class FreeExtentTree {
  /** The index that stands for "no extent". */
  public static final int NONE = 0;

  private static final long PRIORITY_SEED = 0x6A09E667F3BCC908L;

  // Node 0 is the sentinel NONE: size and max stay 0, so a missing child never fits anything.
  private long[] offset;
  private long[] size;
  private long[] max;
  private int[] left;
  private int[] right;
  private int[] parent;
  private int[] priority;

  private int root = NONE;
  private int recycled = NONE; // chain of removed nodes through right[]
  private int nextUnused = 1;
  private int count;
  private long totalBytes;
  private long priorityState = PRIORITY_SEED;
  private int lastSteps;

  /** Creates an empty tree. */
  public FreeExtentTree() {
    this(64);
  }

  /** Creates an empty tree with room for {@code initialCapacity} extents before it grows. */
  public FreeExtentTree(int initialCapacity) {
    int n = Math.max(2, initialCapacity + 1);
    offset = new long[n];
    size = new long[n];
    max = new long[n];
    left = new int[n];
    right = new int[n];
    parent = new int[n];
    priority = new int[n];
  }

  /** Returns the number of free extents. */
  public int extentCount() {
    return count;
  }

  /** Returns the sum of the free extents' sizes. */
  public long freeBytes() {
    return totalBytes;
  }

  /** Returns the size of the largest free extent, 0 when there is none. */
  public long largestBytes() {
    return max[root];
  }

  /** Returns the number of tree levels the last {@link #firstFit} or {@link #insert} walked. */
  public int lastSteps() {
    return lastSteps;
  }

  /** Returns the start address of an extent. */
  public long offsetOf(int node) {
    return offset[node];
  }

  /** Returns the size of an extent. */
  public long sizeOf(int node) {
    return size[node];
  }

  /** Returns the lowest-address extent of at least {@code minSizeBytes}, or {@link #NONE}. */
  public int firstFit(long minSizeBytes) {
    if (minSizeBytes <= 0) {
      throw new IllegalArgumentException("size must be positive, got " + minSizeBytes);
    }
    int n = root;
    int steps = 1;
    if (max[n] < minSizeBytes) {
      lastSteps = steps;
      return NONE;
    }
    while (true) {
      int l = left[n];
      if (max[l] >= minSizeBytes) {
        n = l;
      } else if (size[n] >= minSizeBytes) {
        break;
      } else {
        n = right[n]; // its maximum fits, since this subtree's does and neither l nor n do
      }
      steps++;
    }
    lastSteps = steps;
    return n;
  }

  /**
   * Cuts {@code sizeBytes} off the low end of an extent, removing it when nothing is left, and
   * returns the start address of the bytes cut off.
   */
  public long takeLow(int node, long sizeBytes) {
    long have = size[node];
    if (node == NONE || sizeBytes <= 0 || sizeBytes > have) {
      throw new IllegalArgumentException(
          "cannot take " + sizeBytes + " B from extent " + node + " of " + have + " B");
    }
    long at = offset[node];
    totalBytes -= sizeBytes;
    if (sizeBytes == have) {
      unlink(node);
      count--;
    } else {
      offset[node] = at + sizeBytes;
      size[node] = have - sizeBytes;
      fixMaxUpwards(node);
    }
    return at;
  }

  /** Removes a whole extent from the free set. */
  public void remove(int node) {
    if (node == NONE || size[node] <= 0) {
      throw new IllegalArgumentException("extent " + node + " is not in the tree");
    }
    totalBytes -= size[node];
    count--;
    unlink(node);
  }

  /**
   * Adds [offset, offset + size) to the free set, merged with the extents that touch it, and
   * returns the node that now holds it; throws IllegalArgumentException if it overlaps a free
   * extent.
   */
  public int insert(long offsetBytes, long sizeBytes) {
    if (sizeBytes <= 0 || offsetBytes < 0) {
      throw new IllegalArgumentException("bad extent [" + offsetBytes + ", +" + sizeBytes + ")");
    }
    long end = offsetBytes + sizeBytes;
    int pred = NONE;
    int succ = NONE;
    int last = NONE;
    int steps = 0;
    for (int n = root; n != NONE; ) {
      steps++;
      last = n;
      if (offset[n] < offsetBytes) {
        pred = n;
        n = right[n];
      } else {
        succ = n;
        n = left[n];
      }
    }
    lastSteps = steps;
    long predEnd = pred == NONE ? Long.MIN_VALUE : offset[pred] + size[pred];
    if (predEnd > offsetBytes || (succ != NONE && offset[succ] < end)) {
      throw new IllegalArgumentException(
          "extent [" + offsetBytes + ", +" + sizeBytes + ") overlaps a free extent");
    }
    boolean joinPred = predEnd == offsetBytes;
    boolean joinSucc = succ != NONE && offset[succ] == end;
    totalBytes += sizeBytes;
    if (joinPred && joinSucc) {
      long grown = size[pred] + sizeBytes + size[succ];
      unlink(succ);
      count--;
      size[pred] = grown;
      fixMaxUpwards(pred);
      return pred;
    }
    if (joinPred) {
      size[pred] += sizeBytes;
      fixMaxUpwards(pred);
      return pred;
    }
    if (joinSucc) {
      offset[succ] = offsetBytes; // still after pred, which ends before offsetBytes
      size[succ] += sizeBytes;
      fixMaxUpwards(succ);
      return succ;
    }
    int x = newNode(offsetBytes, sizeBytes);
    count++;
    parent[x] = last;
    if (last == NONE) {
      root = x;
    } else if (offset[last] < offsetBytes) {
      right[last] = x;
    } else {
      left[last] = x;
    }
    while (parent[x] != NONE && priority[x] > priority[parent[x]]) {
      rotateUp(x);
    }
    fixMaxUpwards(parent[x]);
    return x;
  }

  /** Returns the lowest-address extent, or {@link #NONE} when the tree is empty. */
  public int first() {
    int n = root;
    if (n == NONE) {
      return NONE;
    }
    while (left[n] != NONE) {
      n = left[n];
    }
    return n;
  }

  /** Returns the extent after {@code node} in address order, or {@link #NONE}. */
  public int next(int node) {
    if (right[node] != NONE) {
      int n = right[node];
      while (left[n] != NONE) {
        n = left[n];
      }
      return n;
    }
    int n = node;
    int p = parent[n];
    while (p != NONE && right[p] == n) {
      n = p;
      p = parent[p];
    }
    return p;
  }

  /**
   * Checks the tree's structure: address order, no overlapping or touching extents, parent links,
   * heap-ordered priorities, correct subtree maxima, extent count and free bytes. Throws {@link
   * InvariantViolation} naming {@code owner} when broken.
   */
  public void checkInvariants(String owner) {
    if (size[NONE] != 0 || max[NONE] != 0) {
      throw new InvariantViolation(owner, "free-extent tree sentinel was written");
    }
    if (root != NONE && parent[root] != NONE) {
      throw new InvariantViolation(owner, "free-extent tree root has a parent");
    }
    int[] stack = new int[count + 2];
    int depth = 0;
    int visited = 0;
    long bytes = 0;
    long previousEnd = Long.MIN_VALUE;
    int n = root;
    while (n != NONE || depth > 0) {
      while (n != NONE) {
        if (depth == stack.length) {
          throw new InvariantViolation(owner, "free-extent tree is deeper than its extent count (cycle?)");
        }
        stack[depth++] = n;
        n = left[n];
      }
      n = stack[--depth];
      if (++visited > count) {
        throw new InvariantViolation(owner, "free-extent tree holds more nodes than its count " + count);
      }
      checkNode(owner, n);
      if (offset[n] <= previousEnd) {
        String what = offset[n] == previousEnd ? "touches" : "overlaps or precedes";
        throw new InvariantViolation(
            owner, "free extent at " + offset[n] + " " + what + " the one ending at " + previousEnd);
      }
      previousEnd = offset[n] + size[n];
      bytes += size[n];
      n = right[n];
    }
    if (visited != count || bytes != totalBytes) {
      throw new InvariantViolation(
          owner,
          "free-extent tree holds " + visited + " extents / " + bytes + " B, counters say "
              + count + " / " + totalBytes + " B");
    }
  }

  private void checkNode(String owner, int n) {
    if (size[n] <= 0 || offset[n] < 0) {
      throw new InvariantViolation(owner, "free extent " + n + " is [" + offset[n] + ", +" + size[n] + ")");
    }
    int l = left[n];
    int r = right[n];
    if ((l != NONE && parent[l] != n) || (r != NONE && parent[r] != n)) {
      throw new InvariantViolation(owner, "free-extent tree parent links broken at offset " + offset[n]);
    }
    if ((l != NONE && priority[l] > priority[n]) || (r != NONE && priority[r] > priority[n])) {
      throw new InvariantViolation(owner, "free-extent tree heap order broken at offset " + offset[n]);
    }
    long expected = Math.max(size[n], Math.max(max[l], max[r]));
    if (max[n] != expected) {
      throw new InvariantViolation(
          owner, "subtree maximum at offset " + offset[n] + " is " + max[n] + ", expected " + expected);
    }
  }

  private void fixMaxUpwards(int node) {
    for (int n = node; n != NONE; n = parent[n]) {
      long m = Math.max(size[n], Math.max(max[left[n]], max[right[n]]));
      if (m == max[n]) {
        return;
      }
      max[n] = m;
    }
  }

  /** Rotates {@code x} above its parent, keeping address order and both nodes' maxima. */
  private void rotateUp(int x) {
    int p = parent[x];
    int g = parent[p];
    if (left[p] == x) {
      int b = right[x];
      left[p] = b;
      parent[b] = p; // harmless on the sentinel
      right[x] = p;
    } else {
      int b = left[x];
      right[p] = b;
      parent[b] = p;
      left[x] = p;
    }
    parent[p] = x;
    parent[x] = g;
    if (g == NONE) {
      root = x;
    } else if (left[g] == p) {
      left[g] = x;
    } else {
      right[g] = x;
    }
    parent[NONE] = NONE;
    max[p] = Math.max(size[p], Math.max(max[left[p]], max[right[p]]));
    max[x] = Math.max(size[x], Math.max(max[left[x]], max[right[x]]));
  }

  /** Takes a node out of the tree (rotating it down to at most one child) and recycles it. */
  private void unlink(int node) {
    while (left[node] != NONE && right[node] != NONE) {
      int l = left[node];
      int r = right[node];
      rotateUp(priority[l] > priority[r] ? l : r);
    }
    int child = left[node] != NONE ? left[node] : right[node];
    int p = parent[node];
    if (child != NONE) {
      parent[child] = p;
    }
    if (p == NONE) {
      root = child;
    } else if (left[p] == node) {
      left[p] = child;
    } else {
      right[p] = child;
    }
    size[node] = 0;
    max[node] = 0;
    left[node] = NONE;
    parent[node] = NONE;
    right[node] = recycled;
    recycled = node;
    fixMaxUpwards(p);
  }

  private int newNode(long offsetBytes, long sizeBytes) {
    int x;
    if (recycled != NONE) {
      x = recycled;
      recycled = right[x];
    } else {
      if (nextUnused == offset.length) {
        grow();
      }
      x = nextUnused++;
    }
    offset[x] = offsetBytes;
    size[x] = sizeBytes;
    max[x] = sizeBytes;
    left[x] = NONE;
    right[x] = NONE;
    parent[x] = NONE;
    priority[x] = nextPriority();
    return x;
  }

  private int nextPriority() {
    long z = (priorityState += 0x9E3779B97F4A7C15L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return (int) ((z ^ (z >>> 31)) >>> 32);
  }

  private void grow() {
    int n = offset.length * 2;
    offset = Arrays.copyOf(offset, n);
    size = Arrays.copyOf(size, n);
    max = Arrays.copyOf(max, n);
    left = Arrays.copyOf(left, n);
    right = Arrays.copyOf(right, n);
    parent = Arrays.copyOf(parent, n);
    priority = Arrays.copyOf(priority, n);
  }
}

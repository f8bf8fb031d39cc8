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
 *   <li>Nodes are indices into primitive arrays and removed nodes are recycled, as in {@link
 *       FreeExtentTree}; there is no randomness, so the same operations walk the same levels.
 * </ul>
 */
public final class ExtentSizeIndex {
  /** The index that stands for "no extent". */
  public static final int NONE = 0;

  private static final long LOW = 0xFFFF_FFFFL;

  // Node 0 is the sentinel NONE: its keys and height stay 0.
  private long[] key; // size at 2n, offset at 2n + 1
  private long[] kids; // left child in the low 32 bits, right child in the high 32
  private byte[] height; // 1 for a leaf

  private int root = NONE;
  private int recycled = NONE; // chain of removed nodes through their left links
  private int nextUnused = 1;
  private int count;
  private int lastSteps;

  // The root-to-node path of the last search; path[foundAt] is the node bestFit returned.
  private int[] path = new int[64];
  private int foundAt = -1;

  /** Creates an empty index with room for {@code initialCapacity} extents before it grows. */
  public ExtentSizeIndex(int initialCapacity) {
    int n = Math.max(2, initialCapacity + 1);
    key = new long[2 * n];
    kids = new long[n];
    height = new byte[n];
  }

  /** Returns the number of extents. */
  public int count() {
    return count;
  }

  /** Returns the size of an extent. */
  public long sizeOf(int node) {
    return key[2 * node];
  }

  /** Returns the start address of an extent. */
  public long offsetOf(int node) {
    return key[2 * node + 1];
  }

  /** Returns the number of tree levels the last {@link #bestFit} walked. */
  public int lastSteps() {
    return lastSteps;
  }

  private int left(int n) {
    return (int) kids[n];
  }

  private int right(int n) {
    return (int) (kids[n] >>> 32);
  }

  private void setLeft(int n, int child) {
    kids[n] = (kids[n] & ~LOW) | (child & LOW);
  }

  private void setRight(int n, int child) {
    kids[n] = (kids[n] & LOW) | ((long) child << 32);
  }

  /** Compares the key of node {@code n} with (sizeBytes, offsetBytes). */
  private int compareTo(int n, long sizeBytes, long offsetBytes) {
    int c = Long.compare(key[2 * n], sizeBytes);
    return c != 0 ? c : Long.compare(key[2 * n + 1], offsetBytes);
  }

  private void push(int at, int n) {
    if (at == path.length) {
      path = Arrays.copyOf(path, at * 2);
    }
    path[at] = n;
  }

  /**
   * Returns the extent with the smallest size of at least {@code minSizeBytes}, the lowest address
   * among equal sizes, or {@link #NONE}.
   */
  public int bestFit(long minSizeBytes) {
    long[] keys = key;
    long[] links = kids;
    int best = NONE;
    int bestAt = -1;
    int depth = 0;
    for (int n = root; n != NONE; depth++) {
      push(depth, n);
      if (keys[2 * n] >= minSizeBytes) {
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
      setLeft(parent, x);
    } else {
      setRight(parent, x);
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
        return;
      }
      n = c > 0 ? left(n) : right(n);
    }
    throw new IllegalArgumentException("extent [" + offsetBytes + ", +" + sizeBytes + ") is not indexed");
  }

  /**
   * Takes the node at path position {@code k} out of the tree and recycles a node. A node with two
   * children takes over its successor's key and the successor's node goes instead.
   */
  private void unlink(int k) {
    int n = path[k];
    int gone = n;
    int at = k;
    if (left(n) != NONE && right(n) != NONE) {
      int s = right(n);
      push(++at, s);
      while (left(s) != NONE) {
        s = left(s);
        push(++at, s);
      }
      key[2 * n] = key[2 * s];
      key[2 * n + 1] = key[2 * s + 1];
      gone = s;
    }
    int child = left(gone) != NONE ? left(gone) : right(gone);
    int parent = at > 0 ? path[at - 1] : NONE;
    if (parent == NONE) {
      root = child;
    } else if (left(parent) == gone) {
      setLeft(parent, child);
    } else {
      setRight(parent, child);
    }
    key[2 * gone] = 0;
    key[2 * gone + 1] = 0;
    kids[gone] = recycled & LOW;
    height[gone] = 0;
    recycled = gone;
    count--;
    if (at > 0) {
      rebalanceUpwards(at - 1, false);
    }
  }

  /**
   * Restores heights and balance on path[k], path[k − 1], ... after a node was added below
   * ({@code grew}) or removed. An insertion needs at most one (single or double) rotation; a
   * removal may need one per level. Stops where a height no longer changes.
   */
  private void rebalanceUpwards(int k, boolean grew) {
    for (int i = k; i >= 0; i--) {
      int n = path[i];
      int hl = height[left(n)];
      int hr = height[right(n)];
      int before = height[n];
      int balance = hl - hr;
      if (balance > 1 || balance < -1) {
        int top = rotateToBalance(n, balance);
        relink(i > 0 ? path[i - 1] : NONE, n, top);
        path[i] = top;
        if (grew || height[top] == before) {
          return;
        }
      } else {
        int after = 1 + Math.max(hl, hr);
        if (after == before) {
          return;
        }
        height[n] = (byte) after;
      }
    }
  }

  /** Rebalances the subtree of {@code n} and returns its new root (not yet linked to the parent). */
  private int rotateToBalance(int n, int balance) {
    if (balance > 1) {
      int l = left(n);
      if (height[left(l)] < height[right(l)]) {
        setLeft(n, rotateLeft(l));
      }
      return rotateRight(n);
    }
    int r = right(n);
    if (height[right(r)] < height[left(r)]) {
      setRight(n, rotateRight(r));
    }
    return rotateLeft(n);
  }

  private int rotateRight(int n) {
    int l = left(n);
    setLeft(n, right(l));
    setRight(l, n);
    height[n] = (byte) heightFromKids(n);
    height[l] = (byte) heightFromKids(l);
    return l;
  }

  private int rotateLeft(int n) {
    int r = right(n);
    setRight(n, left(r));
    setLeft(r, n);
    height[n] = (byte) heightFromKids(n);
    height[r] = (byte) heightFromKids(r);
    return r;
  }

  private void relink(int parent, int old, int child) {
    if (parent == NONE) {
      root = child;
    } else if (left(parent) == old) {
      setLeft(parent, child);
    } else {
      setRight(parent, child);
    }
  }

  private int heightFromKids(int n) {
    return 1 + Math.max(height[left(n)], height[right(n)]);
  }

  private int newNode(long sizeBytes, long offsetBytes) {
    int x;
    if (recycled != NONE) {
      x = recycled;
      recycled = left(x);
    } else {
      if (nextUnused == height.length) {
        int n = height.length * 2;
        key = Arrays.copyOf(key, 2 * n);
        kids = Arrays.copyOf(kids, n);
        height = Arrays.copyOf(height, n);
      }
      x = nextUnused++;
    }
    key[2 * x] = sizeBytes;
    key[2 * x + 1] = offsetBytes;
    kids[x] = 0;
    height[x] = 1;
    return x;
  }

  /**
   * Returns the extents in (size, address) order as two arrays, {@code {sizes, offsets}}, each of
   * {@link #count()} entries; O(n).
   */
  public long[][] toArrays() {
    long[] sizes = new long[count];
    long[] offsets = new long[count];
    int[] stack = new int[height[root] + 1];
    int depth = 0;
    int i = 0;
    for (int n = root; n != NONE || depth > 0; ) {
      while (n != NONE) {
        stack[depth++] = n;
        n = left(n);
      }
      n = stack[--depth];
      sizes[i] = sizeOf(n);
      offsets[i] = offsetOf(n);
      i++;
      n = right(n);
    }
    return new long[][] {sizes, offsets};
  }

  /**
   * Checks the tree's structure: (size, address) order, heights and balance, and the extent count.
   * Throws {@link InvariantViolation} naming {@code owner} when broken.
   */
  public void checkInvariants(String owner) {
    if (key[0] != 0 || key[1] != 0 || kids[NONE] != 0 || height[NONE] != 0) {
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

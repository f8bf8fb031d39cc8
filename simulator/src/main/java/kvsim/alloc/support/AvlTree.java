package kvsim.alloc.support;

import java.util.Arrays;

/**
 * An AVL tree (Adelson-Velsky and Landis, 1962) of nodes keyed by two longs, ordered by (first key,
 * second key), held in primitive arrays, optionally augmented with the largest second key in each
 * subtree: the storage, node lifecycle, rotations, rebalancing and removal that {@link
 * FreeExtentTree} (keys: offset, size; augmented, Note [Augmented maximum] there) and {@link
 * ExtentSizeIndex} (keys: size, offset) share. Searches and insertion descents are the subclasses'
 * own, since each walks its tree its own way; they record the nodes they pass in {@link #path} (Note
 * [Path stack] on {@code FreeExtentTree}), from which the shared operations work upwards.
 *
 * <p>Layout (Note [Node layout] on {@code FreeExtentTree}): four longs per node in {@link #node}
 * (first key, second key, maximum of the left subtree, maximum of the right subtree) when the tree
 * keeps maxima, two (the keys) when it does not, so the size index stays as compact as it was; the child links
 * as two ints packed in one long of {@link #kids}, heights in {@link #height}. Node 0 is the sentinel
 * {@link #NONE}: all its fields stay 0, its height too. Removed nodes are recycled through their left
 * links, so a steady workload allocates nothing. There is no randomness: the same operations build
 * the same tree and walk the same levels.
 *
 * <p>Note [One tree, no hooks]: the shared code calls nothing its subclasses override; the one
 * difference, whether nodes carry subtree maxima, is the final field {@link #keepsMaxima} (and the
 * node size {@link #shift} that follows from it), tested where maxima are written. Without them
 * (the size index) a node is two longs and a rotation or removal only relinks, as the index did
 * before it shared this tree.
 */
abstract sealed class AvlTree permits FreeExtentTree, ExtentSizeIndex {
  /** The index that stands for "no node". */
  static final int NONE = 0;

  static final int STRIDE_SHIFT = 2; // four longs per node
  static final int SECOND = 1;
  static final int LEFT_MAX = 2;
  static final int RIGHT_MAX = 3;
  static final long LOW = 0xFFFF_FFFFL;

  /** Whether nodes carry the subtree maxima of the second key (four longs per node, else two). */
  final boolean keepsMaxima;
  /** log2 of the longs per node: 2 with maxima, 1 without. */
  final int shift;

  long[] node; // first key, second key, left subtree maximum, right subtree maximum
  long[] kids; // left child in the low 32 bits, right child in the high 32
  byte[] height; // 1 for a leaf

  int root = NONE;
  int recycled = NONE; // chain of removed nodes through their left links
  int nextUnused = 1;
  int count;
  int lastSteps;

  // The root-to-node path of the last descent; the shared operations work up from it.
  int[] path = new int[64];

  /** Creates an empty tree with room for {@code initialCapacity} nodes before it grows. */
  AvlTree(int initialCapacity, boolean keepsMaxima) {
    int n = Math.max(2, initialCapacity + 1);
    this.keepsMaxima = keepsMaxima;
    this.shift = keepsMaxima ? STRIDE_SHIFT : 1;
    node = new long[n << shift];
    kids = new long[n];
    height = new byte[n];
  }

  final long firstKey(int n) {
    return node[n << shift];
  }

  final long secondKey(int n) {
    return node[(n << shift) + SECOND];
  }

  final int left(int n) {
    return (int) kids[n];
  }

  final int right(int n) {
    return (int) (kids[n] >>> 32);
  }

  /** Returns the largest second key in the subtree of {@code n}; 0 for {@link #NONE}. With maxima only. */
  final long subtreeMax(int n) {
    int b = n << STRIDE_SHIFT;
    return larger(node[b + SECOND], larger(node[b + LEFT_MAX], node[b + RIGHT_MAX]));
  }

  /** Returns the larger of two values without a branch (both lie in [0, 2^62): a − b cannot overflow). */
  static long larger(long a, long b) {
    long d = a - b;
    return a - (d & (d >> 63));
  }

  /** Returns the field of {@code parent} that holds the maximum of its child {@code child}'s side. */
  final int sideMaxIndex(int parent, int child) {
    int differs = (int) kids[parent] ^ child; // 0 when child is the left child
    int isRight = (differs | -differs) >>> 31;
    return (parent << STRIDE_SHIFT) + LEFT_MAX + isRight;
  }

  /** Links {@code child} left of {@code n}; {@code childMax} is its subtree maximum (ignored without maxima). */
  final void setLeft(int n, int child, long childMax) {
    kids[n] = (kids[n] & ~LOW) | (child & LOW);
    if (keepsMaxima) {
      node[(n << STRIDE_SHIFT) + LEFT_MAX] = childMax;
    }
  }

  /** Links {@code child} right of {@code n}; {@code childMax} is its subtree maximum (ignored without maxima). */
  final void setRight(int n, int child, long childMax) {
    kids[n] = (kids[n] & LOW) | ((long) child << 32);
    if (keepsMaxima) {
      node[(n << STRIDE_SHIFT) + RIGHT_MAX] = childMax;
    }
  }

  /** Puts {@code child} where {@code old} hung under {@code parent} (or at the root); same maximum. */
  final void relink(int parent, int old, int child) {
    if (parent == NONE) {
      root = child;
    } else if (left(parent) == old) {
      kids[parent] = (kids[parent] & ~LOW) | (child & LOW);
    } else {
      kids[parent] = (kids[parent] & LOW) | ((long) child << 32);
    }
  }

  /** Returns the height {@code n} should have from its children's. */
  final int heightFromKids(int n) {
    return 1 + Math.max(height[left(n)], height[right(n)]);
  }

  final void push(int at, int n) {
    if (at == path.length) {
      path = Arrays.copyOf(path, at * 2);
    }
    path[at] = n;
  }

  /**
   * Updates the maxima above path[k], whose subtree maximum may have changed, stopping at the first
   * ancestor whose stored maximum for that side holds, but not below path[mustReach].
   */
  final void fixMaxUpwards(int k, int mustReach) {
    long[] nodes = node;
    int[] stack = path;
    for (int i = k; i > 0; i--) {
      int child = stack[i];
      int at = sideMaxIndex(stack[i - 1], child);
      long m = subtreeMax(child);
      if (nodes[at] == m && i <= mustReach) {
        return;
      }
      nodes[at] = m;
    }
  }

  /**
   * Raises the maxima above path[k], whose subtree now holds a second key of {@code value}, to at
   * least that value, stopping at the first ancestor that already holds as much on that side.
   */
  final void raiseMaxUpwards(int k, long value) {
    long[] nodes = node;
    int[] stack = path;
    for (int i = k; i > 0; i--) {
      int at = sideMaxIndex(stack[i - 1], stack[i]);
      if (nodes[at] >= value) {
        return;
      }
      nodes[at] = value;
    }
  }

  /**
   * Restores heights and balance on path[k], path[k − 1], ... after a node was added below
   * ({@code grew}) or removed. An insertion needs at most one (single or double) rotation; a
   * removal may need one per level. Stops where a height no longer changes.
   */
  final void rebalanceUpwards(int k, boolean grew) {
    byte[] heights = height;
    for (int i = k; i >= 0; i--) {
      int n = path[i];
      long links = kids[n];
      int hl = heights[(int) links];
      int hr = heights[(int) (links >>> 32)];
      int before = heights[n];
      int balance = hl - hr;
      if (balance > 1 || balance < -1) {
        n = rotateToBalance(n, i > 0 ? path[i - 1] : NONE, balance);
        path[i] = n;
        if (grew || height[n] == before) {
          return;
        }
      } else {
        int after = 1 + Math.max(hl, hr);
        if (after == before) {
          return;
        }
        heights[n] = (byte) after;
      }
    }
  }

  /** Rebalances the subtree of {@code n} (child of {@code parent}) and returns its new root. */
  private int rotateToBalance(int n, int parent, int balance) {
    if (balance > 1) {
      int l = left(n);
      if (height[left(l)] < height[right(l)]) {
        int lr = right(l);
        rotateUp(lr, l, n);
        l = lr;
      }
      rotateUp(l, n, parent);
      return l;
    }
    int r = right(n);
    if (height[right(r)] < height[left(r)]) {
      int rl = left(r);
      rotateUp(rl, r, n);
      r = rl;
    }
    rotateUp(r, n, parent);
    return r;
  }

  /**
   * Rotates {@code x} above its parent {@code p} (child of {@code g}). The subtree at that position
   * keeps its nodes, so {@code g}'s maximum for it stands; {@code p} and {@code x} get new maxima
   * and heights.
   */
  private void rotateUp(int x, int p, int g) {
    if (!keepsMaxima) {
      if (left(p) == x) {
        setLeft(p, right(x), 0);
        setRight(x, p, 0);
      } else {
        setRight(p, left(x), 0);
        setLeft(x, p, 0);
      }
    } else if (left(p) == x) {
      setLeft(p, right(x), node[(x << STRIDE_SHIFT) + RIGHT_MAX]);
      setRight(x, p, subtreeMax(p));
    } else {
      setRight(p, left(x), node[(x << STRIDE_SHIFT) + LEFT_MAX]);
      setLeft(x, p, subtreeMax(p));
    }
    relink(g, p, x);
    height[p] = (byte) heightFromKids(p);
    height[x] = (byte) heightFromKids(x);
  }

  /**
   * Takes the node at path position {@code k} out of the tree and recycles a node; updates the
   * maxima (if kept) and rebalances above. A node with two children takes over its successor's keys
   * and the successor's node goes instead, so the node that held the next keys may change identity.
   * Leaves {@link #count} to the caller.
   */
  final void unlink(int k) {
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
      int nb = n << shift;
      int sb = s << shift;
      node[nb] = node[sb];
      node[nb + SECOND] = node[sb + SECOND];
      gone = s;
    }
    int child = left(gone) != NONE ? left(gone) : right(gone);
    int parent = at > 0 ? path[at - 1] : NONE;
    long childMax = keepsMaxima ? subtreeMax(child) : 0;
    if (parent == NONE) {
      root = child;
    } else if (left(parent) == gone) {
      setLeft(parent, child, childMax);
    } else {
      setRight(parent, child, childMax);
    }
    int b = gone << shift;
    node[b] = 0;
    node[b + SECOND] = 0;
    if (keepsMaxima) {
      node[b + LEFT_MAX] = 0;
      node[b + RIGHT_MAX] = 0;
    }
    kids[gone] = recycled & LOW;
    height[gone] = 0;
    recycled = gone;
    if (at > 0) {
      if (keepsMaxima) {
        // path[at - 1] lost a child; path[k] (if it took the successor's keys) changed its second key.
        fixMaxUpwards(at - 1, Math.min(k, at - 1));
      }
      rebalanceUpwards(at - 1, false);
    }
  }

  /** Takes a fresh or recycled node with the given keys, no children and height 1. */
  final int newNode(long firstKey, long secondKey) {
    int x;
    if (recycled != NONE) {
      x = recycled;
      recycled = left(x);
    } else {
      if (nextUnused == height.length) {
        grow();
      }
      x = nextUnused++;
    }
    int b = x << shift;
    node[b] = firstKey;
    node[b + SECOND] = secondKey;
    if (keepsMaxima) {
      node[b + LEFT_MAX] = 0;
      node[b + RIGHT_MAX] = 0;
    }
    kids[x] = 0;
    height[x] = 1;
    return x;
  }

  private void grow() {
    int n = height.length * 2;
    node = Arrays.copyOf(node, n << shift);
    kids = Arrays.copyOf(kids, n);
    height = Arrays.copyOf(height, n);
  }

  /**
   * Returns the keys in tree order as two arrays, {@code {first keys, second keys}}, each of {@link
   * #count} entries; O(n).
   */
  final long[][] keysInOrder() {
    long[] firsts = new long[count];
    long[] seconds = new long[count];
    int[] stack = new int[height[root] + 1];
    int depth = 0;
    int i = 0;
    int n = root;
    while (n != NONE || depth > 0) {
      while (n != NONE) {
        stack[depth++] = n;
        n = left(n);
      }
      n = stack[--depth];
      firsts[i] = firstKey(n);
      seconds[i] = secondKey(n);
      i++;
      n = right(n);
    }
    return new long[][] {firsts, seconds};
  }

  /** Returns whether node 0, the sentinel, still has all fields, links and height 0. */
  final boolean sentinelIntact() {
    for (int i = 0; i < (1 << shift); i++) {
      if (node[i] != 0) {
        return false;
      }
    }
    return kids[NONE] == 0 && height[NONE] == 0;
  }
}

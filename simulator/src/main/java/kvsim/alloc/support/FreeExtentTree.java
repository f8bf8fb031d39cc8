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
 *   <li>Nodes are indices into primitive arrays; removed nodes are recycled, so a steady workload
 *       allocates nothing.
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
 *
 * <p>Note [Path stack]: nodes keep no parent links. Every change starts with a descent from the
 * root (the first-fit search, the neighbour search of an insert, or a search by address), which
 * records the nodes it passes in a small stack; rotations and the upward walks of the maxima use
 * that stack. The nodes on it were just read, so walking back up costs cache hits, not a chain of
 * dependent loads through parent links.
 *
 * <p>Note [Node layout]: the fields every search reads (offset, size, subtree maximum and both
 * children, packed into one long) sit side by side in one {@code long[]}, four longs per node, so a
 * level of a search touches one node's memory instead of one slot in each of several arrays. The
 * searches pick the child to follow arithmetically (left is side 0, right side 1) instead of by a
 * branch, since which way a search turns is as unpredictable as the addresses are. Priorities,
 * read only when the shape changes, live in an array of their own.
 */
public final class FreeExtentTree {
  /** The index that stands for "no extent". */
  public static final int NONE = 0;

  private static final long PRIORITY_SEED = 0x6A09E667F3BCC908L;
  private static final int STRIDE_SHIFT = 2; // four longs per node
  private static final int SIZE = 1;
  private static final int MAX = 2;
  private static final int KIDS = 3; // left child in the low 32 bits, right child in the high 32
  private static final long LOW = 0xFFFF_FFFFL;

  // Node 0 is the sentinel NONE: all its fields stay 0, so a missing child never fits anything.
  private long[] node;
  private int[] priority;

  private int root = NONE;
  private int recycled = NONE; // chain of removed nodes through their left links
  private int nextUnused = 1;
  private int count;
  private long totalBytes;
  private long priorityState = PRIORITY_SEED;
  private int lastSteps;

  // The root-to-node path of the last first-fit search (Note [Path stack]); valid until a change.
  private int[] path = new int[64];
  private int pathLength;
  private boolean pathValid;

  /** Creates an empty tree. */
  public FreeExtentTree() {
    this(64);
  }

  /** Creates an empty tree with room for {@code initialCapacity} extents before it grows. */
  public FreeExtentTree(int initialCapacity) {
    int n = Math.max(2, initialCapacity + 1);
    node = new long[n << STRIDE_SHIFT];
    priority = new int[n];
  }

  private long offset(int n) {
    return node[n << STRIDE_SHIFT];
  }

  private long size(int n) {
    return node[(n << STRIDE_SHIFT) + SIZE];
  }

  private long max(int n) {
    return node[(n << STRIDE_SHIFT) + MAX];
  }

  private int left(int n) {
    return (int) node[(n << STRIDE_SHIFT) + KIDS];
  }

  private int right(int n) {
    return (int) (node[(n << STRIDE_SHIFT) + KIDS] >>> 32);
  }

  private void setLeft(int n, int child) {
    int i = (n << STRIDE_SHIFT) + KIDS;
    node[i] = (node[i] & ~LOW) | (child & LOW);
  }

  private void setRight(int n, int child) {
    int i = (n << STRIDE_SHIFT) + KIDS;
    node[i] = (node[i] & LOW) | ((long) child << 32);
  }

  /** Replaces {@code old} by {@code child} under {@code parent} (or at the root). */
  private void replaceChild(int parent, int old, int child) {
    if (parent == NONE) {
      root = child;
    } else if (left(parent) == old) {
      setLeft(parent, child);
    } else {
      setRight(parent, child);
    }
  }

  /** Returns the subtree maximum {@code n} should hold: its size or its children's maxima. */
  private long subtreeMax(int n) {
    int b = n << STRIDE_SHIFT;
    long kids = node[b + KIDS];
    long l = node[((int) kids << STRIDE_SHIFT) + MAX];
    long r = node[((int) (kids >>> 32) << STRIDE_SHIFT) + MAX];
    return larger(node[b + SIZE], larger(l, r));
  }

  /** Returns the larger of two sizes without a branch (both are in [0, 2^62), so a − b cannot overflow). */
  private static long larger(long a, long b) {
    long d = a - b;
    return a - (d & (d >> 63));
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
    return max(root);
  }

  /** Returns the number of tree levels the last {@link #firstFit} or {@link #insert} walked. */
  public int lastSteps() {
    return lastSteps;
  }

  /** Returns the start address of an extent. */
  public long offsetOf(int node) {
    return offset(node);
  }

  /** Returns the size of an extent. */
  public long sizeOf(int node) {
    return size(node);
  }

  /** Returns the lowest-address extent of at least {@code minSizeBytes}, or {@link #NONE}. */
  public int firstFit(long minSizeBytes) {
    if (minSizeBytes <= 0) {
      throw new IllegalArgumentException("size must be positive, got " + minSizeBytes);
    }
    pathValid = false;
    int n = root;
    if (max(n) < minSizeBytes) {
      lastSteps = 1;
      return NONE;
    }
    long[] nodes = node;
    int[] stack = path;
    int depth = 0;
    while (true) {
      if (depth == stack.length) {
        stack = path = Arrays.copyOf(stack, depth * 2);
      }
      stack[depth++] = n;
      int b = n << STRIDE_SHIFT;
      long kids = nodes[b + KIDS];
      // Sizes are below 2^62, so a difference's sign bit is a comparison.
      int leftTooSmall = (int) ((nodes[((int) kids << STRIDE_SHIFT) + MAX] - minSizeBytes) >>> 63);
      int selfFits = (int) ((minSizeBytes - 1 - nodes[b + SIZE]) >>> 63);
      if ((leftTooSmall & selfFits) != 0) {
        break;
      }
      // Left if the left subtree fits, else right, whose maximum then fits.
      n = (int) (kids >>> (leftTooSmall << 5));
    }
    pathLength = depth;
    pathValid = true;
    lastSteps = depth;
    return n;
  }

  /**
   * Cuts {@code sizeBytes} off the low end of an extent, removing it when nothing is left, and
   * returns the start address of the bytes cut off.
   */
  public long takeLow(int node, long sizeBytes) {
    long have = size(node);
    if (node == NONE || sizeBytes <= 0 || sizeBytes > have) {
      throw new IllegalArgumentException(
          "cannot take " + sizeBytes + " B from extent " + node + " of " + have + " B");
    }
    int k = pathTo(node);
    int b = node << STRIDE_SHIFT;
    long at = this.node[b];
    totalBytes -= sizeBytes;
    if (sizeBytes == have) {
      unlink(k);
      count--;
    } else {
      this.node[b] = at + sizeBytes;
      this.node[b + SIZE] = have - sizeBytes;
      fixMaxUpwards(k);
    }
    pathValid = false;
    return at;
  }

  /** Removes a whole extent from the free set. */
  public void remove(int node) {
    if (node == NONE || size(node) <= 0) {
      throw new IllegalArgumentException("extent " + node + " is not in the tree");
    }
    int k = pathTo(node);
    totalBytes -= size(node);
    count--;
    unlink(k);
    pathValid = false;
  }

  /**
   * Returns the position of {@code target} on the path stack: the last first-fit search's path if
   * it ends there, else a fresh search by address.
   */
  private int pathTo(int target) {
    if (pathValid && path[pathLength - 1] == target) {
      return pathLength - 1;
    }
    long key = offset(target);
    int depth = 0;
    for (int n = root; ; ) {
      if (n == NONE) {
        throw new IllegalArgumentException("extent " + target + " is not in the tree");
      }
      if (depth == path.length) {
        path = Arrays.copyOf(path, depth * 2);
      }
      path[depth++] = n;
      if (n == target) {
        pathLength = depth;
        return depth - 1;
      }
      n = offset(n) < key ? right(n) : left(n);
    }
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
    pathValid = false;
    long end = offsetBytes + sizeBytes;
    long[] nodes = node;
    int[] stack = path;
    int predAt = -1;
    int succAt = -1;
    int depth = 0;
    for (int n = root; n != NONE; ) {
      if (depth == stack.length) {
        stack = path = Arrays.copyOf(stack, depth * 2);
      }
      int b = n << STRIDE_SHIFT;
      int goRight = (int) ((nodes[b] - offsetBytes) >>> 63); // offset(n) < offsetBytes
      predAt += (depth - predAt) & -goRight; // = depth when going right
      succAt += (depth - succAt) & (goRight - 1); // = depth when going left
      stack[depth++] = n;
      n = (int) (nodes[b + KIDS] >>> (goRight << 5));
    }
    lastSteps = depth;
    int pred = predAt < 0 ? NONE : stack[predAt];
    int succ = succAt < 0 ? NONE : stack[succAt];
    long predEnd = pred == NONE ? Long.MIN_VALUE : offset(pred) + size(pred);
    if (predEnd > offsetBytes || (succ != NONE && offset(succ) < end)) {
      throw new IllegalArgumentException(
          "extent [" + offsetBytes + ", +" + sizeBytes + ") overlaps a free extent");
    }
    boolean joinPred = predEnd == offsetBytes;
    boolean joinSucc = succ != NONE && offset(succ) == end;
    totalBytes += sizeBytes;
    if (joinPred && joinSucc) {
      long grown = size(pred) + sizeBytes + size(succ);
      unlink(succAt);
      count--;
      int k = pathTo(pred); // the unlink may have rotated pred's ancestors
      node[(pred << STRIDE_SHIFT) + SIZE] = grown;
      raiseMaxUpwards(k, grown);
      return pred;
    }
    if (joinPred) {
      long grown = node[(pred << STRIDE_SHIFT) + SIZE] += sizeBytes;
      raiseMaxUpwards(predAt, grown);
      return pred;
    }
    if (joinSucc) {
      int b = succ << STRIDE_SHIFT;
      node[b] = offsetBytes; // still after pred, which ends before offsetBytes
      long grown = node[b + SIZE] += sizeBytes;
      raiseMaxUpwards(succAt, grown);
      return succ;
    }
    int x = newNode(offsetBytes, sizeBytes);
    count++;
    if (depth == 0) {
      root = x;
      return x;
    }
    int last = path[depth - 1];
    if (offset(last) < offsetBytes) {
      setRight(last, x);
    } else {
      setLeft(last, x);
    }
    // x sits at path position `depth`; rotate it up while it outranks its parent.
    int k = depth;
    while (k > 0 && priority[x] > priority[path[k - 1]]) {
      rotateUp(x, path[k - 1], k >= 2 ? path[k - 2] : NONE);
      k--;
    }
    if (k > 0) {
      raiseMaxUpwards(k - 1, sizeBytes);
    }
    return x;
  }

  /** Returns the lowest-address extent, or {@link #NONE} when the tree is empty. */
  public int first() {
    int n = root;
    if (n == NONE) {
      return NONE;
    }
    while (left(n) != NONE) {
      n = left(n);
    }
    return n;
  }

  /** Returns the extent after {@code node} in address order, or {@link #NONE}; O(log n). */
  public int next(int node) {
    long key = offset(node);
    int best = NONE;
    for (int n = root; n != NONE; ) {
      if (offset(n) > key) {
        best = n;
        n = left(n);
      } else {
        n = right(n);
      }
    }
    return best;
  }

  /**
   * Checks the tree's structure: address order, no overlapping or touching extents, heap-ordered
   * priorities, correct subtree maxima, extent count and free bytes. Throws {@link
   * InvariantViolation} naming {@code owner} when broken.
   */
  public void checkInvariants(String owner) {
    for (int i = 0; i < (1 << STRIDE_SHIFT); i++) {
      if (node[i] != 0) {
        throw new InvariantViolation(owner, "free-extent tree sentinel was written");
      }
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
        n = left(n);
      }
      n = stack[--depth];
      if (++visited > count) {
        throw new InvariantViolation(owner, "free-extent tree holds more nodes than its count " + count);
      }
      checkNode(owner, n);
      if (offset(n) <= previousEnd) {
        String what = offset(n) == previousEnd ? "touches" : "overlaps or precedes";
        throw new InvariantViolation(
            owner, "free extent at " + offset(n) + " " + what + " the one ending at " + previousEnd);
      }
      previousEnd = offset(n) + size(n);
      bytes += size(n);
      n = right(n);
    }
    if (visited != count || bytes != totalBytes) {
      throw new InvariantViolation(
          owner,
          "free-extent tree holds " + visited + " extents / " + bytes + " B, counters say "
              + count + " / " + totalBytes + " B");
    }
  }

  private void checkNode(String owner, int n) {
    if (size(n) <= 0 || offset(n) < 0) {
      throw new InvariantViolation(owner, "free extent " + n + " is [" + offset(n) + ", +" + size(n) + ")");
    }
    int l = left(n);
    int r = right(n);
    if ((l != NONE && priority[l] > priority[n]) || (r != NONE && priority[r] > priority[n])) {
      throw new InvariantViolation(owner, "free-extent tree heap order broken at offset " + offset(n));
    }
    long expected = subtreeMax(n);
    if (max(n) != expected) {
      throw new InvariantViolation(
          owner, "subtree maximum at offset " + offset(n) + " is " + max(n) + ", expected " + expected);
    }
  }

  /**
   * Recomputes the maxima of path[k], path[k - 1], ..., stopping at the first that holds; for a
   * node that shrank or lost a child. Above path[k], a node's maximum is its size, the maximum just
   * computed for its child on the path, and its other child's maximum.
   */
  private void fixMaxUpwards(int k) {
    long[] nodes = node;
    int[] stack = path;
    int below = stack[k];
    long m = subtreeMax(below);
    if (m == nodes[(below << STRIDE_SHIFT) + MAX]) {
      return;
    }
    nodes[(below << STRIDE_SHIFT) + MAX] = m;
    for (int i = k - 1; i >= 0; i--) {
      int b = stack[i] << STRIDE_SHIFT;
      long kids = nodes[b + KIDS];
      int other = (int) kids ^ (int) (kids >>> 32) ^ below;
      m = larger(nodes[b + SIZE], larger(m, nodes[(other << STRIDE_SHIFT) + MAX]));
      if (m == nodes[b + MAX]) {
        return;
      }
      nodes[b + MAX] = m;
      below = stack[i];
    }
  }

  /**
   * Raises the maxima of path[k], path[k - 1], ... to {@code sizeBytes}, stopping at the first that
   * already holds as much; for a node that grew or joined the tree, which no maximum can fall by.
   */
  private void raiseMaxUpwards(int k, long sizeBytes) {
    long[] nodes = node;
    int[] stack = path;
    for (int i = k; i >= 0; i--) {
      int at = (stack[i] << STRIDE_SHIFT) + MAX;
      if (nodes[at] >= sizeBytes) {
        return;
      }
      nodes[at] = sizeBytes;
    }
  }

  /** Rotates {@code x} above its parent {@code p} (child of {@code g}), keeping both maxima. */
  private void rotateUp(int x, int p, int g) {
    if (left(p) == x) {
      setLeft(p, right(x));
      setRight(x, p);
    } else {
      setRight(p, left(x));
      setLeft(x, p);
    }
    replaceChild(g, p, x);
    node[(p << STRIDE_SHIFT) + MAX] = subtreeMax(p);
    node[(x << STRIDE_SHIFT) + MAX] = subtreeMax(x);
  }

  /**
   * Takes the node at path position {@code k} out of the tree (rotating it down to at most one
   * child), recycles it and fixes the maxima above it.
   */
  private void unlink(int k) {
    int n = path[k];
    while (left(n) != NONE && right(n) != NONE) {
      int l = left(n);
      int r = right(n);
      int c = priority[l] > priority[r] ? l : r;
      rotateUp(c, n, k > 0 ? path[k - 1] : NONE);
      if (k + 2 > path.length) {
        path = Arrays.copyOf(path, path.length * 2);
      }
      path[k] = c;
      path[++k] = n;
    }
    int child = left(n) != NONE ? left(n) : right(n);
    replaceChild(k > 0 ? path[k - 1] : NONE, n, child);
    int b = n << STRIDE_SHIFT;
    node[b] = 0;
    node[b + SIZE] = 0;
    node[b + MAX] = 0;
    node[b + KIDS] = recycled & LOW;
    recycled = n;
    if (k > 0) {
      fixMaxUpwards(k - 1);
    }
  }

  private int newNode(long offsetBytes, long sizeBytes) {
    int x;
    if (recycled != NONE) {
      x = recycled;
      recycled = left(x);
    } else {
      if (nextUnused == priority.length) {
        grow();
      }
      x = nextUnused++;
    }
    int b = x << STRIDE_SHIFT;
    node[b] = offsetBytes;
    node[b + SIZE] = sizeBytes;
    node[b + MAX] = sizeBytes;
    node[b + KIDS] = 0;
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
    int n = priority.length * 2;
    node = Arrays.copyOf(node, n << STRIDE_SHIFT);
    priority = Arrays.copyOf(priority, n);
  }
}

package kvsim.alloc.support;

import java.util.Arrays;
import kvsim.alloc.InvariantViolation;

/**
 * The free extents of one address range, ordered by address, in an AVL tree whose nodes also carry
 * the largest free size in each of their subtrees. It is mechanism only: which extent to pick and
 * which end of it to cut is the caller's policy.
 *
 * <ul>
 *   <li>Extents never overlap and never touch: {@link #insert} merges a new extent with the one
 *       that ends where it starts and the one that starts where it ends.
 *   <li>{@link #firstFit} returns the lowest-address extent of at least a given size, {@link
 *       #find} the extent at an address, {@link #takeLow} cuts bytes off an extent's low end and
 *       {@link #remove} drops a whole extent. All four, and {@link #insert}, cost O(log n) for n
 *       extents; {@link #largestBytes()},
 *       {@link #extentCount()} and {@link #freeBytes()} cost O(1).
 *   <li>Nodes are indices into primitive arrays; removed nodes are recycled, so a steady workload
 *       allocates nothing. A node index names an extent until the next change to the tree.
 *   <li>Extents lie below address 2^62 (4 EiB), which lets the searches compare by subtraction.
 * </ul>
 *
 * <p>The tree is an {@link AvlTree} keyed by (offset, size) that keeps the largest size of each
 * subtree; this class adds the searches, the merging insert and the extent bookkeeping.
 *
 * <p>Note [Balance]: the tree is an AVL tree (Adelson-Velsky and Landis, 1962): the heights of a
 * node's two subtrees differ by at most one, which keeps searches within 1.44 log2 n levels and,
 * on average, close to log2 n. A first version used a treap with seeded priorities; it walked 17 %
 * more levels per first-fit churn operation, and the walks are most of the cost. There is no
 * randomness at all: the same operations build the same tree, so the levels walked, which the
 * latency models charge for, are reproducible across runs and machines.
 *
 * <p>Note [Augmented maximum]: each node stores the largest extent size in each of its two
 * subtrees. The first-fit descent goes left whenever the left subtree can hold the request, which
 * finds the lowest-address fit in one root-to-node walk reading one node per level. After a change
 * the maxima are updated upwards and the walk stops at the first node whose stored maximum did not
 * change, since nothing above it can change either. A rotation leaves the maximum of the rotated
 * position as it was, so only the two rotated nodes are touched.
 *
 * <p>Note [Path stack]: nodes keep no parent links. Every change starts with a descent from the
 * root (the first-fit search, the neighbour search of an insert, or a search by address), which
 * records the nodes it passes in a small stack; rotations and the upward walks of the maxima and
 * heights use that stack. The nodes on it were just read, so walking back up costs cache hits, not
 * a chain of dependent loads through parent links.
 *
 * <p>Note [Node layout]: a node's offset, size and the maxima of its two subtrees sit side by side
 * in one {@code long[]}, four longs per node, so a level of a search touches one node's memory
 * instead of one slot in each of several arrays; the child links (two ints packed in a long) and
 * the heights live in small arrays of their own. The searches pick the child to follow
 * arithmetically (left is side 0, right side 1) instead of by a branch, since which way a search
 * turns is as unpredictable as the addresses are.
 */
public final class FreeExtentTree extends AvlTree {
  /** The index that stands for "no extent". */
  public static final int NONE = AvlTree.NONE;

  private static final int SIZE = SECOND;
  /** Extents end at or below 2^62, so differences of offsets and sizes never overflow. */
  private static final long MAX_ADDRESS = 1L << 62;

  // The tree (AvlTree) holds offset and size as a node's keys and keeps the largest size of each
  // subtree. Its path is the root-to-node path of the last first-fit search or find (Note [Path
  // stack]) while pathValid holds; valid until a change.
  private long totalBytes;
  private int pathLength;
  private boolean pathValid;

  /** Creates an empty tree. */
  public FreeExtentTree() {
    this(64);
  }

  /** Creates an empty tree with room for {@code initialCapacity} extents before it grows. */
  public FreeExtentTree(int initialCapacity) {
    super(initialCapacity, true);
  }

  private long offset(int n) {
    return firstKey(n);
  }

  private long size(int n) {
    return secondKey(n);
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
    return subtreeMax(root);
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
    if (subtreeMax(n) < minSizeBytes) {
      lastSteps = 1;
      return NONE;
    }
    long[] nodes = node;
    long[] links = kids;
    int[] stack = path;
    int depth = 0;
    while (true) {
      if (depth == stack.length) {
        stack = path = Arrays.copyOf(stack, depth * 2);
      }
      stack[depth++] = n;
      int b = n << STRIDE_SHIFT;
      // Sizes are below 2^62, so a difference's sign bit is a comparison.
      int leftTooSmall = (int) ((nodes[b + LEFT_MAX] - minSizeBytes) >>> 63);
      int selfFits = (int) ((minSizeBytes - 1 - nodes[b + SIZE]) >>> 63);
      if ((leftTooSmall & selfFits) != 0) {
        break;
      }
      // Left if the left subtree fits, else right, whose maximum then fits.
      n = (int) (links[n] >>> (leftTooSmall << 5));
    }
    pathLength = depth;
    pathValid = true;
    lastSteps = depth;
    return n;
  }

  /**
   * Returns the extent that starts at {@code offsetBytes}, or {@link #NONE}; O(log n). A {@link
   * #takeLow} or {@link #remove} of the extent found right after needs no second search.
   */
  public int find(long offsetBytes) {
    pathValid = false;
    int depth = 0;
    for (int n = root; n != NONE; ) {
      push(depth++, n);
      long at = offset(n);
      if (at == offsetBytes) {
        pathLength = depth;
        pathValid = true;
        return n;
      }
      n = at < offsetBytes ? right(n) : left(n);
    }
    return NONE;
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
      fixMaxUpwards(k, k);
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
      push(depth++, n);
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
    if (sizeBytes <= 0 || offsetBytes < 0 || sizeBytes > MAX_ADDRESS - offsetBytes) {
      throw new IllegalArgumentException("bad extent [" + offsetBytes + ", +" + sizeBytes + ")");
    }
    pathValid = false;
    long end = offsetBytes + sizeBytes;
    long[] nodes = node;
    long[] links = kids;
    int[] stack = path;
    int predAt = -1;
    int succAt = -1;
    int depth = 0;
    for (int n = root; n != NONE; ) {
      if (depth == stack.length) {
        stack = path = Arrays.copyOf(stack, depth * 2);
      }
      int goRight = (int) ((nodes[n << STRIDE_SHIFT] - offsetBytes) >>> 63); // offset(n) < offsetBytes
      predAt += (depth - predAt) & -goRight; // = depth when going right
      succAt += (depth - succAt) & (goRight - 1); // = depth when going left
      stack[depth++] = n;
      n = (int) (links[n] >>> (goRight << 5));
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
      setRight(last, x, sizeBytes);
    } else {
      setLeft(last, x, sizeBytes);
    }
    raiseMaxUpwards(depth - 1, sizeBytes);
    rebalanceUpwards(depth - 1, true);
    return x;
  }

  /**
   * Returns the extents in address order as two arrays, {@code {offsets, sizes}}, each of {@link
   * #extentCount()} entries; O(n).
   */
  public long[][] toArrays() {
    return keysInOrder();
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
   * Checks the tree's structure: address order, no overlapping or touching extents, heights and
   * balance, correct subtree maxima, extent count and free bytes. Throws {@link
   * InvariantViolation} naming {@code owner} when broken.
   */
  public void checkInvariants(String owner) {
    for (int i = 0; i < (1 << STRIDE_SHIFT); i++) {
      if (node[i] != 0) {
        throw new InvariantViolation(owner, "free-extent tree sentinel was written");
      }
    }
    if (kids[NONE] != 0 || height[NONE] != 0) {
      throw new InvariantViolation(owner, "free-extent tree sentinel has children or height");
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
    if (height[n] != heightFromKids(n) || Math.abs(height[l] - height[r]) > 1) {
      throw new InvariantViolation(
          owner,
          "free-extent tree out of balance at offset " + offset(n) + ": height " + height[n] + ", subtrees "
              + height[l] + " / " + height[r]);
    }
    int b = n << STRIDE_SHIFT;
    if (node[b + LEFT_MAX] != subtreeMax(l) || node[b + RIGHT_MAX] != subtreeMax(r)) {
      throw new InvariantViolation(
          owner,
          "subtree maxima at offset " + offset(n) + " are " + node[b + LEFT_MAX] + " / " + node[b + RIGHT_MAX]
              + ", expected " + subtreeMax(l) + " / " + subtreeMax(r));
    }
  }

}

package kvsim.alloc.support;

import static kvsim.alloc.support.FreeExtentTree.NONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import kvsim.alloc.InvariantViolation;
import org.junit.jupiter.api.Test;

/** The free-extent tree: coalescing, lowest-address fit, balance, and agreement with a TreeMap. */
class FreeExtentTreeTest {

  private static List<long[]> extents(FreeExtentTree tree) {
    List<long[]> out = new ArrayList<>();
    for (int n = tree.first(); n != NONE; n = tree.next(n)) {
      out.add(new long[] {tree.offsetOf(n), tree.sizeOf(n)});
    }
    return out;
  }

  @Test
  void anEmptyTreeFitsNothing() {
    FreeExtentTree tree = new FreeExtentTree();
    assertEquals(NONE, tree.firstFit(1));
    assertEquals(0, tree.largestBytes());
    assertEquals(0, tree.extentCount());
    assertEquals(NONE, tree.first());
    tree.checkInvariants("test");
  }

  @Test
  void insertingTheGapBetweenTwoExtentsMergesAllThree() {
    FreeExtentTree tree = new FreeExtentTree();
    tree.insert(0, 10);
    tree.insert(20, 10);
    assertEquals(2, tree.extentCount());
    int merged = tree.insert(10, 10);
    assertEquals(1, tree.extentCount());
    assertEquals(0, tree.offsetOf(merged));
    assertEquals(30, tree.sizeOf(merged));
    assertEquals(30, tree.largestBytes());
    assertEquals(30, tree.freeBytes());
    tree.checkInvariants("test");
  }

  @Test
  void anExtentTouchingOnlyOneNeighbourMergesWithThatOne() {
    FreeExtentTree tree = new FreeExtentTree();
    tree.insert(100, 10);
    tree.insert(110, 5); // after
    tree.insert(90, 10); // before
    tree.insert(200, 1); // apart
    List<long[]> got = extents(tree);
    assertEquals(2, got.size());
    assertEquals(List.of(90L, 25L, 200L, 1L), List.of(got.get(0)[0], got.get(0)[1], got.get(1)[0], got.get(1)[1]));
  }

  @Test
  void anOverlappingExtentIsRejected() {
    FreeExtentTree tree = new FreeExtentTree();
    tree.insert(100, 50);
    assertThrows(IllegalArgumentException.class, () -> tree.insert(120, 5));
    assertThrows(IllegalArgumentException.class, () -> tree.insert(90, 11));
    assertThrows(IllegalArgumentException.class, () -> tree.insert(149, 10));
    assertThrows(IllegalArgumentException.class, () -> tree.insert(100, 50));
    assertThrows(IllegalArgumentException.class, () -> tree.insert((1L << 62) - 10, 11), "past 2^62");
    assertEquals(50, tree.freeBytes());
    tree.checkInvariants("test");
  }

  @Test
  void firstFitReturnsTheLowestAddressThatHoldsTheSize() {
    FreeExtentTree tree = new FreeExtentTree();
    long[][] input = {{300, 20}, {0, 5}, {200, 50}, {100, 20}, {400, 50}};
    for (long[] e : input) {
      tree.insert(e[0], e[1]);
    }
    assertEquals(0, tree.offsetOf(tree.firstFit(5)));
    assertEquals(100, tree.offsetOf(tree.firstFit(6)));
    assertEquals(100, tree.offsetOf(tree.firstFit(20)));
    assertEquals(200, tree.offsetOf(tree.firstFit(21)));
    assertEquals(200, tree.offsetOf(tree.firstFit(50)));
    assertEquals(NONE, tree.firstFit(51));
    assertThrows(IllegalArgumentException.class, () -> tree.firstFit(0));
  }

  @Test
  void takeLowShrinksAnExtentFromBelowAndDropsItWhenEmpty() {
    FreeExtentTree tree = new FreeExtentTree();
    tree.insert(1000, 64);
    int node = tree.firstFit(16);
    assertEquals(1000, tree.takeLow(node, 16));
    assertEquals(1016, tree.offsetOf(tree.first()));
    assertEquals(48, tree.largestBytes());
    assertEquals(1016, tree.takeLow(tree.first(), 48));
    assertEquals(0, tree.extentCount());
    assertEquals(0, tree.freeBytes());
    assertThrows(IllegalArgumentException.class, () -> tree.takeLow(node, 1));
    tree.checkInvariants("test");
  }

  @Test
  void removeDropsAWholeExtentAndKeepsTheLargestSizeRight() {
    FreeExtentTree tree = new FreeExtentTree();
    for (int i = 0; i < 50; i++) {
      tree.insert(i * 1000L, 1 + i);
    }
    int biggest = tree.firstFit(50);
    tree.remove(biggest);
    assertEquals(49, tree.largestBytes());
    assertEquals(49, tree.extentCount());
    tree.checkInvariants("test");
  }

  @Test
  void randomOperationsAgreeWithASortedMapOfExtents() {
    SplittableRandom random = new SplittableRandom(12);
    FreeExtentTree tree = new FreeExtentTree(4);
    TreeMap<Long, Long> model = new TreeMap<>(); // offset -> size, coalesced
    long limit = 1 << 20;
    for (int op = 0; op < 20_000; op++) {
      int dice = random.nextInt(3);
      if (dice == 0 || model.isEmpty()) {
        long offset = random.nextLong(limit);
        long size = 1 + random.nextLong(512);
        Map.Entry<Long, Long> below = model.floorEntry(offset);
        Map.Entry<Long, Long> above = model.ceilingEntry(offset);
        boolean overlaps =
            (below != null && below.getKey() + below.getValue() > offset)
                || (above != null && above.getKey() < offset + size);
        if (overlaps) {
          assertThrows(IllegalArgumentException.class, () -> tree.insert(offset, size));
        } else {
          tree.insert(offset, size);
          long start = offset;
          long end = offset + size;
          if (below != null && below.getKey() + below.getValue() == offset) {
            start = below.getKey();
            model.remove(below.getKey());
          }
          if (above != null && above.getKey() == end) {
            end = above.getKey() + above.getValue();
            model.remove(above.getKey());
          }
          model.put(start, end - start);
        }
      } else if (dice == 1) {
        long want = 1 + random.nextLong(300);
        Map.Entry<Long, Long> fit =
            model.entrySet().stream().filter(e -> e.getValue() >= want).findFirst().orElse(null);
        int node = tree.firstFit(want);
        if (fit == null) {
          assertEquals(NONE, node, "op " + op);
        } else {
          long fitOffset = fit.getKey(); // read before the map changes: its entries are live nodes
          long fitSize = fit.getValue();
          assertEquals(fitOffset, tree.offsetOf(node), "op " + op);
          assertEquals(fitOffset, tree.takeLow(node, want));
          model.remove(fitOffset);
          if (fitSize > want) {
            model.put(fitOffset + want, fitSize - want);
          }
        }
      } else {
        long at = random.nextLong(limit);
        Map.Entry<Long, Long> victim = model.ceilingEntry(at);
        if (victim != null) {
          int node = tree.first();
          while (tree.offsetOf(node) != victim.getKey()) {
            node = tree.next(node);
          }
          tree.remove(node);
          model.remove(victim.getKey());
        }
      }
      assertEquals(model.size(), tree.extentCount(), "op " + op);
      assertEquals(model.values().stream().mapToLong(Long::longValue).sum(), tree.freeBytes(), "op " + op);
      assertEquals(model.values().stream().mapToLong(Long::longValue).max().orElse(0), tree.largestBytes(), "op " + op);
      if (op % 100 == 0) {
        tree.checkInvariants("test");
        List<long[]> got = extents(tree);
        int i = 0;
        for (Map.Entry<Long, Long> e : model.entrySet()) {
          assertEquals(e.getKey(), got.get(i)[0]);
          assertEquals(e.getValue(), got.get(i)[1]);
          i++;
        }
      }
    }
  }

  @Test
  void extentsInsertedInAddressOrderStillGiveAShallowTree() {
    // Sorted insertion is the worst case of an unbalanced search tree (depth n); an AVL tree of n
    // nodes is at most 1.44 log2(n + 2) levels deep: 23 for 100,000.
    FreeExtentTree tree = new FreeExtentTree();
    int n = 100_000;
    for (int i = 0; i < n; i++) {
      tree.insert(2L * i, 1 + (i == n - 1 ? 1 : 0));
    }
    assertEquals(n, tree.extentCount());
    assertEquals(2L * (n - 1), tree.offsetOf(tree.firstFit(2)));
    assertTrue(tree.lastSteps() <= 23, "first fit walked " + tree.lastSteps() + " levels for 100,000 extents");
    for (int i = 0; i < n; i += 2) { // removals rebalance too
      tree.takeLow(tree.firstFit(1), 1);
    }
    tree.checkInvariants("test");
    assertEquals(2L * (n - 1), tree.offsetOf(tree.firstFit(2)));
    assertTrue(tree.lastSteps() <= 22, "first fit walked " + tree.lastSteps() + " levels for 50,000 extents");
  }

  @Test
  void theSameOperationsBuildTheSameTree() {
    FreeExtentTree a = new FreeExtentTree();
    FreeExtentTree b = new FreeExtentTree();
    StringBuilder stepsA = new StringBuilder();
    StringBuilder stepsB = new StringBuilder();
    for (int i = 0; i < 1000; i++) {
      long offset = (i * 7919L) % 100_003 * 4;
      a.insert(offset, 2);
      b.insert(offset, 2);
      stepsA.append(a.lastSteps()).append(',');
      stepsB.append(b.lastSteps()).append(',');
    }
    for (int size = 1; size <= 2; size++) {
      a.firstFit(size);
      b.firstFit(size);
      stepsA.append(a.lastSteps());
      stepsB.append(b.lastSteps());
    }
    assertEquals(stepsA.toString(), stepsB.toString());
  }

  /** Returns the tree's node array: four longs per node (offset, size, left and right subtree maxima). */
  private static long[] nodes(FreeExtentTree tree) {
    return tree.node;
  }

  @Test
  void aStaleSubtreeMaximumIsReportedAsAnInvariantViolation() {
    FreeExtentTree tree = new FreeExtentTree();
    for (int i = 0; i < 10; i++) {
      tree.insert(i * 100L, 10);
    }
    nodes(tree)[4 * tree.first() + 2] = 99; // the leftmost extent's left maximum, which must be 0
    InvariantViolation e = assertThrows(InvariantViolation.class, () -> tree.checkInvariants("owner"));
    assertTrue(e.getMessage().startsWith("owner: "), e.getMessage());
    assertTrue(e.getMessage().contains("maxima"), e.getMessage());
  }

  @Test
  void aWrongHeightIsReportedAsAnInvariantViolation() {
    FreeExtentTree tree = new FreeExtentTree();
    for (int i = 0; i < 10; i++) {
      tree.insert(i * 100L, 10);
    }
    tree.height[tree.first()] = 3; // a leaf
    InvariantViolation e = assertThrows(InvariantViolation.class, () -> tree.checkInvariants("owner"));
    assertTrue(e.getMessage().contains("balance"), e.getMessage());
  }

  @Test
  void touchingExtentsAreReportedAsAnInvariantViolation() {
    FreeExtentTree tree = new FreeExtentTree();
    tree.insert(0, 10);
    tree.insert(20, 10);
    int high = tree.next(tree.first());
    nodes(tree)[4 * high] = 10; // [10, 20) now starts where [0, 10) ends, uncoalesced
    InvariantViolation e = assertThrows(InvariantViolation.class, () -> tree.checkInvariants("owner"));
    assertTrue(e.getMessage().contains("touches"), e.getMessage());
  }
}

package kvsim.alloc.support;

import static kvsim.alloc.support.ExtentSizeIndex.NONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.TreeSet;
import kvsim.alloc.InvariantViolation;
import org.junit.jupiter.api.Test;

/** The (size, address) index: best fit with the lowest address on ties, balance, and agreement with a TreeSet. */
class ExtentSizeIndexTest {

  @Test
  void anEmptyIndexFitsNothing() {
    ExtentSizeIndex index = new ExtentSizeIndex(4);
    assertEquals(NONE, index.bestFit(1));
    assertEquals(0, index.count());
    assertEquals(1, index.lastSteps());
    index.checkInvariants("test");
  }

  @Test
  void bestFitIsTheSmallestSizeThatHoldsTheRequestAndTheLowestAddressAmongEqualSizes() {
    ExtentSizeIndex index = new ExtentSizeIndex(4);
    index.add(100, 5000);
    index.add(40, 3000);
    index.add(40, 1000);
    index.add(60, 0);
    index.add(40, 2000);
    int n = index.bestFit(30);
    assertEquals(40, index.sizeOf(n));
    assertEquals(1000, index.offsetOf(n));
    n = index.bestFit(41);
    assertEquals(0, index.offsetOf(n));
    n = index.bestFit(100);
    assertEquals(5000, index.offsetOf(n));
    assertEquals(NONE, index.bestFit(101));
    index.checkInvariants("test");
  }

  @Test
  void removeFoundDropsTheExtentTheSearchReturned() {
    ExtentSizeIndex index = new ExtentSizeIndex(1);
    for (int i = 0; i < 100; i++) {
      index.add(10 + i % 7, 1000L * i);
    }
    int n = index.bestFit(12);
    assertEquals(12, index.sizeOf(n));
    assertEquals(2000, index.offsetOf(n));
    index.removeFound();
    assertEquals(99, index.count());
    n = index.bestFit(12);
    assertEquals(9000, index.offsetOf(n), "the next extent of 12 B");
    index.checkInvariants("test");
    index.add(1, 1);
    assertThrows(IllegalStateException.class, index::removeFound, "a change since the search");
  }

  @Test
  void duplicatesAndMissingExtentsAreRejected() {
    ExtentSizeIndex index = new ExtentSizeIndex(4);
    index.add(10, 20);
    assertThrows(IllegalArgumentException.class, () -> index.add(10, 20));
    assertThrows(IllegalArgumentException.class, () -> index.remove(10, 21));
    assertThrows(IllegalArgumentException.class, () -> index.remove(11, 20));
    index.remove(10, 20);
    assertEquals(0, index.count());
    index.checkInvariants("test");
  }

  @Test
  void aMillionRandomOperationsAgreeWithATreeSetAndKeepTheTreeBalanced() {
    Comparator<long[]> bySizeThenOffset = Comparator.<long[]>comparingLong(e -> e[0]).thenComparingLong(e -> e[1]);
    TreeSet<long[]> expected = new TreeSet<>(bySizeThenOffset);
    ExtentSizeIndex index = new ExtentSizeIndex(8);
    SplittableRandom random = new SplittableRandom(5);
    int maxSteps = 0;
    for (int op = 0; op < 1_000_000; op++) {
      int dice = random.nextInt(10);
      long size = 1 + random.nextInt(op < 500_000 ? 2_000 : 50);
      if (dice < 5) {
        long offset = random.nextLong(1L << 40);
        if (expected.add(new long[] {size, offset})) {
          index.add(size, offset);
        }
      } else if (dice < 7 && !expected.isEmpty()) {
        long[] victim = expected.ceiling(new long[] {size, random.nextLong(1L << 40)});
        if (victim != null) {
          expected.remove(victim);
          index.remove(victim[0], victim[1]);
        }
      } else {
        long[] want = expected.ceiling(new long[] {size, Long.MIN_VALUE});
        int n = index.bestFit(size);
        maxSteps = Math.max(maxSteps, index.lastSteps());
        if (want == null) {
          assertEquals(NONE, n, "op " + op);
        } else {
          assertEquals(want[0], index.sizeOf(n), "op " + op);
          assertEquals(want[1], index.offsetOf(n), "op " + op);
          if (dice == 9) {
            index.removeFound();
            expected.remove(want);
          }
        }
      }
      assertEquals(expected.size(), index.count());
      if (op % 50_000 == 0) {
        index.checkInvariants("test");
      }
    }
    index.checkInvariants("test");
    long[][] arrays = index.toArrays();
    int i = 0;
    for (long[] e : expected) {
      assertEquals(e[0], arrays[0][i]);
      assertEquals(e[1], arrays[1][i]);
      i++;
    }
    // An AVL tree of n nodes is at most 1.44 log2(n + 2) levels deep.
    double bound = 1.45 * Math.log(expected.size() + 2) / Math.log(2) + 1;
    assertTrue(maxSteps <= bound + 2, "searches walked " + maxSteps + " levels, more than an AVL tree allows");
  }

  @Test
  void aCorruptedOrderIsAnInvariantViolation() {
    ExtentSizeIndex index = new ExtentSizeIndex(4);
    index.add(10, 0);
    index.add(20, 0);
    index.add(30, 0);
    index.node[2 * 1] = 25; // node 1 held (10, 0): now the left child is larger than its parent (two longs per node)
    assertThrows(InvariantViolation.class, () -> index.checkInvariants("test"));
  }
}

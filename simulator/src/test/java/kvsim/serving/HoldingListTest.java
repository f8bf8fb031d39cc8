package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import kvsim.trace.Request;
import org.junit.jupiter.api.Test;

/** {@link HoldingList} keeps a LinkedHashSet's order and the exact sums of its members' counts. */
class HoldingListTest {
  private static Sequence sequence(long id) {
    return new Sequence(Request.of(id, 0, 16, 4), 4);
  }

  private static List<Sequence> walk(HoldingList list) {
    List<Sequence> out = new ArrayList<>();
    for (Sequence s = list.first(); s != null; s = HoldingList.next(s)) {
      out.add(s);
    }
    return out;
  }

  @Test
  void keepsTheOrderOfALinkedHashSetThroughRandomAddsAndRemoves() {
    Random random = new Random(7);
    List<Sequence> pool = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      pool.add(sequence(i));
    }
    HoldingList list = new HoldingList();
    LinkedHashSet<Sequence> expected = new LinkedHashSet<>();
    long future = 0;
    long waste = 0;
    long[][] counts = new long[pool.size()][2];
    for (int step = 0; step < 5_000; step++) {
      int i = random.nextInt(pool.size());
      Sequence s = pool.get(i);
      switch (random.nextInt(3)) {
        case 0 -> {
          list.add(s);
          expected.add(s);
        }
        case 1 -> {
          list.remove(s);
          if (expected.remove(s)) {
            future -= counts[i][0];
            waste -= counts[i][1];
            counts[i][0] = 0;
            counts[i][1] = 0;
          }
        }
        default -> {
          if (expected.contains(s)) {
            long f = random.nextInt(100);
            long w = random.nextInt(100);
            list.setTokens(s, f, w);
            future += f - counts[i][0];
            waste += w - counts[i][1];
            counts[i][0] = f;
            counts[i][1] = w;
          }
        }
      }
      assertEquals(new ArrayList<>(expected), walk(list));
      assertEquals(expected.size(), list.size());
      assertEquals(future, list.futureTokens());
      assertEquals(waste, list.wasteTokens());
      assertEquals(expected.contains(s), list.contains(s));
    }
  }

  @Test
  void aMemberRemovedAndAddedAgainGoesLastWithItsCountsReset() {
    HoldingList list = new HoldingList();
    Sequence a = sequence(1);
    Sequence b = sequence(2);
    list.add(a);
    list.add(b);
    list.setTokens(a, 5, 3);
    list.remove(a);
    assertFalse(list.contains(a));
    assertEquals(0, list.futureTokens());
    list.add(a);
    assertEquals(List.of(b, a), walk(list));
    assertEquals(0, list.futureTokens());
    assertEquals(0, list.wasteTokens());
    list.remove(b);
    list.remove(a);
    assertNull(list.first());
    assertTrue(walk(list).isEmpty());
  }

  @Test
  void aSequenceIsInOneListAtATime() {
    HoldingList one = new HoldingList();
    HoldingList other = new HoldingList();
    Sequence s = sequence(1);
    one.add(s);
    assertThrows(IllegalStateException.class, () -> other.add(s));
    assertThrows(IllegalStateException.class, () -> other.setTokens(s, 1, 1));
  }
}

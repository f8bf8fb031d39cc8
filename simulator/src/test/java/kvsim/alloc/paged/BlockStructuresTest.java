package kvsim.alloc.paged;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The pool's building blocks: free queue, hash index, LRU evictor, free deque. */
class BlockStructuresTest {

  @Test
  void theFreeQueuePopsTheHeadAppendsAtTheTailAndUnlinksFromTheMiddle() {
    FreeBlockQueue q = new FreeBlockQueue(6);
    assertEquals(0, q.popLeft());
    q.remove(3);
    q.append(0);
    assertArrayEquals(new int[] {1, 2, 4, 5, 0}, q.toArray());
    assertEquals(5, q.size());
    assertNull(q.check(new boolean[6]));
    assertThrows(IllegalStateException.class, () -> q.append(1));
    assertThrows(IllegalStateException.class, () -> q.remove(3));
  }

  @Test
  void theHashIndexKeepsDuplicatesInInsertionOrderAndSurvivesRandomChurn() {
    int n = 64;
    BlockHashIndex index = new BlockHashIndex(n);
    long[] hi = new long[n];
    long[] lo = new long[n];
    boolean[] hashed = new boolean[n];
    Map<Long, List<Integer>> model = new HashMap<>();
    SplittableRandom rng = new SplittableRandom(7);
    for (int step = 0; step < 50_000; step++) {
      int b = rng.nextInt(n);
      if (hashed[b]) {
        index.remove(hi[b], lo[b], b);
        hashed[b] = false;
        model.get(lo[b]).remove(Integer.valueOf(b));
      } else {
        long key = rng.nextInt(12); // few keys: many duplicates and long probe runs
        hi[b] = key * 31;
        lo[b] = key;
        hashed[b] = true;
        index.insert(hi[b], lo[b], b);
        model.computeIfAbsent(key, k -> new ArrayList<>()).add(b);
      }
      for (long key = 0; key < 12; key++) {
        List<Integer> expected = model.getOrDefault(key, List.of());
        assertEquals(expected.isEmpty() ? -1 : expected.get(0), index.get(key * 31, key), "first inserted for " + key);
      }
      assertNull(index.check(hi, lo, hashed, new boolean[n]));
    }
  }

  @Test
  void theEvictorOrdersByAccessTimeThenMostHashedTokensThenEntry() {
    long[] last = {5, 5, 3, 5};
    int[] tokens = {4, 8, 4, 8};
    LruEvictor e = new LruEvictor(last, tokens);
    e.add(0);
    e.add(1);
    e.add(2);
    e.add(3);
    assertArrayEquals(new int[] {2, 1, 3, 0}, e.toArray());
    e.remove(1);
    assertEquals(2, e.evict());
    assertEquals(3, e.evict());
    assertEquals(1, e.size());
  }

  @Test
  void theFreeDequeTakesTheFrontAndAcceptsBothEnds() {
    IntDeque d = new IntDeque(4);
    d.addLast(1);
    d.addLast(2);
    d.addFirst(0);
    d.addLast(3);
    assertThrows(IllegalStateException.class, () -> d.addLast(9));
    assertEquals(0, d.pollFirst());
    d.addFirst(7);
    assertEquals(7, d.get(0));
    assertEquals(3, d.get(3));
  }
}

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
    churnTheHashIndex(12); // few keys: many duplicates
    churnTheHashIndex(500); // many keys: the table up to half full, long runs shifted back on removal
  }

  private static void churnTheHashIndex(int distinctKeys) {
    int n = 64;
    long[] hashes = new long[2 * n]; // block b's hash at 2b, 2b + 1, as the pool keeps them
    BlockHashIndex index = new BlockHashIndex(n, hashes);
    boolean[] hashed = new boolean[n];
    Map<Long, List<Integer>> model = new HashMap<>();
    SplittableRandom rng = new SplittableRandom(7);
    for (int step = 0; step < 50_000; step++) {
      int b = rng.nextInt(n);
      if (hashed[b]) {
        index.remove(b);
        hashed[b] = false;
        model.get(hashes[2 * b + 1]).remove(Integer.valueOf(b));
      } else {
        long key = rng.nextInt(distinctKeys);
        hashes[2 * b] = key * 31;
        hashes[2 * b + 1] = key;
        hashed[b] = true;
        index.insert(key * 31, key, b);
        model.computeIfAbsent(key, k -> new ArrayList<>()).add(b);
      }
      for (long key : model.keySet()) {
        List<Integer> expected = model.get(key);
        assertEquals(expected.isEmpty() ? -1 : expected.get(0), index.get(key * 31, key), "first inserted for " + key);
      }
      assertNull(index.check(hashed, new boolean[n]));
    }
    int free = 0;
    while (hashed[free]) {
      free++;
    }
    hashes[2 * free] = 5;
    hashes[2 * free + 1] = 6;
    int unindexed = free;
    assertThrows(IllegalStateException.class, () -> index.insert(5, 7, unindexed), "a key the block does not hold");
    assertThrows(IllegalStateException.class, () -> index.remove(unindexed), "a block not in the index");
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

package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** The primitive map behaves exactly like {@link HashMap} on any sequence of puts and removes. */
class LongLongMapProperties {
  @Property(tries = 200)
  void behavesLikeAHashMap(@ForAll @Size(max = 2000) List<@IntRange(min = -50, max = 400) Integer> ops) {
    LongLongMap map = new LongLongMap(4);
    Map<Long, Long> ref = new HashMap<>();
    long step = 0;
    for (int op : ops) {
      long key = Math.abs(op) % 300 * 7919L;
      if (op < 0 || op % 3 == 0) {
        Long expected = ref.remove(key);
        assertEquals(expected == null ? -1 : expected, map.remove(key, -1));
      } else {
        boolean absent = !ref.containsKey(key);
        if (absent) {
          ref.put(key, step);
        }
        assertEquals(absent, map.putIfAbsent(key, step));
      }
      step++;
      assertEquals(ref.size(), map.size());
    }
    for (Map.Entry<Long, Long> e : ref.entrySet()) {
      assertEquals(e.getValue(), map.get(e.getKey(), -1));
      assertEquals(true, map.containsKey(e.getKey()));
    }
  }

  /**
   * Increasing ids with a stride (1 as generators number them, powers of two as addresses are),
   * freed in random order, as a replay's maps see them: still exactly a {@link HashMap}.
   */
  @Property(tries = 60)
  void behavesLikeAHashMapOnStridedIncreasingKeys(
      @ForAll @IntRange(min = 0, max = 12) int strideLog2,
      @ForAll @IntRange(min = 0, max = 3) int offset,
      @ForAll @Size(min = 1, max = 3000) List<@IntRange(min = 0, max = 99) Integer> draws) {
    LongLongMap map = new LongLongMap(4);
    Map<Long, Long> ref = new HashMap<>();
    java.util.ArrayList<Long> live = new java.util.ArrayList<>();
    long next = offset;
    long step = 0;
    for (int d : draws) {
      if (!live.isEmpty() && d < 40) {
        long key = live.remove(d * 7919 % live.size());
        assertEquals(ref.remove(key), map.remove(key, -1));
      } else {
        long key = next;
        next += 1L << strideLog2;
        ref.put(key, step);
        live.add(key);
        assertEquals(true, map.putIfAbsent(key, step));
        assertEquals(false, map.putIfAbsent(key, step + 1));
      }
      step++;
      assertEquals(ref.size(), map.size());
    }
    for (Map.Entry<Long, Long> e : ref.entrySet()) {
      assertEquals(e.getValue(), map.get(e.getKey(), -1));
    }
    assertEquals(-1, map.get(next, -1));
    assertEquals(false, map.containsKey(next));
  }
}

package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * {@link DenseLongSet} answers exactly as {@link HashSet} on random operations over values of every
 * shape: increasing ids freed in random order (a trace's), strides, far outliers that go to the
 * hash set and that the window later grows over, negative values, and the ends of the longs.
 */
class DenseLongSetProperties {
  @Property(tries = 300)
  void behavesLikeAHashSet(
      @ForAll @LongRange(min = 1, max = Long.MAX_VALUE) long seed,
      @ForAll @IntRange(min = 1, max = 6000) int ops,
      @ForAll @IntRange(min = 0, max = 5) int shape) {
    SplittableRandom r = new SplittableRandom(seed);
    DenseLongSet set = new DenseLongSet();
    Set<Long> ref = new HashSet<>();
    List<Long> added = new ArrayList<>();
    long next = r.nextLong(-1_000_000, 1_000_000);
    long stride = 1L << r.nextInt(0, 12);
    for (int i = 0; i < ops; i++) {
      long v;
      int dice = r.nextInt(100);
      if (!added.isEmpty() && dice < 35) {
        v = added.get(r.nextInt(added.size())); // an old value again: a free, a duplicate, a second free
      } else {
        v = switch (shape) {
          case 0 -> next += stride; // a generator's ids
          case 1 -> dice < 90 ? (next += 1) : next + r.nextLong(-100_000_000L, 100_000_000L); // ids and far outliers
          case 2 -> r.nextLong(); // anything
          case 3 -> r.nextBoolean() ? Long.MAX_VALUE - r.nextInt(200) : Long.MIN_VALUE + 1 + r.nextInt(200); // the ends
          case 4 -> dice < 50 ? (next -= stride) : (next += 3 * stride); // grows both ways
          default -> r.nextLong(-5000, 5000) * 64; // word-aligned, negative and positive
        };
      }
      if (r.nextInt(100) < 55) {
        assertEquals(ref.add(v), set.add(v), "add " + v);
        added.add(v);
      } else {
        assertEquals(ref.remove(v), set.remove(v), "remove " + v);
      }
      assertEquals(ref.size(), set.size());
      long probe = r.nextBoolean() ? v : v + r.nextInt(-70, 70);
      assertEquals(ref.contains(probe), set.contains(probe), "contains " + probe);
    }
    for (long v : added) {
      assertEquals(ref.contains(v), set.contains(v), "contains " + v);
    }
  }
}

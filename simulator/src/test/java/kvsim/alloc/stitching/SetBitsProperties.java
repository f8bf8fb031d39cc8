package kvsim.alloc.stitching;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** The stitching model's word-at-a-time range marking against one bit at a time. */
class SetBitsProperties {
  @Property(tries = 500)
  void setsAndClearsExactlyTheRange(
      @ForAll long seed, @ForAll @IntRange(min = 0, max = 320) int from, @ForAll @IntRange(min = 0, max = 320) int length,
      @ForAll boolean value) {
    int to = Math.min(from + length, 320);
    long[] words = new long[5];
    Random r = new Random(seed);
    for (int i = 0; i < words.length; i++) {
      words[i] = r.nextLong();
    }
    long[] expected = words.clone();
    for (int b = from; b < to; b++) {
      expected[b >>> 6] = value ? expected[b >>> 6] | 1L << b : expected[b >>> 6] & ~(1L << b);
    }
    StitchingAllocator.setBits(words, from, to, value);
    assertArrayEquals(expected, words, "[" + from + ", " + to + ") " + value);
  }
}

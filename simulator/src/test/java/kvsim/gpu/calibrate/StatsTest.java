package kvsim.gpu.calibrate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link Stats}: Note [Median and p99]. */
class StatsTest {
  @Test
  void medianIsTheMiddleOrTheMeanOfTheTwoMiddles() {
    assertEquals(41000, Stats.median(new long[] {40000, 42000, 38000, 41000, 900000}));
    assertEquals(33000, Stats.median(new long[] {34000, 32000}));
    assertEquals(7, Stats.median(new long[] {7}));
    assertEquals(2.5, Stats.median(new long[] {4, 1, 3, 2}));
  }

  @Test
  void p99IsTheNearestRankAndAlwaysAMeasuredTime() {
    long[] hundred = new long[100];
    for (int i = 0; i < 100; i++) {
      hundred[i] = 1000 - i; // 901 … 1000, shuffled by being reversed
    }
    assertEquals(999, Stats.p99(hundred), "ceil(0.99 × 100) = 99th smallest");
    long[] twoHundred = new long[200];
    for (int i = 0; i < 200; i++) {
      twoHundred[i] = i + 1;
    }
    assertEquals(198, Stats.p99(twoHundred));
    assertEquals(900000, Stats.p99(new long[] {40000, 42000, 38000, 41000, 900000}), "fewer than 100: the largest");
  }

  @Test
  void noRepetitionsHaveNoSummary() {
    assertThrows(IllegalArgumentException.class, () -> Stats.median(new long[0]));
    assertThrows(IllegalArgumentException.class, () -> Stats.p99(new long[0]));
  }
}

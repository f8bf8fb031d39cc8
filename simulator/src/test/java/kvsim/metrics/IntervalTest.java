package kvsim.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The order-statistic interval of the median (Note [The seed interval]) against values worked by hand. */
class IntervalTest {
  @Test
  void fiveSeedsSpanTheWholeRangeAtNinetyThreePointSevenFivePercent() {
    // P(B <= 0) = 1/32 for B ~ Bin(5, 1/2): [x(1), x(5)] covers 1 - 2/32 = 0.9375; k = 2 would cover 1 - 2*6/32 = 0.625.
    Interval i = Interval.of(new double[] {430, 398, 412, 405, 420});
    assertEquals(412, i.median());
    assertEquals(398, i.low());
    assertEquals(430, i.high());
    assertEquals(5, i.n());
    assertEquals(0.9375, i.coverage(), 1e-12);
  }

  @Test
  void tenSeedsDropOneValueAtEachEnd() {
    // P(B <= 1) = 11/1024 for Bin(10, 1/2): [x(2), x(9)] covers 1 - 22/1024 = 0.978515625; P(B <= 2) = 56/1024 would give 0.890625.
    Interval i = Interval.of(new double[] {10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
    assertEquals(5.5, i.median()); // the mean of the two middle values
    assertEquals(2, i.low());
    assertEquals(9, i.high());
    assertEquals(0.978515625, i.coverage(), 1e-12);
    assertEquals(2, Interval.rank(10));
  }

  @Test
  void twentySeedsUseTheSixthValues() {
    // P(B <= 5) = 21700/2^20 = 0.020695..., P(B <= 6) = 60460/2^20 = 0.0576...: k = 6, coverage 1 - 43400/1048576.
    assertEquals(6, Interval.rank(20));
    assertEquals(1 - 43400.0 / 1048576, Interval.coverage(20, 6), 1e-12);
    double[] v = new double[20];
    for (int k = 0; k < 20; k++) {
      v[k] = 100 - k; // 100 .. 81
    }
    Interval i = Interval.of(v);
    assertEquals(86, i.low()); // x(6) of 81..100
    assertEquals(95, i.high()); // x(15)
    assertEquals(90.5, i.median());
  }

  @Test
  void sixSeedsReachNinetyFivePercentWithTheWholeRange() {
    assertEquals(1 - 2.0 / 64, Interval.coverage(6, 1), 1e-12);
    assertEquals(1, Interval.rank(6));
  }

  @Test
  void oneSeedHasNoInterval() {
    Interval i = Interval.of(new double[] {3});
    assertEquals(3, i.low());
    assertEquals(3, i.high());
    assertEquals(0, i.coverage());
    assertThrows(IllegalArgumentException.class, () -> Interval.of(new double[0]));
    assertThrows(IllegalArgumentException.class, () -> Interval.of(new double[] {1, Double.NaN}));
  }

  @Test
  void disjointIntervalsAreTold() {
    Interval a = Interval.of(new double[] {1, 2, 3});
    assertTrue(a.disjoint(Interval.of(new double[] {4, 5, 6})));
    assertFalse(a.disjoint(Interval.of(new double[] {3, 5, 6})));
  }

  @Test
  void seedStatsMergeMediansKeepingIntegersWholeAndNullsOut() {
    Map<String, Object> a = Map.of("system", "vllm", "preemptions", 1L, "tput", 10.0, "lat", Map.of("p50", 1.0));
    Map<String, Object> b = Map.of("system", "vllm", "preemptions", 2L, "tput", 30.0, "lat", Map.of("p50", 3.0));
    Map<String, Object> c = new java.util.LinkedHashMap<>(Map.of("system", "vllm", "preemptions", 4L, "tput", 20.0));
    c.put("lat", new java.util.LinkedHashMap<>(java.util.Collections.singletonMap("p50", null)));
    Map<String, Object> d = Map.of("system", "vllm", "preemptions", 3L, "tput", 40.0, "lat", Map.of("p50", 2.0));
    Map<String, Object> m = SeedStats.merge(List.of(a, b, c, d), Set.of("system"));
    assertEquals("vllm", m.get("system"));
    assertEquals(3L, m.get("preemptions")); // median 2.5 rounded half up, an integer field stays an integer
    assertEquals(25.0, m.get("tput"));
    assertEquals(2.0, ((Map<?, ?>) m.get("lat")).get("p50")); // over the three seeds that defined it
    @SuppressWarnings("unchecked")
    Map<String, Map<String, Object>> in = (Map<String, Map<String, Object>>) m.get("intervals");
    assertEquals(2.5, in.get("preemptions").get("median"));
    assertEquals(3, in.get("lat.p50").get("n"));
    assertEquals(10.0, in.get("tput").get("low"));
    assertEquals(40.0, in.get("tput").get("high"));
  }
}

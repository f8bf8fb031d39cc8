package kvsim.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Summaries are exact over every event; the time series stays bounded and ends at the last event. */
class RunMetricsTest {
  /** Note [Headline gauges only]: the sweep's recorder keeps four gauges, each exactly as a full recorder has it, and every counter. */
  @Test
  void aSweepRecorderKeepsTheHeadlineGaugesExactly() {
    RunMetrics full = new RunMetrics(RunMetrics.NO_SERIES);
    RunMetrics sweep = new RunMetrics(RunMetrics.SWEEP_HEADLINES);
    java.util.SplittableRandom r = new java.util.SplittableRandom(7);
    long t = 0;
    for (int i = 0; i < 5000; i++) {
      t += r.nextInt(3) * 1000L;
      long reserved = 1L << 36;
      long allocated = r.nextLong(reserved);
      long requested = allocated - r.nextLong(allocated / 10 + 1);
      long free = reserved - allocated;
      long largest = free == 0 ? 0 : r.nextLong(free + 1);
      long live = r.nextInt(1000);
      for (RunMetrics m : List.of(full, sweep)) {
        m.record(t, reserved, allocated, requested, free, largest, live);
        if (i % 7 == 0) {
          m.countOom("fragmentation");
        } else {
          m.countAlloc();
        }
      }
    }
    assertEquals(RunMetrics.HEADLINE_GAUGES, List.copyOf(sweep.summaries().keySet()));
    for (String g : RunMetrics.HEADLINE_GAUGES) {
      assertEquals(full.summaries().get(g), sweep.summaries().get(g), g);
    }
    assertEquals(full.counters(), sweep.counters());
    assertEquals(List.of(), sweep.samples());
    // Every gauge a sweep's headline reads is kept.
    for (String h : SeedSweep.HEADLINES) {
      int dot = h.lastIndexOf('.');
      assertTrue(dot < 0 || RunMetrics.HEADLINE_GAUGES.contains(h.substring(0, dot)), h);
    }
  }

  @Test
  void theMeanIsWeightedByTimeAndThePeakSeesEveryEvent() {
    Gauge g = new Gauge("x");
    g.record(0, 10);   // holds 10 for 10 ns
    g.record(10, 100); // holds 100 for 0 ns: a spike the mean ignores but the peak keeps
    g.record(10, 20);  // holds 20 for 30 ns
    g.record(40, 5);
    Gauge.Summary s = g.summary();
    assertEquals(100.0, s.peak());
    assertEquals((10 * 10 + 20 * 30) / 40.0, s.mean(), 1e-12);
    assertEquals(5.0, s.last());
  }

  @Test
  void withoutTimeTheMeanIsOverEvents() {
    Gauge g = new Gauge("x");
    for (double v : new double[] {1, 2, 3, 6}) {
      g.record(0, v);
    }
    assertEquals(3.0, g.summary().mean(), 1e-12);
  }

  @Test
  void anUndefinedRatioIsLeftOutAndANeverDefinedOneIsNull() {
    Gauge g = new Gauge("r");
    g.record(0, Double.NaN);
    g.record(5, 0.5);
    g.record(15, Double.NaN);
    g.record(20, Double.NaN);
    Gauge.Summary s = g.summary();
    assertEquals(0.5, s.peak());
    assertEquals(0.5, s.mean(), 1e-12);
    assertNull(s.last());
    Gauge never = new Gauge("n");
    never.record(0, Double.NaN);
    assertNull(never.summary().peak());
    assertNull(never.summary().mean());
  }

  @Test
  void externalFragmentationIsOneMinusLargestOverFree() {
    RunMetrics m = new RunMetrics(1);
    m.record(0, 100, 60, 50, 40, 10, 3);
    m.record(1, 100, 100, 90, 0, 0, 4);
    assertEquals(0.75, m.summaries().get("external_fragmentation").peak(), 1e-12);
    assertEquals(1 - 90 / 100.0, m.summaries().get("internal_fragmentation").last(), 1e-12);
    assertNull(m.summaries().get("external_fragmentation").last(), "nothing free: undefined, never NaN");
  }

  @Test
  void theAutomaticSeriesStaysBoundedAndEndsAtTheLastEvent() {
    RunMetrics m = new RunMetrics(0);
    int n = 1_000_003;
    for (int i = 0; i < n; i++) {
      m.record(i, i, i, i, 1, 1, 1);
    }
    List<double[]> rows = m.samples();
    assertTrue(rows.size() <= RunMetrics.MAX_AUTO_SAMPLES + 1, "rows " + rows.size());
    assertTrue(rows.size() >= RunMetrics.MAX_AUTO_SAMPLES / 2, "rows " + rows.size());
    assertEquals(1.0, rows.get(0)[0]);
    assertEquals(n, rows.get(rows.size() - 1)[0]);
    double stride = rows.get(2)[0] - rows.get(1)[0];
    for (int i = 2; i < rows.size() - 1; i++) {
      assertEquals(stride, rows.get(i)[0] - rows.get(i - 1)[0], "evenly spaced");
    }
  }

  /**
   * Byte gauges near 2^63 held for spans near 2^63 ns: the integral (about 2^126) is far past a
   * long, and a long accumulator would wrap to a meaningless mean; the double one stays exact to a
   * relative 1e-15 and within [min, max] of the values.
   */
  @Test
  void timeWeightedMeansOfHugeGaugesOverHugeSpansDoNotOverflow() {
    long big = Long.MAX_VALUE - 1000;
    RunMetrics m = new RunMetrics(0);
    m.record(0, big, big, big / 2, 0, 0, 1);
    m.record(Long.MAX_VALUE / 2, big, big, big, 0, 0, 2);
    m.record(Long.MAX_VALUE, big, 0, 0, big, big, 0);
    Gauge.Summary allocated = m.summaries().get("allocated_bytes");
    assertEquals((double) big, allocated.mean(), big * 1e-15);
    assertEquals((double) big, allocated.peak());
    Gauge.Summary requested = m.summaries().get("requested_bytes");
    assertEquals(0.75 * big, requested.mean(), big * 1e-15);
    Gauge.Summary internal = m.summaries().get("internal_fragmentation");
    assertEquals(0.25, internal.mean(), 1e-15, "1 − requested / allocated, weighted by time");
    assertTrue(internal.peak() <= 1 && internal.mean() >= 0);
    assertEquals(0.0, m.summaries().get("external_fragmentation").last());
  }

  @Test
  void eventMeansOfHugeGaugesWithoutTimeDoNotOverflow() {
    Gauge g = new Gauge("bytes");
    for (int i = 0; i < 1000; i++) {
      g.record(0, Long.MAX_VALUE);
    }
    assertEquals((double) Long.MAX_VALUE, g.summary().mean(), Long.MAX_VALUE * 1e-15);
  }

  @Test
  void theCounterAndGaugeListsNameWhatARunReportsInOrder() {
    RunMetrics m = new RunMetrics(1);
    m.record(0, 100, 60, 50, 40, 10, 3);
    assertEquals(RunMetrics.COUNTERS, List.copyOf(m.counters().keySet()));
    assertEquals(RunMetrics.GAUGES, List.copyOf(m.summaries().keySet()));
  }
}

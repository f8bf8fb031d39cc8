package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Per-request targets on hand-made requests: every target must hold, unfinished requests miss, one output token meets any TPOT. */
class SloAttainmentTest {
  private static final long MS = 1_000_000L;

  /**
   * Five arrived requests, four finished (times after arrival at 0):
   * A: ttft 200 ms, e2e 1,200 ms, 11 tokens (tpot 100 ms); B: ttft 900 ms, e2e 1,100 ms, 3 tokens
   * (tpot 100 ms); C: ttft 1,500 ms, e2e 2,000 ms, 6 tokens (tpot 100 ms); D: ttft 100 ms, e2e 100 ms,
   * 1 token (no tpot); the fifth never finished (rejected).
   */
  private static ServingMetrics fiveRequests(List<ServingMetrics.RequestTarget> targets) {
    ServingMetrics m = new ServingMetrics();
    m.countTargets(targets);
    for (int i = 0; i < 5; i++) {
      m.recordArrival(0);
    }
    m.firstArrivalNanos = 0;
    m.recordFinish(0, 200 * MS, 1200 * MS, 11, 11);
    m.recordFinish(0, 900 * MS, 1100 * MS, 3, 6);
    m.recordFinish(0, 1500 * MS, 2000 * MS, 6, 6);
    m.recordFinish(0, 100 * MS, 100 * MS, 1, 1);
    m.rejected = 1;
    return m;
  }

  /** The five requests checked against {@code targets} as they finish. */
  private static ServingMetrics.Attainment attain(ServingMetrics.RequestTarget... targets) {
    return fiveRequests(List.of(targets)).attainment(List.of(targets));
  }

  private static ServingMetrics.RequestTarget target(String metric, double limitSeconds) {
    return new ServingMetrics.RequestTarget(metric, limitSeconds, metric + "<=" + limitSeconds + "s");
  }

  @Test
  void aRequestMeetsTheSloWhenItFinishedWithinEveryTarget() {
    ServingMetrics.Attainment ttft = attain(target("ttft", 1.0));
    // A, B and D are within 1 s; C is not; the rejected one misses.
    assertEquals(3, ttft.met());
    assertEquals(0.6, ttft.attainment(), 1e-12);
    assertEquals(11 + 6 + 1, ttft.metOutputTokens(), "every sequence's tokens of a met request");
    ServingMetrics.Attainment both = attain(target("ttft", 1.0), target("e2e", 1.15));
    // e2e <= 1.15 s: B (1.1) and D (0.1); so A fails on e2e and only B and D meet both.
    assertEquals(2, both.met());
    assertEquals(List.of(3L, 2L), both.metPerTarget());
    assertEquals(0.4, both.shareMeeting(1), 1e-12);
    assertEquals(5, both.arrived());
  }

  @Test
  void oneOutputTokenMeetsAnyTpotTargetAsVllmCountsIt() {
    // Every request of two or more tokens has a TPOT of 100 ms: a 50 ms target leaves only D.
    ServingMetrics.Attainment tight = attain(target("tpot", 0.05));
    assertEquals(1, tight.met());
    ServingMetrics.Attainment exact = attain(target("tpot", 0.1));
    assertEquals(4, exact.met(), "a value equal to the limit meets it");
  }

  @Test
  void normalizedLatencyIsEndToEndOverTheLeadSequencesTokens() {
    // A 1.2/11 = 0.109, B 1.1/3 = 0.367, C 2/6 = 0.333, D 0.1/1 = 0.1.
    assertEquals(2, attain(target("normalized_latency", 0.11)).met());
    assertEquals(4, attain(target("normalized_latency", 0.4)).met());
  }

  @Test
  void withoutTargetsEveryFinishedRequestMeetsIt() {
    ServingMetrics.Attainment none = fiveRequests(List.of()).attainment(List.of());
    assertEquals(4, none.met());
    assertEquals(0.8, none.attainment(), 1e-12);
  }

  @Test
  void targetsAreCountedFromTheRunsStartOnly() {
    // Nothing is kept per request (flat memory): targets not counted during the run cannot be answered.
    ServingMetrics counted = fiveRequests(List.of(target("ttft", 1.0)));
    assertThrows(IllegalStateException.class, () -> counted.attainment(List.of(target("ttft", 2.0))));
    assertThrows(IllegalStateException.class, () -> counted.countTargets(List.of(target("e2e", 1.0))));
  }

  @Test
  void anUnknownMetricIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> target("latency", 1));
  }
}

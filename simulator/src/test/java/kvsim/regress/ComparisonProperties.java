package kvsim.regress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** Verdicts: exact, absolute and relative tolerances, directions, undefined values, and tolerance parsing. */
class ComparisonProperties {
  private static Suite.Watch watch(String metric, Suite.Better better, Tolerance t) {
    return new Suite.Watch(metric, better, t, "s.yaml", 1, "watch");
  }

  @Property(tries = 300)
  void aMoveWithinARelativeToleranceNeverFailsAndOneBeyondItAlwaysDecides(
      @ForAll @LongRange(min = 1, max = 1_000_000_000_000L) long baseline, @ForAll @DoubleRange(min = -0.5, max = 0.5) double share) {
    Tolerance fivePercent = Tolerance.parse("5%");
    long now = baseline + Math.round(baseline * share);
    Verdict v = Comparison.of("s", "r", watch("modelled_allocator_nanos", Suite.Better.LOWER, fivePercent), baseline, now, 0).verdict();
    double move = Math.abs(now - baseline);
    if (now == baseline) {
      assertEquals(Verdict.UNCHANGED, v);
    } else if (move <= 0.05 * baseline) {
      assertEquals(Verdict.WITHIN_TOLERANCE, v);
    } else {
      assertEquals(now < baseline ? Verdict.IMPROVED : Verdict.REGRESSED, v);
    }
  }

  @Test
  void exactIsExactAndTheDirectionDecides() {
    Suite.Watch lower = watch("oom_count", Suite.Better.LOWER, Tolerance.EXACT);
    Suite.Watch higher = watch("alloc_count", Suite.Better.HIGHER, Tolerance.EXACT);
    assertEquals(Verdict.REGRESSED, Comparison.of("s", "r", lower, 10L, 11L, 0).verdict());
    assertEquals(Verdict.IMPROVED, Comparison.of("s", "r", lower, 10L, 9L, 0).verdict());
    assertEquals(Verdict.IMPROVED, Comparison.of("s", "r", higher, 10L, 11L, 0).verdict());
    assertEquals(Verdict.UNCHANGED, Comparison.of("s", "r", higher, 0.25, 0.25, 0).verdict());
    assertEquals(Verdict.REGRESSED, Comparison.of("s", "r", lower, 0.25, Math.nextUp(0.25), 0).verdict());
    assertEquals("+1 (+10.00%)", Comparison.of("s", "r", lower, 10L, 11L, 0).deltaText());
  }

  @Test
  void becomingDefinedOrUndefinedFailsTheGate() {
    Suite.Watch w = watch("external_fragmentation.peak", Suite.Better.LOWER, Tolerance.parse("100"));
    Comparison c = Comparison.of("s", "r", w, null, 0.5, 0);
    assertEquals(Verdict.REGRESSED, c.verdict());
    assertEquals("n/a", c.deltaText());
    assertEquals(Verdict.REGRESSED, Comparison.of("s", "r", w, 0.5, null, 0).verdict());
    assertEquals(Verdict.UNCHANGED, Comparison.of("s", "r", w, null, null, 0).verdict());
  }

  @Test
  void tolerancesParseAndModelledTimesDefaultToOnePercent() {
    assertEquals(Tolerance.Kind.RELATIVE, Tolerance.parse("2.5%").kind());
    assertEquals(0.025, Tolerance.parse("2.5%").amount(), 1e-15);
    assertEquals(Tolerance.Kind.ABSOLUTE, Tolerance.parse("1000").kind());
    assertEquals(Tolerance.EXACT, Tolerance.parse("0"));
    assertEquals(Tolerance.EXACT, Tolerance.parse("exact"));
    assertThrows(IllegalArgumentException.class, () -> Tolerance.parse("-1%"));
    assertThrows(IllegalArgumentException.class, () -> Tolerance.parse("a bit"));
    assertEquals(Tolerance.Kind.RELATIVE, Tolerance.defaultFor("ttft_seconds.p90").kind());
    assertEquals(Tolerance.Kind.RELATIVE, Tolerance.defaultFor("modelled_allocator_nanos").kind());
    assertEquals(Tolerance.Kind.RELATIVE, Tolerance.defaultFor("throughput_tokens_per_second").kind());
    assertEquals(Tolerance.EXACT, Tolerance.defaultFor("reserved_bytes.peak"));
    assertEquals(Tolerance.EXACT, Tolerance.defaultFor("kv_breakdown.token_states.mean"));
  }
}

package kvsim.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import kvsim.trace.TraceEvent;
import org.junit.jupiter.api.Test;

/** The churn generator follows the literature's loop: p(free | live) = 0.4, whole-MiB sizes 1..256, closed loop. */
class ChurnGeneratorTest {
  private static ChurnGenerator churn(Map<String, String> params) {
    return new ChurnGenerator(new OptionMap("generator churn", params));
  }

  @Test
  void freesHappenWithTheFreeProbabilityWhenSomethingIsLiveAndSizesAreWholeMiB() {
    ChurnGenerator g = churn(Map.of("ops", "200000", "seed", "7"));
    Set<Long> live = new HashSet<>();
    long decisions = 0;
    long frees = 0;
    long sizeSumMiB = 0;
    long allocs = 0;
    long minMiB = Long.MAX_VALUE;
    long maxMiB = 0;
    TraceEvent e;
    long count = 0;
    while ((e = g.next()) != null) {
      assertEquals(count * ChurnGenerator.NANOS_PER_OP, e.timeNanos());
      count++;
      if (!live.isEmpty()) {
        decisions++;
      }
      if (e.op() == TraceEvent.Op.FREE) {
        frees++;
        assertTrue(live.remove(e.id()), "frees only live ids");
      } else {
        assertEquals(0, e.sizeBytes() % Bytes.MiB);
        long mib = e.sizeBytes() / Bytes.MiB;
        minMiB = Math.min(minMiB, mib);
        maxMiB = Math.max(maxMiB, mib);
        sizeSumMiB += mib;
        allocs++;
        assertTrue(e.splittable());
        live.add(e.id());
      }
    }
    assertEquals(200_000, count);
    double freeShare = (double) frees / decisions;
    assertTrue(Math.abs(freeShare - 0.4) < 0.005, "free share " + freeShare);
    assertEquals(1, minMiB);
    assertEquals(256, maxMiB);
    double meanMiB = (double) sizeSumMiB / allocs;
    assertTrue(Math.abs(meanMiB - 128.5) < 1.0, "mean size " + meanMiB);
  }

  @Test
  void theFirstOperationAllocatesBecauseNothingIsLive() {
    assertEquals(TraceEvent.Op.ALLOC, churn(Map.of("seed", "3")).next().op());
  }

  @Test
  void aRefusedAllocationIsNeverFreed() {
    ChurnGenerator g = churn(Map.of("ops", "5000", "seed", "11"));
    Set<Long> refused = new HashSet<>();
    TraceEvent e;
    while ((e = g.next()) != null) {
      if (e.op() == TraceEvent.Op.ALLOC) {
        boolean served = e.id() % 3 != 0;
        if (!served) {
          refused.add(e.id());
        }
        g.acknowledge(e, served);
      } else {
        assertTrue(!refused.contains(e.id()), "freed refused id " + e.id());
      }
    }
    assertTrue(refused.size() > 100);
  }

  @Test
  void theSameSeedGivesTheSameEvents() {
    ChurnGenerator a = churn(Map.of("ops", "3000", "seed", "5"));
    ChurnGenerator b = churn(Map.of("ops", "3000", "seed", "5"));
    ChurnGenerator c = churn(Map.of("ops", "3000", "seed", "6"));
    boolean differs = false;
    TraceEvent x;
    while ((x = a.next()) != null) {
      TraceEvent y = b.next();
      TraceEvent z = c.next();
      assertEquals(x, y);
      differs |= !x.equals(z);
    }
    assertNull(b.next());
    assertTrue(differs, "another seed gives other events");
  }

  @Test
  void unknownOrBadParametersAreErrors() {
    InputException unknown = org.junit.jupiter.api.Assertions.assertThrows(InputException.class, () -> churn(Map.of("opps", "3")));
    assertTrue(unknown.getMessage().contains("unknown option 'opps'"), unknown.getMessage());
    InputException bad = org.junit.jupiter.api.Assertions.assertThrows(InputException.class, () -> churn(Map.of("free-probability", "1.5")));
    assertTrue(bad.getMessage().contains("free-probability"), bad.getMessage());
  }
}

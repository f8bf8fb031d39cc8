package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** {@code --slo} texts: the four forms, the refused combinations, and capacity's defaults beside per-request targets. */
class SloTargetsTest {
  @Test
  void parsesEveryForm() {
    SloTargets t = SloTargets.parse(List.of(" ttft <= 250ms ", "normalized_latency<=0.2s", "e2e.p99<=30s", "attainment>=0.9", "rejected.fraction<=0.1"));
    assertEquals(List.of("ttft <= 250ms", "normalized_latency<=0.2s", "e2e.p99<=30s", "attainment>=0.9", "rejected.fraction<=0.1"), t.written());
    assertEquals(2, t.perRequest().size());
    assertEquals("ttft", t.perRequest().get(0).metric());
    assertEquals(0.25, t.perRequest().get(0).limitSeconds(), 1e-12);
    assertEquals("normalized_latency", t.perRequest().get(1).metric());
    assertEquals(1, t.aggregate().size());
    assertEquals("p99", t.aggregate().get(0).statistic());
    assertEquals(0.9, t.attainmentAtLeast());
    assertEquals(0.1, t.rejectedFractionAllowed());
  }

  @Test
  void badTextsAreOneLineNamingTheText() {
    for (String bad : List.of("ttft<1s", "latency<=1s", "ttft<=1", "ttft.p95<=1s", "attainment>=0", "attainment>=1.5", "attainment<=0.9",
        "rejected.fraction<=2", "goodput>=3")) {
      InputException e = assertThrows(InputException.class, () -> SloTargets.parse(List.of(bad, "ttft<=1s")), bad);
      assertTrue(e.getMessage().startsWith("--slo: '" + bad + "'"), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
  }

  @Test
  void nonsenseCombinationsAreRefused() {
    InputException alone = assertThrows(InputException.class, () -> SloTargets.parse(List.of("attainment>=0.9", "e2e.mean<=1s")));
    assertTrue(alone.getMessage().contains("'attainment>=0.9' needs a per-request target"), alone.getMessage());
    InputException twice = assertThrows(InputException.class, () -> SloTargets.parse(List.of("ttft<=1s", "ttft<=2s")));
    assertEquals("--slo: 'ttft<=2s' is a second ttft target after 'ttft<=1s'; give one per metric", twice.getMessage());
    assertThrows(InputException.class, () -> SloTargets.parse(List.of("ttft<=1s", "attainment>=0.9", "attainment>=0.8")));
  }

  @Test
  void capacityTakesPerRequestTargetsAsAttainmentOfOneWithoutADefaultRejectionTarget() {
    CapacitySearch.Targets t = CapacitySearch.Targets.parse(List.of("ttft<=1s"));
    assertEquals(1.0, t.attainmentAtLeast());
    assertEquals(CapacitySearch.Targets.ALL_REQUESTS, t.attainmentText());
    assertEquals(1.0, t.rejectedFractionAllowed(), "the attainment counts unfinished requests as missing");
    CapacitySearch.Targets given = CapacitySearch.Targets.parse(List.of("ttft<=1s", "attainment>=0.9", "rejected.fraction<=0.05"));
    assertEquals(0.9, given.attainmentAtLeast());
    assertEquals(0.05, given.rejectedFractionAllowed());
    CapacitySearch.Targets aggregate = CapacitySearch.Targets.parse(List.of("e2e.mean<=1s"));
    assertEquals(0.0, aggregate.rejectedFractionAllowed(), "without per-request targets every request must finish");
    assertNull(aggregate.attainmentText());
    assertThrows(InputException.class, () -> CapacitySearch.Targets.parse(List.of("rejected.fraction<=0.1")));
  }
}

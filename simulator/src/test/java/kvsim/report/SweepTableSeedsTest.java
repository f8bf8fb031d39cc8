package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A sweep's table grouped over seeds: one group per cell without its seed, medians and intervals worked by hand. */
class SweepTableSeedsTest {
  private static SweepTableResults.Row row(String allocator, String seed, double frag, long ooms) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("workload", "churn:ops=100");
    m.put("allocator", allocator);
    m.put("seed", seed);
    m.put("external_fragmentation.peak", frag);
    m.put("oom_count", ooms);
    return new SweepTableResults.Row(m);
  }

  @Test
  void groupsByCellWithoutTheSeed() {
    List<SweepTableResults.Row> rows = new ArrayList<>();
    double[] first = {0.30, 0.10, 0.50, 0.20, 0.40};
    for (int s = 0; s < 5; s++) {
      rows.add(row("first-fit", Integer.toString(s + 1), first[s], s));
      rows.add(row("buddy", Integer.toString(s + 1), 0.6, 0));
    }
    SweepTableSeeds g = SweepTableSeeds.of(SweepTableResults.of(Map.of(), rows));
    assertTrue(g.severalSeeds());
    assertEquals(List.of("workload", "allocator"), g.parameters());
    assertEquals(List.of("external_fragmentation.peak", "oom_count"), g.metrics());
    assertEquals(2, g.groups().size());
    assertEquals("workload=churn:ops=100 allocator=first-fit", g.groups().get(0).label());
    String[] lines = g.csv().split("\n");
    assertEquals("workload,allocator,seeds,coverage,external_fragmentation.peak,external_fragmentation.peak.low,external_fragmentation.peak.high,"
        + "oom_count,oom_count.low,oom_count.high", lines[0]);
    // Five seeds: median 0.3, the whole range [0.1, 0.5] at coverage 1 - 2/32; ooms 0..4: median 2.
    assertEquals("churn:ops=100,first-fit,5,0.937500,0.300000,0.100000,0.500000,2,0,4", lines[1]);
    assertEquals("churn:ops=100,buddy,5,0.937500,0.600000,0.600000,0.600000,0,0,0", lines[2]);
  }

  @Test
  void aGridWithoutSeedsIsNotGrouped() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("workload", "churn:ops=100");
    m.put("allocator", "buddy");
    m.put("oom_count", 0);
    assertFalse(SweepTableSeeds.of(SweepTableResults.of(Map.of(), List.of(new SweepTableResults.Row(m)))).severalSeeds());
  }
}

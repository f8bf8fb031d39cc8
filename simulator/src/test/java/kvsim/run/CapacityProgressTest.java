package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import org.junit.jupiter.api.Test;

/** The capacity search's progress callback: probes done of (2 + steps) × cells, counting early answers whole. */
class CapacityProgressTest {
  private static List<ServingGrid.Cell> cells(String workload, String... systems) {
    ServingSpec spec = ServingSpec.resolve(ServingSpec.Request.of(workload, List.of(systems),
        Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.KV_MEMORY, "12GiB")));
    List<ServingGrid.Cell> cells = new ArrayList<>();
    for (String s : systems) {
      cells.add(new ServingGrid.Cell(Map.of(), s, spec.withSystems(List.of(s))));
    }
    return cells;
  }

  @Test
  void reportsEveryProbeOfThePlannedTotalAndEndsAtIt() throws IOException {
    List<int[]> calls = new ArrayList<>();
    CapacitySearch.Targets targets = CapacitySearch.Targets.parse(List.of("normalized_latency.mean<=0.2s", "rejected.fraction<=0.5"));
    // Both bisect (as in CapacitySearchTest); at a limit no rate meets (1 µs per token) the low bound fails and the other probes are skipped.
    List<CapacitySearch.Capacity> met = CapacitySearch.searchCells(cells("requests:preset=sharegpt,count=200", "vllm", "orca-max"), targets, 0.1, 20, 2,
        (done, planned) -> {
          synchronized (calls) {
            calls.add(new int[] {done, planned});
          }
        });
    int probesRun = met.stream().mapToInt(c -> c.probes().size()).sum();
    assertEquals(8, probesRun, "both searches ran 2 + 2 probes");
    assertEquals(8, calls.size(), "one call per probe");
    for (int i = 0; i < calls.size(); i++) {
      assertEquals(8, calls.get(i)[1], "planned: (2 + steps) × cells");
      assertEquals(i + 1, calls.get(i)[0], "done grows by one per probe");
    }

    calls.clear();
    CapacitySearch.Targets unreachable = CapacitySearch.Targets.parse(List.of("normalized_latency.mean<=0.001ms", "rejected.fraction<=0.5"));
    List<CapacitySearch.Capacity> none = CapacitySearch.searchCells(cells("requests:preset=sharegpt,count=60", "vllm"), unreachable, 0.1, 20, 3,
        (done, planned) -> calls.add(new int[] {done, planned}));
    assertEquals(1, none.get(0).probes().size(), "the low bound failed: no other probe");
    assertEquals(5, calls.get(calls.size() - 1)[0], "the probes an early answer made unnecessary count as done");
    assertTrue(calls.stream().allMatch(c -> c[1] == 5));
  }
}

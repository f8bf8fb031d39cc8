package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.registry.WorkloadRegistry;
import kvsim.run.ServingGrid;
import kvsim.run.ServingRunner;
import kvsim.run.ServingSpec;
import org.junit.jupiter.api.Test;

/** Serving progress: requests done of the workload's count in every cell, runs on one thread told apart (Note [Runs told apart]). */
class ServingProgressTest {
  @Test
  void theTotalIsTheGeneratorsCountWhereItIsKnown() {
    assertEquals(300, ServingProgress.requestCount(WorkloadRegistry.resolveRequests("requests:preset=sharegpt,count=300", java.util.Map.of())));
    assertEquals(1000, ServingProgress.requestCount(WorkloadRegistry.resolveRequests("requests:preset=sharegpt", java.util.Map.of())));
  }

  @Test
  void countsFinishedRequestsOfEveryCellAndARunOverAsWhole() {
    StringWriter text = new StringWriter();
    long[] now = {0};
    Progress lines = new Progress(new PrintWriter(text), "serving", "requests", () -> now[0] += 10_000_000_000L);
    List<ServingGrid.Cell> cells = ServingGrid.cells(ServingSpec.Request.of("requests:preset=sharegpt,count=100", List.of("vllm", "orca-max"),
        Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.KV_MEMORY, "12GiB")), List.of());
    ServingRunner.Progress p = ServingProgress.of(lines, cells);
    p.update("vllm", 256, 40, 0);
    p.update("vllm", 512, 90, 0);
    p.update("vllm", 256, 5, 0); // the same thread's next run: the first is over, 100 requests
    ServingProgress.finish(lines, cells); // every run over: the last line
    assertEquals(List.of(
        "kvsim: serving: 40/200 requests, 20 %, 10 s elapsed, ETA 40 s",
        "kvsim: serving: 90/200 requests, 45 %, 20 s elapsed, ETA 24 s",
        "kvsim: serving: 105/200 requests, 52 %, 30 s elapsed, ETA 27 s",
        "kvsim: serving: 200/200 requests, 100 %, 40 s elapsed"), text.toString().lines().toList());
  }
}

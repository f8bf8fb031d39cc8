package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.config.GridSpec;
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import org.junit.jupiter.api.Test;

/** Grid cells: the fixed order of the cross product, and a cell's row is the run it names. */
class GridSweepTest {
  private static GridSpec grid(String text) {
    return GridSpec.parse("g.yaml", text, Path.of("."));
  }

  @Test
  void aCellsCostIsEstimatedFromItsGeneratorsSizeOrItsTracesBytes(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
    java.nio.file.Files.writeString(dir.resolve("t.jsonl"), "x".repeat(6400));
    GridSpec g = GridSpec.parse("g.yaml",
        "workloads: [\"churn:ops=2_000\", \"requests:preset=azure-conv,count=300\", t.jsonl, gone.jsonl, churn]\nallocators: [first-fit]\n", dir);
    List<GridSweep.Cell> cells = GridSweep.cells(g);
    assertEquals(List.of(2000L, 300L, 100L, 0L, 0L), cells.stream().map(c -> GridSweep.estimatedCost(g, c)).toList(),
        "ops=, count=, a trace's bytes / 64, a missing file and a generator without a size: unknown (0)");
  }

  @Test
  void cellsAreTheCrossProductWithTheSeedVaryingFastest() {
    List<GridSweep.Cell> cells = GridSweep.cells(grid(
        "workloads: [\"churn:ops=10\", \"churn:ops=20\"]\nallocators: [first-fit, buddy]\nset: {first-fit.alignment: [512, 4KiB]}\nseeds: 1..3\n"));
    assertEquals(2 * 2 * 2 * 3, cells.size());
    assertEquals("workload=churn:ops=10|first-fit.alignment=512|allocator=first-fit|seed=1", cells.get(0).key());
    assertEquals("workload=churn:ops=10|first-fit.alignment=512|allocator=first-fit|seed=2", cells.get(1).key());
    assertEquals("workload=churn:ops=10|first-fit.alignment=512|allocator=buddy|seed=1", cells.get(3).key());
    assertEquals("workload=churn:ops=20|first-fit.alignment=4KiB|allocator=buddy|seed=3", cells.get(23).key());
    for (int i = 0; i < cells.size(); i++) {
      assertEquals(i, cells.get(i).index());
    }
  }

  @Test
  void anL1CellsRowHoldsTheMetricsOfTheSameRunMadeDirectly() throws IOException {
    GridSpec g = grid("workloads: [\"churn:ops=500\"]\nallocators: [first-fit]\nset: {first-fit.alignment: [2MiB]}\nseeds: [7]\n");
    Map<String, Object> row = GridSweep.run(g, GridSweep.cells(g).get(0));
    RunSpec spec = RunSpec.resolve(RunRequest.of("churn:ops=500,seed=7").withAllocators(List.of("first-fit"))
        .withSettings(List.of("first-fit.alignment=2MiB")), new PrintWriter(PrintWriter.nullWriter()));
    AllocatorResult direct = new Runner("", 1).run(spec, n -> null, null).results().get(0);
    assertEquals("7", row.get("seed"));
    assertEquals("2MiB", row.get("first-fit.alignment"));
    assertEquals(direct.counters().get("oom_count"), row.get("oom_count"));
    assertEquals(direct.summaries().get("external_fragmentation").peak(), row.get("external_fragmentation.peak"));
    assertEquals(Math.round(direct.summaries().get("allocated_bytes").peak()), row.get("allocated_bytes.peak"));
  }

  @Test
  void aServingCellsRowHoldsItsLatencies() throws IOException {
    GridSpec g = grid("workloads: [\"requests:count=20,rate=5\"]\nsystems: [vllm]\nset: {block-size: [32]}\nseeds: [2]\n");
    Map<String, Object> row = GridSweep.run(g, GridSweep.cells(g).get(0));
    assertEquals("32", row.get("block-size"));
    assertEquals(20, ((Number) row.get("requests_arrived")).intValue());
    assertTrue(row.keySet().stream().anyMatch(k -> k.startsWith("ttft_seconds.")), row.keySet().toString());
  }

  @Test
  void aGeneratorNamedWithoutOptionsTakesTheSeed() throws IOException {
    GridSpec g = grid("workloads: [churn]\nallocators: [first-fit]\nseeds: [4]\n");
    Map<String, Object> row = GridSweep.run(g, GridSweep.cells(g).get(0));
    assertEquals(1000L, ((Number) row.get("events")).longValue());
  }

  @Test
  void seedsOnATraceOrOnAWorkloadWithItsOwnSeedAreRefused() {
    GridSpec trace = grid("workloads: [t.jsonl]\nallocators: [first-fit]\nseeds: [1]\n");
    assertTrue(assertThrows(InputException.class, () -> GridSweep.run(trace, GridSweep.cells(trace).get(0))).getMessage()
        .contains("seeds: the workload t.jsonl is a trace"));
    GridSpec own = grid("workloads: [\"churn:seed=3\"]\nallocators: [first-fit]\nseeds: [1]\n");
    assertTrue(assertThrows(InputException.class, () -> GridSweep.run(own, GridSweep.cells(own).get(0))).getMessage()
        .contains("fixes its own seed"));
  }
}

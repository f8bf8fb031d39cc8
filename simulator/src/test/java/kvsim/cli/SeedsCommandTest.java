package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.report.CapacityResultsReader;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code capacity --seeds}, a sweep over seeds grouped per cell, and {@code kvsim diff} of sweeps and replay seed sweeps. */
class SeedsCommandTest {
  @TempDir Path dir;

  @Test
  void capacityOverSeedsReportsTheMedianRateWithItsInterval() throws IOException {
    Path out = dir.resolve("cap");
    CliRun r = CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--seeds", "1..3", "--slo", "ttft.p90<=2s", "--slo", "rejected.fraction<=0.3",
        "--kv-memory", "4GiB", "--steps", "2", "--max-rate", "8", "-o", out.toString()).ok();
    assertTrue(r.out().contains("seeds 1..3 (3 searches per system)"), r.out());
    assertTrue(r.out().contains("over 3 seeds"), r.out());
    JsonNode s = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertEquals("[1,2,3]", s.get("seeds").toString());
    JsonNode vllm = s.get("systems").get(0);
    JsonNode rate = vllm.get("intervals").get("max_rate_rps");
    assertEquals(3, rate.get("n").asInt());
    // Three seeds: the median seed's search is the answer, the interval the whole range.
    assertEquals(rate.get("median").asDouble(), vllm.get("max_rate_rps").asDouble());
    List<String> perSeed = Files.readAllLines(out.resolve("per_seed.csv"));
    assertEquals(4, perSeed.size());
    double[] rates = perSeed.subList(1, 4).stream().mapToDouble(l -> Double.parseDouble(l.split(",")[2])).sorted().toArray();
    assertEquals(rates[1], rate.get("median").asDouble(), 1e-6);
    assertEquals(rates[0], rate.get("low").asDouble(), 1e-6);
    assertEquals(rates[2], rate.get("high").asDouble(), 1e-6);
    CapacityResultsReader.read(out); // the folder reads back
  }

  @Test
  void aSweepOverSeedsIsGroupedAndDiffed() throws IOException {
    Path grid = dir.resolve("g.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, buddy]\nseeds: 1..5\n");
    Path a = dir.resolve("a");
    CliRun r = CliRun.of("sweep", grid.toString(), "-q", "-o", a.toString()).ok();
    assertTrue(r.out().contains("median [interval] over 5 seeds per cell"), r.out());
    List<String> lines = Files.readAllLines(a.resolve("sweep-seeds.csv"));
    assertEquals(3, lines.size());
    assertTrue(lines.get(1).startsWith("churn:ops=300,first-fit,5,"), lines.get(1));
    Path grid2 = dir.resolve("g2.yaml");
    Files.writeString(grid2, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, buddy]\nseeds: 6..10\n");
    Path b = dir.resolve("b");
    CliRun.of("sweep", grid2.toString(), "-q", "-o", b.toString()).ok();
    CliRun d = CliRun.of("diff", a.toString(), b.toString(), "--all").ok();
    assertTrue(d.out().contains("(sweep, 5 seeds (1 … 5))"), d.out());
    assertTrue(d.out().lines().anyMatch(l -> l.startsWith("workload=churn:ops=300 allocator=buddy") && l.contains("external_fragmentation.peak")), d.out());
  }

  @Test
  void replaySeedSweepsAndSingleReplaysAreOneKind() {
    Path a = dir.resolve("ra");
    Path b = dir.resolve("rb");
    CliRun.of("replay", "churn:ops=300", "-a", "first-fit", "--seeds", "1..5", "--quiet", "-o", a.toString()).ok();
    CliRun.of("replay", "churn:ops=300", "-a", "first-fit", "--quiet", "-o", b.toString()).ok();
    CliRun d = CliRun.of("diff", a.toString(), b.toString()).ok();
    assertTrue(d.out().contains("A: " + a + " (replay, 5 seeds"), d.out());
    assertTrue(d.out().contains("B: " + b + " (replay, single run)"), d.out());
    assertTrue(d.out().contains("no noise estimate"), d.out());
  }
}

package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.report.CapacityResults;
import kvsim.report.CapacityResultsReader;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim capacity} on attainment: the highest rate at which a share of the requests meet every
 * per-request target, rejected ones counting as missing, found within the bisection; every probe
 * carries its attainment in the JSON, summary, probes.csv and chart.
 */
class CapacityAttainmentTest {
  @TempDir Path dir;

  @Test
  void findsTheHighestRateAtWhichHalfTheRequestsMeetTheTtftWithinTheBisection() throws IOException {
    Path out = dir.resolve("cap");
    double low = 0.1;
    double high = 10;
    int steps = 4;
    // OPT-13B rejects the ShareGPT prompts of 2,048 tokens or more (45 of these 100): they count as missing, so at most 55 % can meet it.
    CliRun run = CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40",
        "--slo", "ttft<=1s", "--slo", "attainment>=0.5", "--min-rate", "0.1", "--max-rate", "10", "--steps", "4", "--json", "-o", out.toString()).ok();
    JsonNode s = new ObjectMapper().readTree(run.out()).get("systems").get("vllm");
    double rate = s.get("max_rate_rps").asDouble();
    assertTrue(rate > low && rate < high, s.toString());
    JsonNode probes = s.get("probes");
    assertEquals(2 + steps, probes.size());
    double lowestFailed = high;
    for (JsonNode p : probes) {
      double a = p.get("attainment").asDouble();
      assertTrue(a <= 0.55 + 1e-12, "rejected requests miss: " + p);
      assertEquals(a >= 0.5, p.get("met").asBoolean(), "no other target: met is the attainment's verdict " + p);
      assertEquals(p.get("rate_rps").asDouble() * a, p.get("goodput_rps").asDouble(), 1e-12, "goodput = rate x attainment");
      if (!p.get("met").asBoolean()) {
        double r = p.get("rate_rps").asDouble();
        lowestFailed = r > rate ? Math.min(lowestFailed, r) : lowestFailed;
      }
    }
    assertTrue(lowestFailed - rate <= (high - low) / (1 << steps) + 1e-9, "the answer is within the bisection's last interval: " + rate + " " + lowestFailed);
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertEquals(0.5, summary.get("attainment_required").asDouble());
    assertEquals(1.0, summary.get("rejected_fraction_allowed").asDouble(), "no default rejection target beside per-request targets");
    assertEquals("[\"ttft<=1s\",\"attainment>=0.5\"]", summary.get("targets").toString());
    List<String> csv = Files.readAllLines(out.resolve("probes.csv"));
    assertTrue(csv.get(0).endsWith(",goodput_rps,attainment"), csv.get(0));
    assertTrue(Files.readString(out.resolve("capacity.svg")).contains("SLO attainment against load"), "the chart plots the attainment");
    CapacityResults back = CapacityResultsReader.read(out);
    assertEquals(probes.get(0).get("attainment").asDouble(), back.systems().get(0).probes().get(0).attainment());
    assertTrue(Files.readString(out.resolve("report.html")).contains("attainment 0.55"), "the report's probes");
  }

  @Test
  void aPerRequestTargetAloneMeansEveryRequestAndRejectionsThenMissIt() throws IOException {
    Path out = dir.resolve("all");
    CliRun run = CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40",
        "--slo", "ttft<=1000s", "--max-rate", "10", "--steps", "0", "-o", out.toString()).ok();
    List<String> lines = run.out().lines().toList();
    assertEquals("workload: requests:preset=sharegpt,count=100; targets: ttft<=1000s, attainment>=1 (the default: every request meets the per-request"
        + " targets), rejected and aborted requests count as missing the per-request targets", lines.get(0));
    assertTrue(lines.get(1).contains("attainment"), lines.get(1));
    assertTrue(lines.get(3).matches("vllm +< 0.100 +- +45 of 100 \\(45.0 %\\) +55.0 % +1"), lines.get(3));
    JsonNode s = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems").get(0);
    assertEquals("[\"attainment>=1\"]", s.get("unmet_at_min_rate").toString());
    assertEquals(1.0, new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("attainment_required").asDouble());
  }

  @Test
  void anAttainmentWithoutAPerRequestTargetIsExitTwo() {
    Path out = dir.resolve("bad");
    CliRun run = CliRun.of("capacity", "requests:count=10", "--slo", "attainment>=0.9", "--slo", "e2e.mean<=1s", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --slo: 'attainment>=0.9' needs a per-request target to count against (e.g. --slo 'ttft<=1s'); for the share of"
        + " requests finished, give rejected.fraction<=F", run.err().strip());
    assertFalse(Files.exists(out));
  }
}

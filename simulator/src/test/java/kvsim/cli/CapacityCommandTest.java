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
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim capacity}: JSON on stdout alone, the files of the search, bad targets and workloads refused with nothing written. */
class CapacityCommandTest {
  @TempDir Path dir;

  @Test
  void jsonGivesEachSystemsRateAndProbesAndTheFolderHoldsCsvAndChart() throws IOException {
    Path out = dir.resolve("cap");
    CliRun run = CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--system", "vllm,orca-oracle", "--model", "opt-13b",
        "--device", "a100-40", "--kv-memory", "12GiB", "--slo", "normalized_latency.mean<=0.2s", "--slo", "rejected.fraction<=0.5",
        "--max-rate", "10", "--steps", "3", "--json", "-o", out.toString()).ok();
    JsonNode root = new ObjectMapper().readTree(run.out());
    for (String system : new String[] {"vllm", "orca-oracle"}) {
      JsonNode s = root.get("systems").get(system);
      double rate = s.get("max_rate_rps").asDouble();
      assertTrue(rate > 0, system);
      assertEquals(5, s.get("probes").size(), system);
      // OPT-13B rejects the prompts of 2,048 tokens or more: the answer says how many, and its goodput.
      long requests = s.get("requests").asLong();
      long finished = s.get("finished").asLong();
      assertEquals(100, requests, system);
      assertTrue(s.get("rejected").asLong() > 0 && finished + s.get("rejected").asLong() == requests, s.toString());
      assertEquals((double) (requests - finished) / requests, s.get("rejected_fraction").asDouble(), 1e-12);
      assertEquals(rate * finished / requests, s.get("goodput_rps").asDouble(), 1e-12);
      assertEquals(0, s.get("unmet_at_min_rate").size());
      assertTrue(s.get("probes").get(0).has("goodput_rps") && s.get("probes").get(0).has("rejected_fraction"), s.toString());
    }
    assertTrue(run.err().contains("results: " + out), run.err());
    assertTrue(Files.size(out.resolve("capacity.png")) > 0);
    assertTrue(Files.readString(out.resolve("probes.csv")).startsWith(
        "system,rate_rps,met,requests,finished,rejected,aborted,rejected_fraction,goodput_rps,normalized_latency_mean_seconds\n"));
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertEquals("kvsim-capacity", summary.get("format").asText());
    assertEquals(0.5, summary.get("rejected_fraction_allowed").asDouble());
    assertEquals(root.get("systems").get("vllm").get("goodput_rps"), summary.get("systems").get(0).get("goodput_rps"));
    String html = Files.readString(out.resolve("report.html"));
    assertTrue(html.contains(">goodput (req/s)</th>") && html.contains(">not finished</th>"), "the report gives goodput and rejections");
  }

  @Test
  void aSystemThatRejectsAtEveryRateHasNoCapacityAndTheTableSaysSo() throws IOException {
    Path out = dir.resolve("rej");
    CliRun run = CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40",
        "--kv-memory", "12GiB", "--slo", "normalized_latency.mean<=0.2s", "--max-rate", "10", "--steps", "3", "-o", out.toString()).ok();
    List<String> lines = run.out().lines().toList();
    assertEquals("workload: requests:preset=sharegpt,count=100; targets: normalized_latency.mean<=0.2s, rejected.fraction<=0"
        + " (the default: every request must finish)", lines.get(0));
    assertTrue(lines.get(1).contains("max rate req/s") && lines.get(1).contains("goodput req/s") && lines.get(1).contains("not finished"), lines.get(1));
    String row = lines.get(3);
    assertTrue(row.matches("vllm +none +- +[0-9]+ of 100 \\([0-9.]+ %\\) +1"), row);
    assertTrue(lines.get(4).startsWith("vllm: no rate meets rejected.fraction<=0: "), lines.get(4));
    assertTrue(lines.get(4).contains("requests not finished at 0.100 req/s, the lowest rate probed"), lines.get(4));
    assertTrue(lines.get(4).contains("--slo 'rejected.fraction<="), lines.get(4));
    JsonNode s = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems").get(0);
    assertEquals(0.0, s.get("max_rate_rps").asDouble());
    assertTrue(s.get("goodput_rps").isNull(), s.toString());
    assertEquals("[\"rejected.fraction<=0\"]", s.get("unmet_at_min_rate").toString());
    assertTrue(s.get("rejected").asLong() > 0);
    assertEquals(1, s.get("probes").size());
    assertFalse(s.get("probes").get(0).get("met").asBoolean());
    String csv = Files.readString(out.resolve("probes.csv"));
    assertTrue(csv.lines().skip(1).findFirst().orElseThrow().startsWith("vllm,0.100000,false,100,"), csv);
    String html = Files.readString(out.resolve("report.html"));
    assertTrue(html.contains(">none</td>") && html.contains("vllm: the lowest rate probed misses rejected.fraction&lt;=0"), "the report says so");
    assertTrue(Files.readString(out.resolve("capacity.svg")).contains("vllm: no rate meets the targets"), "and the chart's legend");
  }

  @Test
  void aRejectionTargetGivenTwiceOrOutOfRangeIsExitTwo() {
    Path out = dir.resolve("bad2");
    CliRun twice = CliRun.of("capacity", "requests:count=10", "--slo", "e2e.mean<=1s", "--slo", "rejected.fraction<=0.1", "--slo",
        "rejected.fraction<=0.2", "-o", out.toString());
    assertEquals(2, twice.exitCode());
    assertEquals("kvsim: error: --slo: 'rejected.fraction<=0.2' is a second rejection target after 'rejected.fraction<=0.1'; give one",
        twice.err().strip());
    CliRun range = CliRun.of("capacity", "requests:count=10", "--slo", "e2e.mean<=1s", "--slo", "rejected.fraction<=2", "-o", out.toString());
    assertEquals(2, range.exitCode());
    assertTrue(range.err().contains("--slo: 'rejected.fraction<=2' is not rejected.fraction<=F with F in [0, 1]"), range.err());
    CliRun alone = CliRun.of("capacity", "requests:count=10", "--slo", "rejected.fraction<=0.1", "-o", out.toString());
    assertEquals(2, alone.exitCode());
    assertTrue(alone.err().contains("--slo: give at least one latency target"), alone.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void aBadTargetIsExitTwoAndWritesNothing() {
    Path out = dir.resolve("bad");
    CliRun run = CliRun.of("capacity", "requests:count=10", "--slo", "latency<=1s", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("--slo: 'latency<=1s' is not a target: latency is no per-request metric; expected METRIC<=VALUE"), run.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void aTraceOfOneRequestHasNoRateToScale() throws IOException {
    Path trace = dir.resolve("t.jsonl");
    Files.writeString(trace, "{\"format\":\"kvsim-requests\",\"version\":1}\n{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":5}\n");
    Path out = dir.resolve("out");
    CliRun run = CliRun.of("capacity", trace.toString(), "--slo", "e2e.mean<=1s", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("1 request: no mean arrival rate, so it cannot be run at other rates"), run.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void aRecordedTraceIsScaledToEachRateAndItsMeanRateIsEchoed() throws IOException {
    Path out = dir.resolve("burst");
    CliRun run = CliRun.of("capacity", "burstgpt:../workloads/burstgpt-sample.csv,zero-output=drop", "--system", "vllm,orca-max",
        "--slo", "ttft.p90<=0.5s", "--min-rate", "0.5", "--max-rate", "400", "--steps", "4", "--json", "-o", out.toString()).ok();
    JsonNode root = new ObjectMapper().readTree(run.out());
    JsonNode probes = root.get("systems").get("orca-max").get("probes");
    assertEquals(6, probes.size(), root.toString());
    assertTrue(probes.get(0).get("met").asBoolean(), "46 requests at 0.5 req/s meet a 0.5 s TTFT");
    assertTrue(root.get("systems").get("vllm").get("max_rate_rps").asDouble() > root.get("systems").get("orca-max").get("max_rate_rps").asDouble(),
        root.toString());
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    // 46 requests, the first at 7 s, the last at 189 s of the sample.
    assertEquals(45 / 182.0, summary.get("trace_mean_rate_rps").asDouble(), 1e-12);
  }
}

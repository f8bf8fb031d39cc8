package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
        "--device", "a100-40", "--kv-memory", "12GiB", "--slo", "normalized_latency.mean<=0.2s", "--max-rate", "10", "--steps", "3",
        "--json", "-o", out.toString()).ok();
    JsonNode root = new ObjectMapper().readTree(run.out());
    for (String system : new String[] {"vllm", "orca-oracle"}) {
      JsonNode s = root.get("systems").get(system);
      assertTrue(s.get("max_rate_rps").asDouble() > 0, system);
      assertEquals(5, s.get("probes").size(), system);
    }
    assertTrue(run.err().contains("results: " + out), run.err());
    assertTrue(Files.size(out.resolve("capacity.png")) > 0);
    assertTrue(Files.readString(out.resolve("probes.csv")).startsWith("system,rate_rps,met,finished,rejected,normalized_latency_mean_seconds\n"));
    assertEquals("kvsim-capacity", new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("format").asText());
  }

  @Test
  void aBadTargetIsExitTwoAndWritesNothing() {
    Path out = dir.resolve("bad");
    CliRun run = CliRun.of("capacity", "requests:count=10", "--slo", "latency<=1s", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("--slo: 'latency<=1s' is not METRIC.STAT<=VALUE"), run.err());
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

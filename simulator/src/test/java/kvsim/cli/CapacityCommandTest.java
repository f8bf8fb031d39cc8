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
  void aTraceFileHasNoRateToScale() throws IOException {
    Path trace = dir.resolve("t.jsonl");
    Files.writeString(trace, "{\"format\":\"kvsim-requests\",\"version\":1}\n{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":5}\n");
    Path out = dir.resolve("out");
    CliRun run = CliRun.of("capacity", trace.toString(), "--slo", "e2e.mean<=1s", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("only workloads with a rate option"), run.err());
    assertFalse(Files.exists(out));
  }
}

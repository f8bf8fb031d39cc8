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

/** {@code --set} grids through {@code kvsim serving} and {@code kvsim capacity}: a row and an entry per cell, byte-identical reruns. */
class GridCommandTest {
  @TempDir Path dir;

  @Test
  void servingWritesOneEntryPerCellWithItsSettingsAndTheSameBytesTwice() throws IOException {
    String[] args = {"serving", "requests:preset=sharegpt,rate=4,count=150", "--system", "vllm,vllm-v0", "--model", "opt-13b", "--device", "a100-40",
      "--kv-memory", "12GiB", "--set", "block-size=8,32", "-q", "-o"};
    CliRun run = CliRun.of(concat(args, dir.resolve("a").toString())).ok();
    CliRun.of(concat(args, dir.resolve("b").toString())).ok();
    assertEquals(Files.readString(dir.resolve("a/summary.json")), Files.readString(dir.resolve("b/summary.json")));
    assertEquals(Files.readString(dir.resolve("a/timeseries.csv")), Files.readString(dir.resolve("b/timeseries.csv")));
    String[] lines = run.out().split("\\R");
    assertTrue(lines[1].startsWith("block-size  system "), run.out());
    assertTrue(lines[3].startsWith("8           vllm "), run.out());
    assertTrue(lines[6].startsWith("32          vllm-v0 "), run.out());
    JsonNode s = new ObjectMapper().readTree(dir.resolve("a/summary.json").toFile());
    assertEquals("[\"8\",\"32\"]", s.get("grid").get("block-size").toString());
    assertEquals(4, s.get("systems").size());
    JsonNode last = s.get("systems").get(3);
    assertEquals("vllm-v0", last.get("system").asText());
    assertEquals("32", last.get("cell").get("block-size").asText());
    assertEquals(32, s.get("systems").get(2).get("parts").get("block_tokens").asInt());
    assertEquals(8, s.get("systems").get(0).get("parts").get("block_tokens").asInt());
    assertTrue(Files.readString(dir.resolve("a/timeseries.csv")).contains("\nvllm block-size=32,"));
  }

  @Test
  void capacityGivesOneRatePerCell() throws IOException {
    Path out = dir.resolve("cap");
    CliRun run = CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40",
        "--set", "kv-memory=4GiB,12GiB", "--slo", "normalized_latency.mean<=0.2s", "--slo", "rejected.fraction<=0.5", "--max-rate", "10", "--steps", "3", "--json",
        "-o", out.toString()).ok();
    JsonNode root = new ObjectMapper().readTree(run.out());
    double small = root.get("systems").get("vllm kv-memory=4GiB").get("max_rate_rps").asDouble();
    double large = root.get("systems").get("vllm kv-memory=12GiB").get("max_rate_rps").asDouble();
    assertTrue(large > 0 && small <= large, small + " vs " + large);
    JsonNode s = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertFalse(s.has("kv_memory_bytes"), "the cells differ in KV memory; each has its own");
    assertEquals(4L << 30, s.get("systems").get(0).get("kv_memory_bytes").asLong());
    assertTrue(Files.readString(out.resolve("probes.csv")).startsWith("system,kv-memory,rate_rps,met,"));
  }

  @Test
  void aBadSettingIsExitTwoAndWritesNothing() {
    Path out = dir.resolve("bad");
    CliRun run = CliRun.of("serving", "requests:count=10", "--set", "block-size=8", "--set", "buddy.min-block=4MiB", "-q", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("allocator 'buddy' is not under test in the systems run [vllm]"), run.err());
    assertFalse(Files.exists(out));
  }

  private static String[] concat(String[] a, String b) {
    String[] out = java.util.Arrays.copyOf(a, a.length + 1);
    out[a.length] = b;
    return out;
  }
}

package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A result says what was run and why requests failed; an empty workload is not a success. */
class HonestResultsTest {
  @TempDir Path tmp;

  private static final String HEADER = "{\"format\":\"kvsim-l1\",\"version\":1}";

  private JsonNode summary(Path dir) throws IOException {
    return new ObjectMapper().readTree(dir.resolve("summary.json").toFile());
  }

  @Test
  void replayUsesTheModelAndDeviceNamedInTheTraceHeader() throws IOException {
    Path trace = tmp.resolve("kv.jsonl");
    CliRun.of("generate", "kv", "--model", "llama-3-8b", "--device", "a100-40", "--requests", "5", "-o", trace.toString()).ok();
    Path out = tmp.resolve("run");
    CliRun run = CliRun.of("replay", trace.toString(), "-a", "paged", "-o", out.toString(), "--quiet").ok();
    assertEquals("", run.err());
    JsonNode s = summary(out);
    assertEquals("llama-3-8b", s.get("model").get("name").asText());
    assertEquals(131072, s.get("model").get("kv_bytes_per_token").asLong());
    assertEquals("a100-40", s.get("device").get("name").asText());
    // paged's pages are 16 tokens of the header's model, on the header's 40 GiB device
    assertEquals(16L * 131072, s.get("allocators").get(0).get("extra").get("page_bytes").asLong());
    assertEquals(40L * 1024 * 1024 * 1024 / (16L * 131072), s.get("allocators").get(0).get("extra").get("pages_total").asLong() + 1);
  }

  @Test
  void aCommandLineModelThatContradictsTheHeaderIsUsedAndReported() throws IOException {
    Path trace = tmp.resolve("kv.jsonl");
    CliRun.of("generate", "kv", "--model", "llama-3-8b", "--requests", "5", "-o", trace.toString()).ok();
    Path out = tmp.resolve("run");
    CliRun run = CliRun.of("replay", trace.toString(), "-a", "paged", "--model", "llama-2-7b", "-o", out.toString(), "--quiet").ok();
    assertTrue(run.err().contains("warning: --model llama-2-7b differs from the model the trace was written for (llama-3-8b"), run.err());
    assertEquals("llama-2-7b", summary(out).get("model").get("name").asText());
  }

  @Test
  void theTableShowsTooLargeAndActivationRegionRefusals() throws IOException {
    Path trace = tmp.resolve("t.jsonl");
    Files.writeString(trace, HEADER + "\n"
        + "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":33554432,\"tag\":\"temp\"}\n"
        + "{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":8388608,\"tag\":\"kv\"}\n");
    CliRun run = CliRun.of("replay", trace.toString(), "-a", "paged", "-o", tmp.resolve("a").toString(), "--quiet").ok();
    List<String> header = cells(run.out(), "allocator");
    List<String> row = cells(run.out(), "paged");
    assertEquals("1", row.get(header.indexOf("OOMs")), run.out());
    assertEquals("1", row.get(header.indexOf("too large")), run.out());
    assertEquals("0", row.get(header.indexOf("act. OOMs")), run.out());
    // With a 16 MiB activations region the unsplittable 32 MiB request is refused there instead.
    CliRun planned = CliRun.of("replay", trace.toString(), "-a", "paged", "--activations", "16MiB", "-o", tmp.resolve("b").toString(), "--quiet").ok();
    header = cells(planned.out(), "allocator");
    row = cells(planned.out(), "paged");
    assertEquals("0", row.get(header.indexOf("OOMs")), planned.out());
    assertEquals("1", row.get(header.indexOf("act. OOMs")), planned.out());
  }

  /** The cells of the table row starting with {@code first}, split on runs of two or more spaces. */
  private static List<String> cells(String out, String first) {
    return out.lines()
        .filter(l -> l.startsWith(first + " "))
        .findFirst()
        .map(l -> Arrays.asList(l.trim().split("\\s{2,}")))
        .orElseThrow(() -> new AssertionError("no row " + first + " in\n" + out));
  }

  @Test
  void anEmptyWorkloadExitsTwoWithNoEventsAndWritesNothing() throws IOException {
    Path trace = Files.writeString(tmp.resolve("empty.jsonl"), HEADER + "\n");
    Path out = tmp.resolve("run");
    CliRun run = CliRun.of("replay", trace.toString(), "-a", "first-fit", "-o", out.toString(), "--quiet");
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: " + trace + ": no events (the workload is empty; nothing to simulate)", run.err().strip());
    CliRun gen = CliRun.of("replay", "churn:ops=0", "-a", "first-fit", "-o", out.toString(), "--quiet");
    assertEquals(2, gen.exitCode());
    assertTrue(gen.err().contains("churn:ops=0: no events"), gen.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void aSeedListIsReportedAsGiven() throws IOException {
    Path out = tmp.resolve("sweep");
    CliRun run = CliRun.of("replay", "churn:ops=20", "-a", "first-fit", "--seeds", "1,5,9", "-o", out.toString(), "--quiet").ok();
    assertTrue(run.out().startsWith("workload: churn:ops=20, seeds 1,5,9 (3 runs per allocator)"), run.out());
    JsonNode s = summary(out);
    assertEquals("[1,5,9]", s.get("seeds").toString());
    JsonNode perSeed = s.get("allocators").get(0).get("per_seed");
    assertEquals(List.of(1L, 5L, 9L), List.of(perSeed.get(0).get("seed").asLong(), perSeed.get(1).get("seed").asLong(), perSeed.get(2).get("seed").asLong()));
  }
}

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
import kvsim.trace.Request;
import kvsim.trace.RequestTraceReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim import azure|mooncake|lengths} and the importers as serving workloads. */
class ImportRequestsTest {
  @TempDir Path dir;

  private Path azure() throws IOException {
    Path p = dir.resolve("az,conv.csv");
    Files.writeString(p, "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,396,109\n2023-11-16 18:15:48.5000000,20,3\n");
    return p;
  }

  private Path mooncake() throws IOException {
    Path p = dir.resolve("mc.jsonl");
    Files.writeString(p, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
        + "{\"timestamp\": 1000, \"input_length\": 1100, \"output_length\": 4, \"hash_ids\": [0, 1, 2]}\n");
    return p;
  }

  @Test
  void importsAzureIntoARequestTraceByteIdenticallyTwice() throws IOException {
    Path a = dir.resolve("a.jsonl");
    Path b = dir.resolve("b.jsonl");
    CliRun run = CliRun.of("import", "azure", azure().toString(), "-o", a.toString()).ok();
    assertEquals("wrote 3 requests to " + a + " (3 rows read; 0 with 0 output tokens)", run.out().strip());
    CliRun.of("import", "azure", azure().toString(), "-o", b.toString()).ok();
    assertEquals(Files.readString(a), Files.readString(b));
    try (RequestTraceReader r = RequestTraceReader.open(a)) {
      assertEquals("az,conv.csv", r.header().get("source"));
      assertEquals("azure", r.header().get("import"));
      Request first = r.next();
      assertEquals(0, first.arrivalNanos());
      assertEquals(319_410_000L, r.next().arrivalNanos());
    }
  }

  @Test
  void importsMooncakeWithItsHashBlockAndLengthsWithASeed() throws IOException {
    Path m = dir.resolve("m.jsonl");
    CliRun.of("import", "mooncake", mooncake().toString(), "-o", m.toString()).ok();
    try (RequestTraceReader r = RequestTraceReader.open(m)) {
      assertEquals(512, r.hashBlockTokens());
      assertEquals(3, r.next().hashIds().length + 1);
      assertEquals(1_000_000_000L, r.next().arrivalNanos());
    }
    Path table = dir.resolve("t.csv");
    Files.writeString(table, "num_prefill_tokens,num_decode_tokens,pd_ratio\n10,20,0.5\n30,40,0.75\n");
    Path l1 = dir.resolve("l1.jsonl");
    Path l2 = dir.resolve("l2.jsonl");
    CliRun.of("import", "lengths", table.toString(), "--rate", "3", "--seed", "5", "-o", l1.toString()).ok();
    CliRun.of("import", "lengths", table.toString(), "--rate", "3", "--seed", "5", "-o", l2.toString()).ok();
    assertEquals(Files.readString(l1), Files.readString(l2));
  }

  @Test
  void aBadRowIsExitTwoWithFileLineFieldAndWritesNothing() throws IOException {
    Path in = dir.resolve("bad.csv");
    Files.writeString(in, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,374,44\n2023-11-16 18:15:45,374,44\n");
    Path out = dir.resolve("out.jsonl");
    CliRun run = CliRun.of("import", "azure", in.toString(), "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains(in + ":3: TIMESTAMP: time goes backwards"), run.err());
    assertFalse(Files.exists(out));
    try (var files = Files.list(dir)) {
      assertEquals(1, files.count(), "no temporary file left behind");
    }
  }

  @Test
  void importersAreServingWorkloadsAPathWithACommaIncluded() throws IOException {
    Path res = dir.resolve("res");
    CliRun.of("serving", "azure:" + azure() + ",speedup=2,to=10", "--system", "vllm", "-q", "-o", res.toString()).ok();
    JsonNode az = new ObjectMapper().readTree(res.resolve("summary.json").toFile());
    assertEquals(3, az.findValue("requests_finished").asLong(), az.toString());
    Path res2 = dir.resolve("res2");
    CliRun.of("serving", "mooncake:" + mooncake(), "--system", "vllm", "-q", "-o", res2.toString()).ok();
    String summary = Files.readString(res2.resolve("summary.json"));
    assertTrue(summary.contains("\"prefix_cache_hit_rate\""), summary);
    assertTrue(summary.contains("\"prefix_cache_hits\""), summary);
  }

  @Test
  void aPathWithAColonIsAnImporterPath() throws IOException {
    Path sub = Files.createDirectories(dir.resolve("a:b"));
    Path in = sub.resolve("mc.jsonl");
    Files.copy(mooncake(), in);
    Path res = dir.resolve("res3");
    CliRun.of("serving", "mooncake:" + in + ",from=0.5", "--system", "vllm", "-q", "-o", res.toString()).ok();
    JsonNode s = new ObjectMapper().readTree(res.resolve("summary.json").toFile());
    assertEquals(1, s.findValue("requests_finished").asLong(), "the window keeps the second request only");
  }

  @Test
  void aBadImporterOptionIsExitTwo() throws IOException {
    CliRun run = CliRun.of("serving", "azure:" + azure() + ",rate=2", "--system", "vllm", "-q", "-o", dir.resolve("x").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("import azure: unknown option 'rate'"), run.err());
    CliRun missing = CliRun.of("serving", "mooncake:" + dir.resolve("none.jsonl"), "--system", "vllm", "-q", "-o", dir.resolve("y").toString());
    assertEquals(2, missing.exitCode());
    assertTrue(missing.err().contains("none.jsonl: no such file"), missing.err());
  }

  @Test
  void importsBurstGptWithFiltersAndRunsItAsAWorkload() throws IOException {
    Path sample = Path.of("..", "workloads", "burstgpt-sample.csv");
    Path out = dir.resolve("gpt4.jsonl");
    CliRun run = CliRun.of("import", "burstgpt", sample.toString(), "--model", "GPT-4", "--log-type", "API log", "--zero-output", "drop",
        "-o", out.toString()).ok();
    assertEquals("wrote 7 requests to " + out + " (48 rows read; 1 with 0 output tokens)", run.out().strip());
    try (RequestTraceReader r = RequestTraceReader.open(out)) {
      assertEquals("burstgpt", r.header().get("import"));
      assertEquals(3, r.next().id());
    }
    Path res = dir.resolve("burst");
    CliRun.of("serving", "burstgpt:" + sample + ",model=ChatGPT,log-type=Conversation log,zero-output=one", "--system", "vllm", "-q",
        "-o", res.toString()).ok();
    JsonNode s = new ObjectMapper().readTree(res.resolve("summary.json").toFile());
    assertEquals(24, s.findValue("requests_finished").asLong(), s.toString());
    Path none = dir.resolve("none.jsonl");
    CliRun bad = CliRun.of("import", "burstgpt", sample.toString(), "--model", "gpt-4", "--zero-output", "drop", "-o", none.toString());
    assertEquals(2, bad.exitCode());
    assertTrue(bad.err().contains(sample + ":49: Model: the filter model=gpt-4 matched none of the 48 rows"), bad.err());
    assertFalse(Files.exists(none));
  }

  @Test
  void aWindowThatSelectsNoRowIsExitTwoNamingFileAndWindowAndWritesNothing() throws IOException {
    Path in = azure();
    Path out = dir.resolve("empty.jsonl");
    CliRun past = CliRun.of("import", "azure", in.toString(), "--from", "1e9", "-o", out.toString());
    assertEquals(2, past.exitCode());
    assertEquals("kvsim: error: " + in + ": selects no request: the window from 1000000000 s to the end of the trace's own time holds none"
        + " of its 3 rows read (which span 0 to 1.81941 s; 3 before the window)", past.err().strip());
    assertEquals("", past.out());
    assertFalse(Files.exists(out));
    CliRun between = CliRun.of("import", "azure", in.toString(), "--from", "0.5", "--to", "1", "-o", out.toString());
    assertEquals(2, between.exitCode());
    assertTrue(between.err().contains("the window from 0.5 s to 1 s of the trace's own time holds none of its 3 rows read"), between.err());
    assertFalse(Files.exists(out));
    Path table = dir.resolve("t.csv");
    Files.writeString(table, "num_prefill_tokens,num_decode_tokens\n10,0\n30,0\n");
    CliRun dropped = CliRun.of("import", "lengths", table.toString(), "--rate", "3", "--zero-output", "drop", "-o", out.toString());
    assertEquals(2, dropped.exitCode());
    assertTrue(dropped.err().contains("2 dropped for 0 output tokens"), dropped.err());
    assertFalse(Files.exists(out));
    try (var files = Files.list(dir)) {
      assertEquals(List.of("az,conv.csv", "t.csv"), files.map(f -> f.getFileName().toString()).sorted().toList(), "no temporary file left behind");
    }
    // The same source refuses it as a serving workload, before any result folder is made.
    Path res = dir.resolve("res-empty");
    CliRun serving = CliRun.of("serving", "azure:" + in + ",from=1e9", "--system", "vllm", "-q", "-o", res.toString());
    assertEquals(2, serving.exitCode());
    assertTrue(serving.err().contains(in + ": selects no request: the window from 1000000000 s"), serving.err());
    assertFalse(Files.exists(res));
  }

  @Test
  void listShowsTheImporters() {
    String out = CliRun.of("list").ok().out();
    assertTrue(out.contains("Request log importers"), out);
    assertTrue(out.contains("  mooncake "), out);
    assertTrue(out.contains("  lengths "), out);
    assertTrue(out.contains("  burstgpt "), out);
  }
}

package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.testing.CliRun;
import kvsim.trace.RequestTraceReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim generate requests}: a request trace the reader takes back, byte-identical per seed; bad options write nothing. */
class GenerateRequestsTest {
  @TempDir Path dir;

  @Test
  void writesARequestTraceThatReadsBackWithTheAskedCount() throws IOException {
    Path a = dir.resolve("a.jsonl");
    Path b = dir.resolve("b.jsonl");
    CliRun run = CliRun.of("generate", "requests", "--preset", "sharegpt", "--rate", "2", "--count", "50", "--seed", "3", "-o", a.toString()).ok();
    assertEquals("wrote 50 requests to " + a, run.out().strip());
    CliRun.of("generate", "requests", "--preset", "sharegpt", "--rate", "2", "--count", "50", "--seed", "3", "-o", b.toString()).ok();
    assertEquals(Files.readString(a), Files.readString(b));
    try (RequestTraceReader r = RequestTraceReader.open(a)) {
      assertEquals("requests", r.header().get("generator"));
      int n = 0;
      while (r.next() != null) {
        n++;
      }
      assertEquals(50, n);
    }
  }

  @Test
  void parallelSamplesAndBeamsAreWrittenPerRequestAndBothAtOnceAreRefused() throws IOException {
    Path n = dir.resolve("n.jsonl");
    CliRun.of("generate", "requests", "--count", "4", "--n", "3", "-o", n.toString()).ok();
    try (RequestTraceReader r = RequestTraceReader.open(n)) {
      for (kvsim.trace.Request q = r.next(); q != null; q = r.next()) {
        assertEquals(3, q.samples());
        assertEquals(1, q.beamWidth());
      }
    }
    Path beam = dir.resolve("beam.jsonl");
    CliRun.of("generate", "requests", "--count", "4", "--beam", "4", "-o", beam.toString()).ok();
    try (RequestTraceReader r = RequestTraceReader.open(beam)) {
      assertEquals(4, r.next().beamWidth());
    }
    Path both = dir.resolve("both.jsonl");
    CliRun run = CliRun.of("generate", "requests", "--count", "4", "--n", "2", "--beam", "2", "-o", both.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("not both"), run.err());
    assertFalse(Files.exists(both));
  }

  @Test
  void azureCsvImportsBackToTheSameRequestsWithinAMicrosecond() throws IOException {
    Path csv = dir.resolve("week.csv");
    Path kvsim = dir.resolve("k.jsonl");
    Path back = dir.resolve("back.jsonl");
    CliRun.of("generate", "requests", "--preset", "azure-conv", "--rate", "45.1", "--count", "3000", "--format", "azure-csv", "-o", csv.toString()).ok();
    CliRun.of("generate", "requests", "--preset", "azure-conv", "--rate", "45.1", "--count", "3000", "-o", kvsim.toString()).ok();
    List<String> lines = Files.readAllLines(csv);
    assertEquals("TIMESTAMP,ContextTokens,GeneratedTokens", lines.get(0));
    assertTrue(lines.get(1).matches("2024-05-10 00:00:00\\.\\d{6}\\+00:00,\\d+,\\d+"), lines.get(1));
    CliRun.of("import", "azure", csv.toString(), "-o", back.toString()).ok();
    try (RequestTraceReader want = RequestTraceReader.open(kvsim); RequestTraceReader got = RequestTraceReader.open(back)) {
      kvsim.trace.Request w = want.next();
      long firstMicros = Math.round(w.arrivalNanos() / 1e3);
      int n = 0;
      for (; w != null; w = want.next(), n++) {
        kvsim.trace.Request g = got.next();
        assertEquals(w.promptTokens(), g.promptTokens());
        assertEquals(w.outputTokens(), g.outputTokens());
        assertEquals((Math.round(w.arrivalNanos() / 1e3) - firstMicros) * 1000, g.arrivalNanos(), "request " + n);
      }
      assertEquals(3000, n);
      assertEquals(null, got.next());
    }
    CliRun bad = CliRun.of("generate", "requests", "--format", "parquet", "-o", dir.resolve("x.csv").toString());
    assertEquals(2, bad.exitCode());
    assertTrue(bad.err().contains("--format: expected kvsim or azure-csv, got 'parquet'"), bad.err());
  }

  @Test
  void aBadPresetIsExitTwoAndWritesNothing() {
    Path out = dir.resolve("r.jsonl");
    CliRun run = CliRun.of("generate", "requests", "--preset", "nope", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("option preset='nope': unknown length preset"), run.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void aRequestGeneratorIsNoAllocatorWorkload() {
    CliRun run = CliRun.of("replay", "requests:count=3", "-a", "first-fit");
    assertEquals(2, run.exitCode());
    assertEquals(List.of("kvsim: error: requests:count=3: requests generates LLM requests for serving-level runs, not allocator events (L1 generators: churn, kv)"),
        run.err().lines().toList());
  }
}

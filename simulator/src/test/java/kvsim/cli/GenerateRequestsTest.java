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

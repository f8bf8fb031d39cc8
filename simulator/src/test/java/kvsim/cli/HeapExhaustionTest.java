package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An open-loop trace whose live set outgrows the heap ends with one line that says so and what to
 * do, exit status 1 and no result folder; never a stack trace. Runs kvsim in a child JVM with a
 * small heap.
 */
class HeapExhaustionTest {
  @TempDir Path tmp;

  @Test
  void aLiveSetLargerThanTheHeapFailsWithOneLine() throws IOException, InterruptedException {
    Path trace = tmp.resolve("grow.jsonl");
    // Nothing is ever freed: 400,000 ids stay live (refused ones too, as an open-loop trace may free
    // them). Their ids lie a million apart, too far for the engine to keep the refused ones as bits
    // (Note [Refused ids in a bitset] on DenseLongSet), so each takes a hash table entry.
    StringBuilder lines = new StringBuilder("{\"format\":\"kvsim-l1\",\"version\":1}\n");
    for (long i = 0; i < 400_000; i++) {
      lines.append("{\"t\":").append(i * 1000).append(",\"op\":\"alloc\",\"id\":").append(i * 1_000_003).append(",\"size\":268435456}\n");
    }
    Files.writeString(trace, lines);
    Path out = tmp.resolve("run");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(
            List.of(java, "-Xmx16m", "-cp", System.getProperty("java.class.path"), KvSim.class.getName(),
                "replay", trace.toString(), "-a", "slab", "--quiet", "-o", out.toString()))
        .redirectErrorStream(false)
        .start();
    p.getOutputStream().close();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM finished");
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    assertEquals(1, p.exitValue(), err);
    assertFalse(err.contains("\n"), "one line, no stack trace: " + err);
    assertTrue(err.startsWith("kvsim: out of memory at ") && err.contains("grow.jsonl:"), err);
    assertTrue(err.contains("allocations live") && err.contains("KVSIM_JAVA_OPTS=-Xmx"), err);
    assertFalse(Files.exists(out), "no result folder");
  }
}

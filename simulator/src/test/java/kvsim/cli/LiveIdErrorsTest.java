package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.testing.CliRun;
import kvsim.trace.EventSource;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.TraceEvent;
import kvsim.trace.TraceFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replay leaves the live-id checks of a trace file to the engine's own table of live ids (Note
 * [One table of live ids] on {@code engine.ReplayEngine}) and still reports each such problem in
 * the reader's own words, at its line or event, JSONL and binary alike, and with refused
 * allocations among the live ids as before.
 */
class LiveIdErrorsTest {
  private static final long MiB = 1L << 20;
  /** Larger than the 80 GiB device: every model refuses it. */
  private static final long TOO_LARGE = 100L << 30;

  @TempDir Path dir;

  private static TraceEvent alloc(long t, long id, long size) {
    return TraceEvent.alloc(t, id, size, Tag.KV, true, 0);
  }

  private Path write(String name, List<TraceEvent> events) throws IOException {
    Path file = dir.resolve(name);
    try (OutputStream out = Files.newOutputStream(file);
        L1TraceWriter w = L1TraceWriter.forFile(file, out, Map.of("generator", "test"))) {
      for (TraceEvent e : events) {
        w.write(e);
      }
      w.finish();
    }
    return file;
  }

  /** The message the reader gives on its own, reading the whole file with every check. */
  private static String readersOwn(Path file) {
    InputException e = assertThrows(InputException.class, () -> {
      try (EventSource s = TraceFiles.openL1(file)) {
        while (s.next() != null) {
          // read on
        }
      }
    });
    return e.getMessage();
  }

  private void assertSameErrorAsTheReader(String label, List<TraceEvent> events) throws IOException {
    for (String name : List.of(label + ".jsonl", label + ".kvt")) {
      Path trace = write(name, events);
      String expected = readersOwn(trace);
      Path out = dir.resolve("out-" + name);
      CliRun run = CliRun.of("replay", trace.toString(), "-a", "first-fit,paged", "-o", out.toString(), "--quiet");
      assertEquals(KvSim.EXIT_BAD_INPUT, run.exitCode(), name + ": " + run.err());
      assertEquals("kvsim: error: " + expected + "\n", run.err(), name);
      assertFalse(Files.exists(out), name + ": no result folder");
    }
  }

  @Test
  void anAllocOfALiveIdIsTheReadersError() throws IOException {
    assertSameErrorAsTheReader("dup", List.of(alloc(0, 1, MiB), alloc(1, 2, MiB), alloc(2, 1, MiB)));
  }

  @Test
  void aDoubleFreeIsTheReadersError() throws IOException {
    assertSameErrorAsTheReader("double", List.of(alloc(0, 1, MiB), TraceEvent.free(1, 1, 0), alloc(2, 2, MiB), TraceEvent.free(3, 1, 0)));
  }

  @Test
  void aFreeOfAnIdNeverAllocatedIsTheReadersError() throws IOException {
    assertSameErrorAsTheReader("never", List.of(alloc(0, 1, MiB), TraceEvent.free(1, 7, 0)));
  }

  @Test
  void aRefusedAllocationStaysLiveUntilItsFree() throws IOException {
    // Allocating a refused id again before its free is an error, as the reader says ...
    assertSameErrorAsTheReader("refused", List.of(alloc(0, 1, TOO_LARGE), alloc(1, 2, MiB), alloc(2, 1, MiB)));
    // ... and after its free the id may come back.
    for (String name : List.of("again.jsonl", "again.kvt")) {
      Path trace = write(name, List.of(alloc(0, 1, TOO_LARGE), TraceEvent.free(1, 1, 0), alloc(2, 1, MiB), TraceEvent.free(3, 1, 0)));
      Path out = dir.resolve("out-" + name);
      CliRun.of("replay", trace.toString(), "-a", "first-fit", "-o", out.toString(), "--quiet", "--no-report").ok();
      assertNotNull(Files.readString(out.resolve("summary.json")));
    }
  }
}

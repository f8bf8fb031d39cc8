package kvsim.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.firstfit.FirstFitAllocator;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import kvsim.trace.EventSource;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.TraceEvent;
import kvsim.trace.TraceFiles;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * A trace file replayed with its events read ahead on another thread (Note [Read ahead] on {@code
 * core.ReadAhead}) gives the replay of the same file read on the engine's thread: the same
 * summaries, counters and time series, or the same error for a file that breaks part-way (a line
 * that is not JSON, a double free), binary and JSONL alike; and the reader thread has ended. Only
 * JSONL is read ahead in a run (Note [Read ahead only where parsing is dear] on {@link
 * ReplayEngine}); the property makes either file go either way.
 */
class ReplayReadAheadProperties {
  private static final long MiB = 1L << 20;

  @Property(tries = 60)
  void aFileReadAheadReplaysAsOneReadHere(
      @ForAll long seed,
      @ForAll @IntRange(min = 0, max = 5000) int events,
      @ForAll @IntRange(min = -1, max = 5000) int breakAt,
      @ForAll boolean doubleFree,
      @ForAll boolean binary) throws IOException {
    Path dir = Files.createTempDirectory("kvsim-read-ahead");
    try {
      Path file = dir.resolve(binary ? "t.kvt" : "t.jsonl");
      writeTrace(file, seed, events, doubleFree ? breakAt : -1);
      if (!doubleFree && breakAt >= 0 && !binary) {
        List<String> lines = new ArrayList<>(Files.readAllLines(file));
        lines.add(Math.min(breakAt + 1, lines.size()), "{not json");
        Files.write(file, lines);
      }
      assertEquals(replay(file, false), replay(file, true));
      try (EventSource opened = TraceFiles.openL1(file)) {
        assertEquals(!binary, opened.dearToRead(), "JSONL is read ahead, a binary file on the engine's thread");
      }
      assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals("kvsim-trace") && t.isAlive()), "the reader thread ended");
    } finally {
      try (var files = Files.list(dir)) {
        for (Path p : files.toList()) {
          Files.delete(p);
        }
      }
      Files.delete(dir);
    }
  }

  /** A churn of allocations of 1 to 4 MiB on a 16 MiB device (refusals too), with a second free of an id at {@code doubleFreeAt}. */
  private static void writeTrace(Path file, long seed, int events, int doubleFreeAt) throws IOException {
    SplittableRandom rng = new SplittableRandom(seed);
    List<Long> live = new ArrayList<>();
    long nextId = 0;
    long lastFreed = -1;
    try (OutputStream out = Files.newOutputStream(file); L1TraceWriter w = L1TraceWriter.forFile(file, out, Map.of())) {
      for (int i = 0; i < events; i++) {
        long t = 1000L * i;
        if (i == doubleFreeAt && lastFreed >= 0) {
          w.write(TraceEvent.free(t, lastFreed, 0));
        } else if (live.isEmpty() || rng.nextBoolean()) {
          long id = nextId++;
          live.add(id);
          w.write(TraceEvent.alloc(t, id, (1 + rng.nextInt(4)) * MiB, Tag.KV, true, 0));
        } else {
          lastFreed = live.remove(rng.nextInt(live.size()));
          w.write(TraceEvent.free(t, lastFreed, 0));
        }
      }
    }
  }

  /** The replay's summaries, counters and samples, or its error's message. */
  private static Object replay(Path file, boolean readAhead) throws IOException {
    try (EventSource opened = TraceFiles.openL1(file)) {
      EventSource source = readAhead(opened, readAhead);
      FirstFitAllocator ff = new FirstFitAllocator(new Region("kv", 0, 16 * MiB), 512);
      ReplayEngine.Result r = ReplayEngine.run(new RegionRouter(ff), source, new ReplayEngine.Options(true, 0, null, null));
      List<String> samples = new ArrayList<>();
      for (double[] row : r.metrics().samples()) {
        samples.add(java.util.Arrays.toString(row));
      }
      return List.of(r.metrics().summaries(), r.metrics().counters(), samples);
    } catch (InputException e) {
      return e.getMessage();
    }
  }

  /**
   * {@code source} as a source the engine reads ahead ({@code ahead}) or on its own thread,
   * whatever its format (Note [Read ahead only where parsing is dear] on {@link ReplayEngine}).
   */
  private static EventSource readAhead(EventSource source, boolean ahead) {
    return new EventSource() {
      @Override
      public TraceEvent next() throws IOException {
        return source.next();
      }

      @Override
      public boolean openLoop() {
        return ahead;
      }

      @Override
      public boolean dearToRead() {
        return ahead;
      }

      @Override
      public void leaveLiveIdsToCaller() {
        source.leaveLiveIdsToCaller();
      }

      @Override
      public InputException liveIdError(TraceEvent event) {
        return source.liveIdError(event);
      }

      @Override
      public String name() {
        return source.name();
      }

      @Override
      public Map<String, Object> describe() {
        return source.describe();
      }
    };
  }
}

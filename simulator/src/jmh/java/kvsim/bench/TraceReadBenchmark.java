package kvsim.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.engine.ReplayEngine;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.EventSource;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.TraceEvent;
import kvsim.trace.TraceFiles;
import kvsim.workload.ChurnGenerator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The L1 trace reader, JSONL against binary, on the 2 M-event churn trace ({@code kvsim generate
 * churn --ops 2000000}, seed 1) in a file on disk: {@link #readAll} reads it alone, every event
 * checked (live ids included) and built as the engine receives it, and {@link #replayFirstFit}
 * replays it. The score is milliseconds per file.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3)
@Measurement(iterations = 5)
public class TraceReadBenchmark {
  static final int EVENTS = 2_000_000;

  @Param({"jsonl", "binary"})
  public String format;

  private Path trace;

  @Setup(Level.Trial)
  public void writeTrace() throws IOException {
    trace = Files.createTempFile("kvsim-read-bench", format.equals("binary") ? ".kvt" : ".jsonl");
    ChurnGenerator g = new ChurnGenerator(new OptionMap("churn", Map.of("ops", Integer.toString(EVENTS), "seed", "1")));
    try (OutputStream out = Files.newOutputStream(trace); L1TraceWriter w = L1TraceWriter.forFile(trace, out, g.describe())) {
      TraceEvent e;
      while ((e = g.next()) != null) {
        w.write(e);
      }
    }
  }

  @TearDown(Level.Trial)
  public void deleteTrace() throws IOException {
    Files.deleteIfExists(trace);
  }

  /**
   * Replays the whole file through first-fit on the default device, as {@code kvsim replay FILE -a
   * first-fit --no-report} does without its memory map: the reader then leaves the check of live
   * ids to the engine (Note [One table of live ids] in {@code ReplayEngine}). Returns the events.
   */
  @Benchmark
  public long replayFirstFit() throws IOException {
    MemoryPlan plan = MemoryPlan.whole(DeviceSpec.defaultDevice());
    Allocator a = AllocatorRegistry.create(new AllocatorContext("first-fit", plan.testedRegion(), plan.device(), ModelPreset.defaultModel(), Map.of()));
    try (EventSource r = TraceFiles.openL1(trace)) {
      return ReplayEngine.run(a, r, ReplayEngine.Options.defaults()).metrics().events();
    }
  }

  /** Reads the whole file; returns a checksum of what was read so nothing is optimised away. */
  @Benchmark
  public long readAll() throws IOException {
    long sum = 0;
    try (EventSource r = TraceFiles.openL1(trace)) {
      TraceEvent e;
      while ((e = r.next()) != null) {
        sum += e.timeNanos() ^ e.id() + e.sizeBytes();
      }
    }
    return sum;
  }
}

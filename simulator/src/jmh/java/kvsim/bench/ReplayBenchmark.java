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
import kvsim.engine.ReplayEngine;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.EventSource;
import kvsim.trace.L1BinaryReader;
import kvsim.trace.L1TraceReader;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.TraceFiles;
import kvsim.trace.TraceEvent;
import kvsim.workload.ChurnGenerator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * End-to-end replay speed: events per second from a JSONL (or {@code .kvt}) trace file on disk through the streaming
 * reader, the engine (id mapping, routing) and a model, with metrics recorded after every event.
 * The trace is the churn workload with 1-8 MiB sizes (so the live set settles near its
 * steady state without refusals dominating), one million events.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class ReplayBenchmark {
  static final int EVENTS = 1_000_000;

  @Param({"slab", "first-fit", "paged"})
  public String allocator;

  private Path trace;
  /** The same events as a binary trace ({@code .kvt}). */
  private Path binaryTrace;

  @Setup(Level.Trial)
  public void writeTrace() throws IOException {
    trace = Files.createTempFile("kvsim-replay-bench", ".jsonl");
    ChurnGenerator g = new ChurnGenerator(new OptionMap("churn", Map.of(
        "ops", Integer.toString(EVENTS), "seed", "1", "min-size-mib", "1", "max-size-mib", "8", "free-probability", "0.5")));
    binaryTrace = Files.createTempFile("kvsim-replay-bench", ".kvt");
    try (OutputStream out = Files.newOutputStream(trace); L1TraceWriter w = new L1TraceWriter(out, g.describe());
        OutputStream binaryOut = Files.newOutputStream(binaryTrace); L1TraceWriter binary = L1TraceWriter.open(binaryOut, g.describe(), true)) {
      TraceEvent e;
      while ((e = g.next()) != null) {
        w.write(e);
        binary.write(e);
      }
    }
  }

  @TearDown(Level.Trial)
  public void deleteTrace() throws IOException {
    Files.deleteIfExists(trace);
    Files.deleteIfExists(binaryTrace);
  }

  /** Replays the whole file; the score is events per second. */
  @Benchmark
  @OperationsPerInvocation(EVENTS)
  public long replayJsonl() throws IOException {
    try (L1TraceReader r = L1TraceReader.open(trace)) {
      return replay(r);
    }
  }

  /** Replays the same events from the binary trace, whose reading costs the engine's thread least. */
  @Benchmark
  @OperationsPerInvocation(EVENTS)
  public long replayKvt() throws IOException {
    try (EventSource r = TraceFiles.openL1(binaryTrace)) {
      return replay(r);
    }
  }

  /**
   * The same, the trace decoded on a thread of its own, as a replay with a core to spare decodes it
   * (Note [Decoded ahead in columns] on {@code L1BinaryReader}).
   */
  @Benchmark
  @OperationsPerInvocation(EVENTS)
  public long replayKvtAhead() throws IOException {
    try (L1BinaryReader r = L1BinaryReader.open(binaryTrace)) {
      r.decodeAhead();
      return replay(r);
    }
  }

  /** Replays {@code source} through a fresh model on the whole device; returns the events applied. */
  private long replay(EventSource source) throws IOException {
    MemoryPlan plan = MemoryPlan.whole(DeviceSpec.defaultDevice());
    Allocator a = AllocatorRegistry.create(new AllocatorContext(allocator, plan.testedRegion(), plan.device(), ModelPreset.defaultModel(), Map.of()));
    return ReplayEngine.run(a, source, ReplayEngine.Options.defaults()).metrics().events();
  }
}

package kvsim.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorListener;
import kvsim.core.InputException;
import kvsim.engine.MemoryMapRecorder;
import kvsim.engine.ReplayEngine;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.MemoryMap;
import kvsim.metrics.RunMetrics;
import kvsim.metrics.SeedSweep;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.trace.EventSource;
import kvsim.trace.L1BinaryReader;

/**
 * Runs resolved {@link RunSpec}s: one workload on every allocator, or a generator over many seeds.
 * Every (seed, allocator) cell is an independent run with its own models and its own fresh event
 * source, so the cells run in parallel on all cores; results are gathered in the order of the
 * allocators and seeds given, so they never depend on scheduling or on the number of threads.
 */
public final class Runner {
  /** Receives progress of long runs; called from the runs' threads. */
  public interface Progress {
    /** An allocator's run has applied {@code events} events in {@code wallNanos} so far. */
    default void events(String allocator, long events, long wallNanos) {}

    /** A seed sweep has finished {@code done} of {@code total} cells. */
    default void cells(int done, int total) {}

    /** A run has finished {@code done} of its {@code total} allocators' runs. */
    default void runs(int done, int total) {}
  }

  private static final Progress SILENT = new Progress() {};

  private final String kvsimVersion;
  private final int threads;

  /**
   * A runner on all cores.
   *
   * @param kvsimVersion the version written into each configuration echo
   */
  public Runner(String kvsimVersion) {
    this(kvsimVersion, Runtime.getRuntime().availableProcessors());
  }

  /** A runner on at most {@code threads} threads. */
  public Runner(String kvsimVersion, int threads) {
    this.kvsimVersion = kvsimVersion;
    this.threads = Math.max(1, threads);
  }

  /**
   * Runs the spec's workload on each of its allocators.
   *
   * @param listeners per allocator name, an optional listener (e.g. a snapshot recorder)
   * @param progress where progress goes (null for none)
   * @throws InputException when the workload has no events
   */
  public RunResult run(RunSpec spec, Function<String, AllocatorListener> listeners, Progress progress) throws IOException {
    Progress p = progress == null ? SILENT : progress;
    WorkloadRegistry.Workload w = spec.workload();
    List<String> names = spec.allocators();
    int[] done = {0};
    // a thread and a core left beside the cells: a long binary trace is decoded there
    boolean coreToSpare = Math.min(names.size(), threads) < Math.min(threads, Runtime.getRuntime().availableProcessors());
    List<Cell> cells = parallel(names.size(), i -> {
      Cell c = runOne(spec, w, names.get(i), listeners.apply(names.get(i)), p, spec.sampleEvery(), coreToSpare);
      synchronized (done) {
        p.runs(++done[0], names.size());
      }
      return c;
    });
    List<AllocatorResult> results = new ArrayList<>();
    List<AllocatorResult.Timing> timings = new ArrayList<>();
    for (Cell c : cells) {
      results.add(c.result());
      timings.add(c.timing());
    }
    List<MemoryMap> maps = new ArrayList<>();
    for (Cell c : cells) {
      maps.add(c.memoryMap());
    }
    RunResult r = new RunResult(spec.configEcho(w, kvsimVersion), results, timings, maps);
    requireEvents(w, r.events());
    return r;
  }

  /**
   * Runs the spec's generator once per seed on each of its allocators and returns the headline
   * metrics' distributions.
   *
   * @throws InputException when the workload is a trace file, or has no events
   */
  public SweepResult sweep(RunSpec spec, long[] seeds, Progress progress) throws IOException {
    Progress p = progress == null ? SILENT : progress;
    if (!spec.workload().isGenerator()) {
      throw new InputException("--seeds: the workload " + spec.workload().spec() + " is a trace file; seeds apply to generators");
    }
    List<String> names = spec.allocators();
    int total = seeds.length * names.size();
    int[] done = {0};
    List<Cell> cells = parallel(total, i -> {
      // A sweep keeps each cell's headline values only, not its time series.
      Cell c = runOne(spec, spec.workload().withSeed(seeds[i / names.size()]), names.get(i % names.size()), null, SILENT, RunMetrics.SWEEP_HEADLINES, false);
      synchronized (done) {
        p.cells(++done[0], total);
      }
      return c;
    });
    Map<String, SeedSweep> sweeps = new LinkedHashMap<>();
    for (String name : names) {
      sweeps.put(name, new SeedSweep());
    }
    for (int i = 0; i < total; i++) {
      Cell c = cells.get(i);
      requireEvents(spec.workload().withSeed(seeds[i / names.size()]), c.timing().events());
      sweeps.get(c.result().allocator()).add(seeds[i / names.size()], c.result());
    }
    return new SweepResult(spec.configEcho(spec.workload().withSeed(seeds[0]), kvsimVersion), seeds.clone(), sweeps);
  }

  /** An empty workload is bad input, not a successful run of nothing. */
  private static void requireEvents(WorkloadRegistry.Workload w, long events) {
    if (events == 0) {
      throw new InputException(w.spec() + ": no events (the workload is empty; nothing to simulate)");
    }
  }

  /** One allocator's run of one workload. */
  private record Cell(AllocatorResult result, AllocatorResult.Timing timing, MemoryMap memoryMap) {}

  /** Runs cells 0..n-1 on all cores and returns their results by index. */
  private List<Cell> parallel(int n, Parallel.Work<Cell> work) throws IOException {
    return Parallel.map(n, threads, work);
  }

  /**
   * Runs the spec's workload on one allocator and returns its headline values only: no time
   * series, no memory map (a cell of a grid).
   */
  public AllocatorResult headline(RunSpec spec, String allocator) throws IOException {
    Cell c = runOne(spec, spec.workload(), allocator, null, SILENT, RunMetrics.NO_SERIES, false);
    requireEvents(spec.workload(), c.timing().events());
    return c.result();
  }

  /**
   * Runs one cell with metrics recorded as {@code sampleEvery} says ({@link RunMetrics#RunMetrics});
   * below 0 (a sweep's or a grid's cell): neither a time series nor a memory map (sweeps keep
   * neither, and a short run spends a fifth of its time recording the series), and with {@link
   * RunMetrics#SWEEP_HEADLINES} only the gauges a seed sweep reads. With {@code coreToSpare} (fewer
   * cells run at once than the runner's threads and the cores allow) a long binary trace is decoded
   * on a core of its own (Note [Decoded ahead in columns] on {@link L1BinaryReader}).
   */
  private static Cell runOne(
      RunSpec spec, WorkloadRegistry.Workload w, String name, AllocatorListener listener, Progress progress, long sampleEvery, boolean coreToSpare)
      throws IOException {
    boolean headlineOnly = sampleEvery < 0;
    AllocatorContext context = spec.contextFor(name);
    Allocator tested = AllocatorRegistry.create(context);
    if (listener != null) {
      tested.setListener(listener);
      listener.attach(tested);
    }
    // Every run records its memory map beside any listener given (bounded: Note [Memory map decimation]).
    MemoryMapRecorder map = headlineOnly ? null : new MemoryMapRecorder(name, MemoryMapRecorder.DEFAULT_MAX_RECTANGLES);
    AllocatorListener engineListener = AllocatorListener.both(listener, map);
    long start = System.nanoTime();
    ReplayEngine.Progress engineProgress = events -> progress.events(name, events, System.nanoTime() - start);
    ReplayEngine.Result r;
    try (EventSource source = w.open(spec.model(), spec.device())) {
      if (coreToSpare && source instanceof L1BinaryReader binary && binary.worthDecodingAhead()) {
        binary.decodeAhead();
      }
      r = ReplayEngine.run(spec.regionsFor(tested), source, new ReplayEngine.Options(spec.check(), sampleEvery, engineListener, engineProgress));
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    AllocatorResult result =
        new AllocatorResult(
            name,
            context.effectiveOptions(),
            r.metrics().counters(),
            r.metrics().summaries(),
            tested.stats().modelledNanos(),
            r.otherRegionOomCount(),
            new TreeMap<>(tested.extraMetrics()),
            r.metrics().samples());
    return new Cell(result, new AllocatorResult.Timing(name, r.metrics().events(), r.wallNanos()), map == null ? null : map.memoryMap());
  }
}

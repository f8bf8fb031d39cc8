package kvsim.run;

import java.io.IOException;
import java.nio.file.Path;
import kvsim.core.OutputFile;
import kvsim.trace.L1TraceWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.report.ServingResults;
import kvsim.serving.ServingEngine;
import kvsim.serving.ServingMetrics;
import kvsim.serving.ServingSystems;
import kvsim.trace.RequestSource;

/**
 * Runs a {@link ServingSpec}: every system on the same requests, each with its own fresh source and
 * models, on all cores, with results in the order the systems were given.
 */
public final class ServingRunner {
  /** Receives progress of long runs. */
  @FunctionalInterface
  public interface Progress {
    /** Called with a system's iterations and finished requests so far, and its wall time. */
    void update(String system, long iterations, long finished, long wallNanos);
  }

  /**
   * One system's outcome.
   *
   * @param system the system's name
   * @param parts what it is built from
   * @param metrics its serving metrics
   * @param wallNanos the wall time of its run
   */
  public record SystemResult(String system, Map<String, Object> parts, ServingMetrics metrics, long wallNanos) {
    /** Returns the system's entry of {@code summary.json}. */
    public Map<String, Object> summary() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("system", system);
      m.put("parts", parts);
      m.putAll(metrics.toMap());
      return m;
    }
  }

  /**
   * Returns what the result folder of these results holds ({@code report.ServingResults}): the
   * configuration echo of the cells, the grid of {@code axes}, each result's entry of {@code
   * summary.json} (with its cell in a grid), its sampled series and latency quantiles, keyed by its
   * label.
   *
   * @param cells the cells run, in order (one per result)
   * @param axes the grid's axes; empty without {@code --set}
   * @param results the results, in the cells' order
   */
  public static ServingResults results(List<ServingGrid.Cell> cells, List<ServingGrid.Axis> axes, List<SystemResult> results) {
    Map<String, Object> config = ServingGrid.configEcho(cells, axes);
    config.remove("grid");
    Map<String, List<String>> grid = new LinkedHashMap<>();
    axes.forEach(a -> grid.put(a.key(), List.copyOf(a.values())));
    List<Map<String, Object>> systems = new ArrayList<>();
    Map<String, List<double[]>> series = new LinkedHashMap<>();
    Map<String, List<double[]>> quantiles = new LinkedHashMap<>();
    for (int i = 0; i < results.size(); i++) {
      SystemResult r = results.get(i);
      String label = axes.isEmpty() ? r.system() : cells.get(i).label();
      systems.add(axes.isEmpty() ? r.summary() : ServingGrid.withCell(r.summary(), cells.get(i)));
      series.put(label, r.metrics().series());
      quantiles.put(label, r.metrics().latencyQuantiles());
    }
    return ServingResults.of(config, grid, systems, ServingMetrics.SERIES_COLUMNS, series, ServingMetrics.QUANTILE_COLUMNS, quantiles);
  }

  /**
   * Returns what the result folder of a run of every system of {@code spec} holds (no grid): its
   * configuration echo, each system's entry of {@code summary.json}, sampled series and latency
   * quantiles, keyed by system.
   */
  public static ServingResults results(ServingSpec spec, List<SystemResult> results) {
    List<Map<String, Object>> systems = new ArrayList<>();
    Map<String, List<double[]>> series = new LinkedHashMap<>();
    Map<String, List<double[]>> quantiles = new LinkedHashMap<>();
    for (SystemResult r : results) {
      systems.add(r.summary());
      series.put(r.system(), r.metrics().series());
      quantiles.put(r.system(), r.metrics().latencyQuantiles());
    }
    return ServingResults.of(new LinkedHashMap<>(spec.configEcho()), Map.of(), systems, ServingMetrics.SERIES_COLUMNS, series,
        ServingMetrics.QUANTILE_COLUMNS, quantiles);
  }

  /** Returns the wall-clock figures of a run of every system of a spec, each under its system. */
  public static List<ServingResults.Timing> timings(List<SystemResult> results) {
    return results.stream().map(r -> new ServingResults.Timing(r.system(), r.metrics().iterations(), r.wallNanos())).toList();
  }

  /** Returns the wall-clock figures of these results, each under its label as in {@link #results}. */
  public static List<ServingResults.Timing> timings(List<ServingGrid.Cell> cells, List<ServingGrid.Axis> axes, List<SystemResult> results) {
    List<ServingResults.Timing> out = new ArrayList<>();
    for (int i = 0; i < results.size(); i++) {
      SystemResult r = results.get(i);
      out.add(new ServingResults.Timing(axes.isEmpty() ? r.system() : cells.get(i).label(), r.metrics().iterations(), r.wallNanos()));
    }
    return out;
  }

  private final int threads;
  private final List<ServingMetrics.RequestTarget> requestTargets;
  /** Per system, the capture of its first OOM ({@code --snapshot-at-oom}); null for none. */
  private final java.util.function.Function<String, ServingOomCapture> oomCaptures;

  /** A runner on all cores. */
  public ServingRunner() {
    this(Runtime.getRuntime().availableProcessors());
  }

  /** A runner on at most {@code threads} threads. */
  public ServingRunner(int threads) {
    this(threads, List.of());
  }

  private ServingRunner(int threads, List<ServingMetrics.RequestTarget> requestTargets) {
    this(threads, requestTargets, null);
  }

  private ServingRunner(int threads, List<ServingMetrics.RequestTarget> requestTargets, java.util.function.Function<String, ServingOomCapture> oomCaptures) {
    this.threads = Math.max(1, threads);
    this.requestTargets = List.copyOf(requestTargets);
    this.oomCaptures = oomCaptures;
  }

  /** Returns this runner with each system's first OOM captured by {@code captures.apply(system)} (null: none for that system). */
  public ServingRunner capturingOoms(java.util.function.Function<String, ServingOomCapture> captures) {
    return new ServingRunner(threads, requestTargets, captures);
  }

  /**
   * Returns this runner with each run's requests checked against these per-request targets as they
   * finish ({@code --slo}; {@link ServingMetrics#countTargets}), so that {@link
   * ServingMetrics#attainment} answers for them after the run.
   */
  public ServingRunner countingTargets(List<ServingMetrics.RequestTarget> targets) {
    return new ServingRunner(threads, targets, oomCaptures);
  }

  /**
   * Runs every system of the spec.
   *
   * @throws InputException when the workload has no requests
   */
  public List<SystemResult> run(ServingSpec spec, Progress progress) throws IOException {
    return run(spec, progress, null);
  }

  /**
   * Runs every system of the spec and, when {@code traces} is not null, writes each system's
   * memory operations as an L1 trace into its file of {@link #traceOutputs}, atomically: a run
   * that fails leaves no trace.
   *
   * @throws InputException when the workload has no requests
   */
  public List<SystemResult> run(ServingSpec spec, Progress progress, List<OutputFile> traces) throws IOException {
    List<String> systems = spec.systems();
    List<SystemResult> results = Parallel.map(systems.size(), threads,
        i -> runOne(spec, systems.get(i), progress, traces == null ? null : traces.get(i), requestTargets, capture(systems.get(i))));
    if (!results.isEmpty() && results.get(0).metrics().arrived() == 0) {
      throw new InputException(spec.workload().spec() + ": no requests (the workload is empty; nothing to simulate)");
    }
    return new ArrayList<>(results);
  }

  /**
   * Runs every cell of a grid (each a spec of one system) on all of this runner's threads, with
   * results in the cells' order.
   *
   * @throws InputException when the workload has no requests
   */
  public List<SystemResult> runCells(List<ServingGrid.Cell> cells, Progress progress) throws IOException {
    List<SystemResult> results = Parallel.map(cells.size(), threads, i -> runOne(cells.get(i).spec(), cells.get(i).system(), progress, (OutputFile) null, requestTargets,
        capture(cells.get(i).system())));
    if (!results.isEmpty() && results.get(0).metrics().arrived() == 0) {
      throw new InputException(cells.get(0).spec().workload().spec() + ": no requests (the workload is empty; nothing to simulate)");
    }
    return new ArrayList<>(results);
  }

  /**
   * Returns the L1 trace outputs of {@code --emit-trace FILE}, one per system of the spec in its
   * order ({@link #traceFile} names them), checked against the output rule (Note [Output rule] on
   * {@code core.OutputFile}).
   *
   * @param force whether a file that is not an L1 trace kvsim wrote may be replaced
   * @param inputs the command's input files
   */
  public static List<OutputFile> traceOutputs(ServingSpec spec, Path file, boolean force, List<Path> inputs) {
    kvsim.trace.BinaryTraceFormat.checkL1Output(file);
    List<OutputFile> out = new ArrayList<>();
    for (String system : spec.systems()) {
      out.add(OutputFile.of(traceFile(file, system, spec.systems().size() > 1), L1TraceWriter.OUTPUT_KIND, force, inputs).check());
    }
    return out;
  }

  /**
   * Returns the L1 trace file of {@code system}: {@code file} itself for a single system; for
   * several, {@code file} with {@code -SYSTEM} before its extension ({@code ops.jsonl} becomes
   * {@code ops-vllm.jsonl}).
   */
  public static Path traceFile(Path file, String system, boolean several) {
    if (!several) {
      return file;
    }
    String name = file.getFileName().toString();
    int dot = name.lastIndexOf('.');
    String withSystem = dot > 0 ? name.substring(0, dot) + "-" + system + name.substring(dot) : name + "-" + system;
    return file.resolveSibling(withSystem);
  }

  private ServingOomCapture capture(String system) {
    return oomCaptures == null ? null : oomCaptures.apply(system);
  }

  private static SystemResult runOne(ServingSpec spec, String system, Progress progress, OutputFile trace, List<ServingMetrics.RequestTarget> targets,
      ServingOomCapture oom) throws IOException {
    if (trace == null) {
      return runOne(spec, system, progress, (L1TraceWriter) null, targets, oom);
    }
    Map<String, Object> header = new LinkedHashMap<>();
    header.put("source", "kvsim serving");
    header.put("system", system);
    header.put("workload", spec.workload().spec());
    header.put("model", spec.model().name());
    // The allocator under test manages the KV region: a replay's device is that region.
    header.put("device", Long.toString(spec.kvMemoryBytes()));
    SystemResult[] result = new SystemResult[1];
    trace.write(out -> {
      try (L1TraceWriter w = L1TraceWriter.forFile(trace.path(), out, header)) {
        result[0] = runOne(spec, system, progress, w, targets, oom);
      }
    });
    return result[0];
  }

  private static SystemResult runOne(ServingSpec spec, String system, Progress progress, L1TraceWriter trace, List<ServingMetrics.RequestTarget> targets,
      ServingOomCapture oom) throws IOException {
    long start = System.nanoTime();
    try (RequestSource source = spec.workload().open()) {
      ServingSystems.Built built = ServingSystems.build(system, spec.build(source.hashBlockTokens()));
      ServingEngine.Progress p = progress == null ? null : (iterations, finished) -> progress.update(system, iterations, finished, System.nanoTime() - start);
      kvsim.devicemodel.ForwardTimeModel forward = spec.forwardTime();
      ServingEngine engine = new ServingEngine(built.scheduler(), built.kv(), forward, spec.scheduler(),
          spec.model().kvBytesPerToken(), spec.check(), p, spec.seed());
      if (trace != null) {
        engine.emitTo(trace);
      }
      if (!targets.isEmpty()) {
        engine.countTargets(targets);
      }
      if (oom != null) {
        oom.install(built.kv(), engine);
      }
      if (built.activationBytesPerToken() > 0) {
        engine.placeActivationsWithKv(built.activationBytesPerToken());
      }
      ServingMetrics metrics = engine.run(source);
      // Which predictor timed this run: a cell of a cost-model grid has its own.
      Map<String, Object> parts = new java.util.LinkedHashMap<>(built.parts());
      parts.put("cost_model", forward.echo());
      return new SystemResult(system, parts, metrics, System.nanoTime() - start);
    }
  }
}

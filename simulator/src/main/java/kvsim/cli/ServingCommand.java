package kvsim.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.report.ServingOomLinks;
import kvsim.report.ServingResults;
import kvsim.report.SloTable;
import kvsim.report.TextTable;
import kvsim.run.ServingGrid;
import kvsim.run.ServingRunner;
import kvsim.run.ServingSpec;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim serving}: LLM requests through serving systems, compared in a table and a result folder. */
@Command(
    name = "serving",
    mixinStandardHelpOptions = true,
    description = {
      "Run LLM requests through serving systems (a continuous-batching scheduler over a KV manager over an allocator) and compare",
      "throughput, latencies, batch sizes, preemptions and the KV memory breakdown. Writes summary.json, timeseries.csv,",
      "kv-breakdown.png/.svg (the KV region by use over time) and timing.json.",
      "WORKLOAD is a request trace (.jsonl, see `kvsim generate requests` and `kvsim import`), a generator spec such as requests:preset=sharegpt,rate=2,count=2000, or a request log through an importer: azure:FILE.csv, mooncake:FILE.jsonl, lengths:FILE.csv,rate=2, burstgpt:FILE.csv (options after the path: from, to, speedup; see `kvsim list`).",
      "With --set KEY=V1,V2,… (repeatable), every combination of the values runs with every --system: one table row per cell."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class ServingCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "WORKLOAD", description = "Request trace file, request generator spec, or importer spec NAME:PATH[,key=value,...].")
  String workload;

  @CommandLine.Mixin ServingOptions options;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default results/runs/<time>-serving-<workload>); as for replay.")
  Path output;

  @Option(names = "--emit-trace", paramLabel = "FILE", description = "Also write every memory operation of the allocator under test as an L1 trace"
      + " (kvsim replay FILE replays it); with several systems one file each, named FILE with -SYSTEM before its extension.")
  Path emitTrace;

  @Option(names = "--force", description = "Also replace a kvsim serving folder into which files of your own were added, and an --emit-trace file that is not an L1 trace kvsim wrote.")
  boolean force;

  @CommandLine.Mixin QuietOption quiet;

  @CommandLine.Mixin NoReportOption report;

  @CommandLine.Mixin OomSnapshotFiles.Flag snapshotAtOom;

  @Option(names = "--slo", paramLabel = "TARGET",
      description = "A service-level target, repeatable; each system's SLO attainment and goodput are reported (table and summary.json's slo)."
          + " Per request METRIC<=VALUE(s|ms) (METRIC ttft, tpot, e2e or normalized_latency, e.g. ttft<=1s): a request meets the SLO when it"
          + " finished within every such limit; rejected, aborted and unfinished requests miss it. Also, as for capacity, each reported as met or"
          + " missed: METRIC.STAT<=VALUE(s|ms) (STAT mean, p50, p90 or p99), attainment>=A (needs a per-request target) and rejected.fraction<=F.")
  List<String> slos = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    return run(spec.commandLine().getOut(), spec.commandLine().getErr());
  }

  /**
   * Runs {@code kvsim serving} for {@code args} ({@code args[0]} is {@code serving}) when they are of
   * the plain forms (Note [Plain arguments] on PlainArguments: one WORKLOAD and any of {@code
   * --system NAMES}, {@code --model MODEL}, {@code --device DEVICE}, {@code -o}/{@code --output
   * DIR}, {@code -q}/{@code --quiet}, {@code --force}, {@code --no-report}), printing to {@code
   * stdout} and {@code stderr} (the process's streams, in main), and returns the exit status;
   * returns null, having done nothing, for picocli to run them.
   */
  static Integer runPlain(String[] args, PrintStream stdout, PrintStream stderr) {
    ServingCommand c = plain(args);
    return c == null ? null : PlainArguments.run(c::run, stdout, stderr);
  }

  /** The command with {@code args} read into it as picocli would, or null where they are not of the plain forms. */
  static ServingCommand plain(String[] args) {
    PlainArguments p = PlainArguments.read(args,
        List.of(List.of("--system"), List.of("--model"), List.of("--device"), List.of("--output", "-o")),
        List.of(List.of("--quiet", "-q"), List.of("--force"), List.of("--no-report")));
    List<String> systems = p == null ? null : p.list("--system");
    if (systems == null) {
      return null;
    }
    ServingCommand c = new ServingCommand();
    c.workload = p.positional();
    c.options = new ServingOptions();
    c.options.systems.addAll(systems);
    c.options.model = p.value("--model");
    c.options.device = p.value("--device");
    c.force = p.flag("--force");
    c.quiet = new QuietOption();
    c.quiet.quiet = p.flag("--quiet");
    c.report = new NoReportOption();
    c.report.noReport = p.flag("--no-report");
    c.snapshotAtOom = new OomSnapshotFiles.Flag();
    try {
      c.output = p.value("--output") == null ? null : Path.of(p.value("--output"));
    } catch (InvalidPathException e) {
      return null;
    }
    return c;
  }

  /** Runs the command with these options, printing to {@code out} and {@code err}; returns the exit status. */
  private int run(PrintWriter out, PrintWriter err) throws Exception {
    kvsim.run.SloTargets sloTargets = slos.isEmpty() ? null : kvsim.run.SloTargets.parse(slos);
    List<ServingGrid.Axis> axes = options.axes();
    List<ServingGrid.Cell> cells = ServingGrid.cells(options.request(workload), axes);
    ServingSpec s = cells.get(0).spec();
    ServingOptions.warnAboutCalibration(s, err);
    String name = "serving-" + workload.replaceAll(".*/", "").replaceAll("[:,=]", "-").replaceAll("\\.jsonl$", "").replaceAll("[^A-Za-z0-9._-]", "");
    List<Path> inputs = Inputs.of(workload, s.workload().file());
    ResultFolder.Target target = (output != null ? ResultFolder.Target.at(output, ResultFolder.Kind.SERVING, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.SERVING)).reading(inputs).withReport(report.report()).check();
    if (target.report()) {
      kvsim.report.ChartWarmUp.start(); // Note [Charts off the critical path] on report.ChartJobs
    }
    Progress lines = Progress.of(quiet.quiet, err, "serving", "requests");
    // Per-request targets are checked as each request finishes (Note [Per-request targets] in ServingMetrics).
    ServingRunner runner = sloTargets == null ? new ServingRunner() : new ServingRunner().countingTargets(sloTargets.perRequest());
    long[] seeds = options.seeds(workload);
    ServingOomSnapshots oom = ServingOomSnapshots.of(snapshotAtOom.value, cells.stream().map(ServingGrid.Cell::system).distinct().toList(), !axes.isEmpty(),
        seeds != null, force, inputs);
    runner = oom == null ? runner : oom.apply(runner);
    if (seeds != null) {
      if (emitTrace != null) {
        throw new InputException("--emit-trace: writes one trace per system, not per seed; leave out --seeds, or run one --seed");
      }
      // Every seed runs every cell: the progress total counts them all.
      List<ServingGrid.Cell> runs = java.util.Collections.nCopies(seeds.length, cells).stream().flatMap(List::stream).toList();
      kvsim.run.SeedRuns.Serving run = kvsim.run.SeedRuns.serving(seed -> options.request(workload, seed), workload, axes, seeds, runner,
          ServingProgress.of(lines, runs), sloTargets);
      ServingProgress.finish(lines, runs);
      out.printf(Locale.ROOT, "workload: %s, seeds %s (%d runs per system); %s on %s, KV memory %s%n", workload, options.seeds.trim(), seeds.length,
          s.model().name(), s.deviceText(), ServingGrid.sameKvMemory(cells) ? Bytes.format(s.kvMemoryBytes()) + (s.tensorParallel() > 1 ? " per GPU" : "")
              : "per cell (summary.json)");
      kvsim.report.SeedTable.serving(out, ServingGrid.keys(axes), run.results());
      out.println();
      out.flush(); // the table first, then the files (Note [Charts off the critical path] on report.ChartJobs)
      Path dir = ResultsWriter.writeServing(target, run.results(), run.timings(),
          tmp -> kvsim.core.AtomicFiles.write(tmp.resolve(kvsim.run.SeedRuns.PerSeed.FILE), o -> o.write(run.perSeed().csv().getBytes(java.nio.charset.StandardCharsets.UTF_8))));
      out.println("results: " + dir);
      out.flush();
      return KvSim.EXIT_OK;
    }
    ServingRunner.Progress progress = ServingProgress.of(lines, cells);
    if (emitTrace != null && !axes.isEmpty()) {
      throw new InputException("--emit-trace: writes one trace per system, not per grid cell; leave out --set, or run each cell on its own");
    }
    ServingSpec whole = emitTrace != null ? ServingSpec.resolve(options.request(workload)) : null;
    List<OutputFile> traces = emitTrace != null ? ServingRunner.traceOutputs(whole, emitTrace, force, inputs) : null;
    if (output != null && traces != null) {
      for (OutputFile t : traces) {
        if (t.path().toAbsolutePath().normalize().startsWith(output.toAbsolutePath().normalize())) {
          throw new InputException(t.path() + ": --emit-trace inside the -o folder would be lost when the folder is written; choose a path outside it");
        }
      }
    }
    // With --emit-trace (no grid), one run per system writes its trace; otherwise one per cell.
    List<ServingRunner.SystemResult> results = emitTrace != null
        ? runner.run(whole, progress, traces)
        : runner.runCells(cells, progress);
    ServingProgress.finish(lines, cells);
    List<ServingOomLinks.Link> snapshots = oom == null ? List.of()
        : oom.write(out, err, target.linkBase());
    ServingResults folder = ServingRunner.results(cells, axes, results);
    if (sloTargets != null) {
      folder = sloTargets.withSlo(folder, results);
    }
    out.printf(Locale.ROOT, "workload: %s; %s on %s, KV memory %s%n", s.workload().spec(), s.model().name(), s.deviceText(),
        ServingGrid.sameKvMemory(cells) ? Bytes.format(s.kvMemoryBytes()) + (s.tensorParallel() > 1 ? " per GPU" : "") : "per cell (summary.json)");
    table(out, axes, folder);
    out.println();
    out.flush(); // the table first, then the files (Note [Charts off the critical path] on report.ChartJobs)
    Path dir = ResultsWriter.writeServing(target, folder, ServingRunner.timings(cells, axes, results), ServingOomLinks.writer(snapshots));
    out.println("results: " + dir);
    if (emitTrace != null) {
      for (ServingRunner.SystemResult r : results) {
        out.println("trace: " + ServingRunner.traceFile(emitTrace, r.system(), results.size() > 1));
      }
    }
    out.flush();
    return KvSim.EXIT_OK;
  }

  private static void table(PrintWriter out, List<ServingGrid.Axis> axes, ServingResults folder) {
    List<String> header = new ArrayList<>(ServingGrid.keys(axes));
    header.addAll(List.of("system", "requests", "rejected", "tokens/s", "TTFT p50", "TPOT p50", "norm. lat", "batch", "preempt", "tokens", "reserv.", "int.",
        "ext.", "idle", "used: tokens"));
    boolean slo = SloTable.present(folder);
    if (slo) {
      header.addAll(SloTable.SUMMARY_HEADER);
    }
    List<String[]> table = new ArrayList<>();
    table.add(header.toArray(String[]::new));
    for (ServingResults.Entry e : folder.entries()) {
      List<String> row = new ArrayList<>(e.cell().values());
      row.addAll(List.of(e.system(), Long.toString(e.count("requests_finished")), Long.toString(e.count("requests_rejected")),
          num(e.number("throughput_tokens_per_second"), "%.0f"), seconds(e.latency("ttft_seconds", "p50")), seconds(e.latency("tpot_seconds", "p50")),
          seconds(e.latency("normalized_latency_seconds_per_token", "mean")), num(e.number("batch_size_mean"), "%.1f"),
          Long.toString(e.count("preemptions")), frac(e.kvMeanShare("token_states")), frac(e.kvMeanShare("reserved_future")),
          frac(e.kvMeanShare("internal_fragmentation")), frac(e.kvMeanShare("external_fragmentation")), frac(e.kvMeanShare("idle")),
          frac(e.kvUsedShare("token_states", false))));
      if (slo) {
        row.addAll(SloTable.summaryCells(e));
      }
      table.add(row.toArray(String[]::new));
    }
    TextTable.print(out, table, axes.size() + 1);
    steadyTable(out, axes, folder);
    if (slo) {
      sloTable(out, axes, folder);
    }
  }

  /** The SLO targets per system (README, "SLO attainment and goodput"): requests meeting them, and each target's share or verdict. */
  private static void sloTable(PrintWriter out, List<ServingGrid.Axis> axes, ServingResults folder) {
    out.println();
    out.println("SLO: a request meets it when it finished within every per-request target; attainment and shares are of all arrived requests,"
        + " goodput over the run's span (first arrival to last finish):");
    List<String> header = new ArrayList<>(ServingGrid.keys(axes));
    header.add("system");
    header.addAll(SloTable.targetHeader(folder));
    List<String[]> table = new ArrayList<>();
    table.add(header.toArray(String[]::new));
    for (ServingResults.Entry e : folder.entries()) {
      List<String> row = new ArrayList<>(e.cell().values());
      row.add(e.system());
      row.addAll(SloTable.targetCells(e));
      table.add(row.toArray(String[]::new));
    }
    TextTable.print(out, table, axes.size() + 1);
  }

  /**
   * The KV breakdown over the steady window (README, "The KV breakdown"), under a line that states
   * both windows; nothing for a folder without it.
   */
  private static void steadyTable(PrintWriter out, List<ServingGrid.Axis> axes, ServingResults folder) {
    if (folder.entries().isEmpty() || folder.entries().get(0).kvBreakdownSteady() == null) {
      return;
    }
    out.println();
    out.println("KV shares above: time-weighted over the whole run (first arrival to last finish); \"used\": share of the memory in use (idle excluded).");
    out.println("Steady state: from the arrival of the first tenth of the requests to the last arrival:");
    List<String> header = new ArrayList<>(ServingGrid.keys(axes));
    header.addAll(List.of("system", "from", "to", "tokens", "reserv.", "int.", "ext.", "idle", "used: tokens"));
    List<String[]> table = new ArrayList<>();
    table.add(header.toArray(String[]::new));
    for (ServingResults.Entry e : folder.entries()) {
      List<String> row = new ArrayList<>(e.cell().values());
      ServingResults.Window w = e.kvBreakdownSteady().window();
      row.add(e.system());
      row.add(w == null || w.fromSeconds() == null ? "-" : String.format(Locale.ROOT, "%.2f s", w.fromSeconds()));
      row.add(w == null || w.toSeconds() == null ? "-" : String.format(Locale.ROOT, "%.2f s", w.toSeconds()));
      for (String c : List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle")) {
        row.add(frac(e.kvSteadyMeanShare(c)));
      }
      row.add(frac(e.kvUsedShare("token_states", true)));
      table.add(row.toArray(String[]::new));
    }
    TextTable.print(out, table, axes.size() + 1);
  }

  private static String num(Double v, String format) {
    return v == null ? "-" : String.format(Locale.ROOT, format, v);
  }

  private static String seconds(Double v) {
    if (v == null) {
      return "-";
    }
    double s = v;
    return s < 1 ? String.format(Locale.ROOT, "%.1f ms", s * 1e3) : String.format(Locale.ROOT, "%.2f s", s);
  }

  private static String frac(Double f) {
    return f == null ? "-" : String.format(Locale.ROOT, "%.3f", f);
  }
}

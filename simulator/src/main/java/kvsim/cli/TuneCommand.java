package kvsim.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.config.Origin;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;
import kvsim.devicemodel.DeviceSpec;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.report.ResultFolder;
import kvsim.report.SweepTable;
import kvsim.report.TextTable;
import kvsim.report.TuneReport;
import kvsim.report.TuneResults;
import kvsim.run.CapacitySearch;
import kvsim.run.GridSweep;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import kvsim.run.ServingSpec;
import kvsim.torch.SnapshotImporter;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import kvsim.tune.AllocatorTuner;
import kvsim.tune.ServingTuner;
import kvsim.tune.TuneSpace;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kvsim tune SNAPSHOT_OR_TRACE --allocator NAME}: which settings of an allocator serve a
 * recorded run best: the search of {@link AllocatorTuner} over {@link TuneSpace}, its cells on the
 * sweep engine, into a resumable tune folder.
 */
@Command(
    name = "tune",
    mixinStandardHelpOptions = true,
    description = {
      "Search an allocator's settings on a recorded run (a PyTorch memory snapshot with allocation history, an L1 trace, or a generator spec):",
      "no OOM first, then the lowest peak reserved bytes, then the lowest modelled allocator time. A grid of each option's values, then a",
      "local search around the best on finer ladders; cells run on all cores (or Spark) and are kept in -o DIR, so a rerun skips the cells",
      "it has. Prints the default's numbers, the Pareto front and, for pytorch-caching, the PYTORCH_CUDA_ALLOC_CONF to paste.",
      "With --system S --slo TARGET: search the serving settings (block size, memory share, max_num_seqs, max_num_batched_tokens, v1's",
      "scheduler settings) for the highest rate within the SLO, or with --rate R the least memory that meets it; prints vllm serve lines."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class TuneCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "SNAPSHOT_OR_TRACE", description = "A _dump_snapshot pickle with allocation history, an L1 trace (.jsonl) or a generator spec.")
  String input;

  @Option(names = {"-a", "--allocator"}, paramLabel = "NAME", defaultValue = TuneSpace.CACHING, description = "The allocator whose options are searched (default: ${DEFAULT-VALUE}).")
  String allocator;

  @Option(names = "--device", paramLabel = "NAME|SIZE", description = "The device, or its memory size (e.g. 24GiB): what the run may reserve (default: h100-80).")
  String device;

  @Option(names = "--values", paramLabel = "KEY=V1,V2,…", description = "Search these values of one option instead of its grid and ladder (repeatable).")
  List<String> values = new ArrayList<>();

  @Option(names = "--grid", paramLabel = "default|full", defaultValue = "default",
      description = "full also crosses pytorch-caching's garbage_collection_threshold in the grid (default: ${DEFAULT-VALUE}).")
  String grid;

  @Option(names = "--cuda-device", paramLabel = "N", description = "The CUDA device of a snapshot to tune on (default: the only one with history).")
  int cudaDevice = -1;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default results/runs/<time>-tune-<input>); an earlier tune folder is resumed.")
  Path output;

  @Option(names = "--force", description = "Also use a kvsim result folder into which files of your own were added.")
  boolean force;

  @CommandLine.Mixin EngineOptions engineOptions;

  @Option(names = "--system", paramLabel = "S", description = "Search this serving system's settings (vllm, vllm-v0, vattention, …) for the highest rate within --slo.")
  String system;

  @Option(names = "--slo", paramLabel = "TARGET", description = "(with --system) a latency target, as for capacity (repeatable).")
  List<String> slos = new ArrayList<>();

  @Option(names = "--rate", paramLabel = "R", description = "(with --system) find the least KV memory that meets --slo at this rate (requests/s) instead.")
  Double rate;

  @Option(names = "--model", paramLabel = "M", description = "(with --system) the model preset (default: llama-2-7b).")
  String model;

  @Option(names = "--kv-memory", paramLabel = "SIZE", description = "(with --system) fix the KV memory; gpu-memory-utilization is then not searched.")
  String kvMemory;

  @Option(names = "--min-rate", paramLabel = "R", defaultValue = "0.1", description = "(with --system) the capacity search's lowest rate (default: ${DEFAULT-VALUE}).")
  double minRate;

  @Option(names = "--max-rate", paramLabel = "R", defaultValue = "50", description = "(with --system) its highest rate (default: ${DEFAULT-VALUE}).")
  double maxRate;

  @Option(names = "--steps", paramLabel = "N", defaultValue = "8", description = "(with --system) its bisection probes after the two bounds (default: ${DEFAULT-VALUE}).")
  int steps;

  @Option(names = "--budget", paramLabel = "N", defaultValue = "40", description = "(with --system) the most cells (capacity searches, or probes with --rate) (default: ${DEFAULT-VALUE}).")
  int budget;

  @CommandLine.Mixin QuietOption quiet;

  /** The trace a snapshot is imported into, inside the tune folder. */
  static final String SNAPSHOT_TRACE = "snapshot-trace.jsonl";

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!grid.equals("default") && !grid.equals("full")) {
      throw new InputException("--grid: '" + grid + "' is not default or full");
    }
    if (system != null) {
      return serving(out, err);
    }
    for (String[] o : new String[][] {{"--slo", slos.isEmpty() ? null : "x"}, {"--rate", rate == null ? null : "x"}, {"--model", model},
        {"--kv-memory", kvMemory}}) {
      if (o[1] != null) {
        throw new InputException(o[0] + ": applies to a serving search (--system S)");
      }
    }
    AllocatorRegistry.get(allocator); // an unknown name lists the known ones
    TuneSpace space = TuneSpace.of(allocator, grid.equals("full"));
    if (device != null) {
      try {
        DeviceSpec.parse(device);
      } catch (IllegalArgumentException e) {
        throw new InputException("--device: " + e.getMessage());
      }
    }
    Path file = Path.of(input);
    TorchSnapshot snapshot = isPickle(file) ? SnapshotReader.read(file) : null;
    int snapshotDevice = -1;
    if (snapshot != null) {
      snapshotDevice = SnapshotImporter.chooseDevice(snapshot, cudaDevice);
    } else {
      if (cudaDevice != -1) {
        throw new InputException("--cuda-device: " + input + " is not a PyTorch snapshot");
      }
      try {
        if (WorkloadRegistry.resolve(input, Map.of()) == null) {
          throw new InputException(input + ": not an L1 workload");
        }
      } catch (IllegalArgumentException e) {
        throw new InputException(input + ": " + e.getMessage());
      }
    }
    Map<String, List<String>> given = new LinkedHashMap<>();
    for (String v : values) {
      int eq = v.indexOf('=');
      if (eq <= 0 || eq == v.length() - 1) {
        throw new InputException("--values '" + v + "': write KEY=V1,V2,…");
      }
      String key = v.substring(0, eq);
      List<String> list = List.of(v.substring(eq + 1).split(",", -1));
      if (list.stream().anyMatch(String::isBlank)) {
        throw new InputException("--values '" + v + "': an empty value");
      }
      if (given.put(key, list) != null) {
        throw new InputException("--values " + key + ": given twice");
      }
      space = space.withValues(key, list);
      for (String value : list) {
        if (space.torchConf()) {
          space.checkTorchValue(key, value);
        } else {
          checkOption(key, value);
        }
      }
    }
    GridSweep.Engine e = engineOptions.engine();

    String name = "tune-" + file.getFileName().toString().replaceAll("\\.(pickle|pkl|jsonl)$", "").replaceAll("[^A-Za-z0-9._-]", "");
    ResultFolder.Target target = output != null ? ResultFolder.Target.at(output, ResultFolder.Kind.TUNE, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.TUNE);
    if (Files.isRegularFile(file)) {
      target = target.reading(List.of(file));
    }
    Path dir = ResultFolder.openResumable(target.check(), SweepTable.CELLS);
    String workload;
    Path gridDir;
    if (snapshot != null) {
      Path trace = dir.resolve(SNAPSHOT_TRACE);
      if (!Files.isRegularFile(trace)) {
        int d = snapshotDevice;
        AtomicFiles.write(trace, o -> SnapshotImporter.write(snapshot, d, o));
      }
      workload = SNAPSHOT_TRACE;
      gridDir = dir;
    } else {
      workload = Files.isRegularFile(file) ? file.toAbsolutePath().normalize().toString() : input;
      gridDir = Path.of("").toAbsolutePath();
    }
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("input", input);
    config.put("input_kind", snapshot != null ? "torch-snapshot" : Files.isRegularFile(file) ? "l1-trace" : "generator");
    config.put("device", device == null ? DeviceSpec.DEFAULT_NAME : device);
    config.put("grid", grid);
    config.put("values", given);
    AllocatorTuner.Request req = new AllocatorTuner.Request(workload, gridDir, device, space, config);
    Progress progress = Progress.of(quiet.quiet, err, "tune", "cells");
    long start = System.nanoTime();
    int[] ran = {0};
    TuneResults r = AllocatorTuner.run(req, e, dir, progress == null ? null : progress::update, ran);
    TuneReport.write(dir, r);
    ResultFolder.seal(dir);
    double seconds = (System.nanoTime() - start) / 1e9;
    out.printf(Locale.ROOT, "tune: %s on %s (%s): %d cells (%s of the grid, %s of the refinement in %s rounds), %d run now, in %.1f s%n",
        allocator, input, config.get("device"), r.cells().size(), r.search().get("grid_cells"), r.search().get("refinement_cells"),
        r.search().get("refinement_rounds"), ran[0], seconds);
    out.println();
    TuneReport.print(out, r);
    out.printf("results: %s (%s, %s, %s, %s)%n", dir, TuneReport.JSON_FILE, TuneReport.CSV_FILE, TuneReport.PNG_FILE, kvsim.report.HtmlReport.FILE);
    out.flush();
    return KvSim.EXIT_OK;
  }

  /** The serving search: {@link ServingTuner} for one system, its files written as one result folder. */
  private int serving(PrintWriter out, PrintWriter err) throws Exception {
    if (!allocator.equals(TuneSpace.CACHING) || !values.isEmpty() || cudaDevice != -1) {
      throw new InputException("--allocator, --values and --cuda-device apply to an allocator search, not to --system");
    }
    if (slos.isEmpty()) {
      throw new InputException("--slo: a serving search needs at least one latency target, e.g. --slo 'normalized_latency.mean<=0.2s'");
    }
    if (steps < 0 || steps > 40) {
      throw new InputException("--steps: must be in 0..40, got " + steps);
    }
    if (budget < 1) {
      throw new InputException("--budget: must be at least 1, got " + budget);
    }
    if (rate != null && !(rate > 0)) {
      throw new InputException("--rate: must be positive, got " + rate);
    }
    CapacitySearch.Targets targets = CapacitySearch.Targets.parse(slos);
    Settings settings = Settings.none();
    if (model != null) {
      settings = settings.and(ServingSettings.MODEL, model, Origin.option("--model"));
    }
    if (device != null) {
      settings = settings.and(ServingSettings.DEVICE, device, Origin.option("--device"));
    }
    if (kvMemory != null) {
      settings = settings.and(ServingSettings.KV_MEMORY, kvMemory, Origin.option("--kv-memory"));
    }
    ServingSpec.Request base = ServingSpec.Request.of(input, List.of(system), settings);
    ServingSpec first = ServingSpec.resolve(base); // bad names, workloads and values fail here, before any folder exists
    ServingTuner.Request req = new ServingTuner.Request(base, targets, rate, minRate, maxRate, steps, grid.equals("full"), budget, kvMemory != null);
    String name = "tune-" + input.replaceAll(".*/", "").replaceAll("[:,=]", "-").replaceAll("[^A-Za-z0-9._-]", "");
    ResultFolder.Target target = (output != null ? ResultFolder.Target.at(output, ResultFolder.Kind.TUNE, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.TUNE)).reading(Inputs.of(input, first.workload().file())).check();
    Progress progress = Progress.of(quiet.quiet, err, "tune", rate == null ? "probes" : "cells");
    long start = System.nanoTime();
    ServingTuner.Outcome o = ServingTuner.run(req, progress == null ? null : progress::update);
    double seconds = (System.nanoTime() - start) / 1e9;
    String modelName = first.model().name();
    List<String> header = new ArrayList<>(List.of("order", "phase"));
    o.axes().forEach(a -> header.add(a.key()));
    header.addAll(List.of("kv_memory_bytes", rate == null ? "max_rate_rps" : "rate_rps", "met", "goodput_rps", "first_target_seconds", "probes"));
    List<List<String>> rows = new ArrayList<>();
    List<Object> cells = new ArrayList<>();
    for (ServingTuner.Cell c : o.cells()) {
      List<String> row = new ArrayList<>(List.of(Integer.toString(c.order()), c.phase()));
      o.axes().forEach(a -> row.add(c.setting().get(a.key())));
      row.addAll(List.of(Long.toString(c.kvMemoryBytes()), Double.toString(c.maxRateRps()), Boolean.toString(c.met()), Double.toString(c.goodputRps()),
          Double.isNaN(c.firstTargetSeconds()) ? "" : Double.toString(c.firstTargetSeconds()), Integer.toString(c.probes())));
      rows.add(row);
      cells.add(cellJson(c, modelName, o));
    }
    List<String> lines = new ArrayList<>();
    lines.add(ServingTuner.commandLine(modelName, o.axes(), o.best().setting()));
    if (o.runnerUp() != null) {
      lines.add("runner-up: " + ServingTuner.commandLine(modelName, o.axes(), o.runnerUp().setting()));
    }
    lines.add("default:   " + ServingTuner.commandLine(modelName, o.axes(), o.defaults().setting()));
    if (rate == null && o.best().met() && o.best().maxRateRps() >= maxRate) {
      lines.add("note: the recommended setting met --max-rate " + CapacitySearch.rate(maxRate) + " itself, so cells that also did rank by goodput and KV memory; "
          + "raise --max-rate to tell them apart");
    } else if (!o.best().met()) {
      lines.add("note: no cell met the targets " + (rate == null ? "at --min-rate " + CapacitySearch.rate(minRate) : "at --rate " + CapacitySearch.rate(rate))
          + "; the lines above rank them by " + (rate == null ? "goodput" : "KV memory"));
    }
    Map<String, Object> json = new LinkedHashMap<>();
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("workload", input);
    config.put("system", system);
    config.put("model", modelName);
    config.put("device", first.deviceText());
    config.put("kv_memory", kvMemory);
    config.put("targets", slos);
    config.put("rate_rps", rate);
    config.put("min_rate_rps", minRate);
    config.put("max_rate_rps", maxRate);
    config.put("steps", steps);
    config.put("grid", grid);
    config.put("budget", budget);
    json.put("kind", "serving");
    json.put("config", config);
    json.put("objective", rate == null ? List.of("highest sustained rate", "highest goodput", "least KV memory", "fewer settings changed", "run first")
        : List.of("meets the rate", "least KV memory", "lowest first latency target", "fewer settings changed", "run first"));
    json.put("search", grid.equals("full") ? "every combination of the values" : "one setting at a time from vLLM's defaults, then the combination of each setting's best value"
        + (rate == null ? "" : ", then the memory values under it"));
    json.put("axes", o.axes().stream().map(a -> Map.of("key", a.key(), "default", a.defaultValue(), "values", a.values())).toList());
    json.put("default", cellJson(o.defaults(), modelName, o));
    json.put("recommended", cellJson(o.best(), modelName, o));
    json.put("runner_up", o.runnerUp() == null ? null : cellJson(o.runnerUp(), modelName, o));
    json.put("cells", cells);
    Path dir = ResultFolder.write(target, tmp -> TuneReport.writeServing(tmp, json, header, rows, lines, "tune " + system + " on " + input));
    out.printf(Locale.ROOT, "tune: %s on %s (%s, %s), %s: %d cells, %d serving runs, in %.1f s%n", system, input, modelName, first.deviceText(),
        String.join(", ", slos), o.cells().size(), o.cells().stream().mapToInt(ServingTuner.Cell::probes).sum(), seconds);
    out.println();
    List<String[]> table = new ArrayList<>();
    table.add(new String[] {"", rate == null ? "max rate req/s" : "at the rate", "goodput req/s", "KV memory", String.join(" ", o.axes().stream().map(ServingTuner.Axis::key).toList())});
    for (Object[] r : new Object[][] {{"recommended", o.best()}, {"runner-up", o.runnerUp()}, {"default", o.defaults()}}) {
      ServingTuner.Cell c = (ServingTuner.Cell) r[1];
      if (c != null) {
        table.add(new String[] {(String) r[0], ServingTuner.rate(c, req), CapacitySearch.rate(c.goodputRps()), kvsim.core.Bytes.format(c.kvMemoryBytes()),
            String.join(" ", o.axes().stream().map(a -> c.setting().get(a.key())).toList())});
      }
    }
    TextTable.print(out, table, java.util.Set.of(0, 4));
    out.println();
    lines.forEach(out::println);
    out.printf("results: %s (%s, %s, %s)%n", dir, TuneReport.JSON_FILE, TuneReport.CSV_FILE, kvsim.report.HtmlReport.FILE);
    out.flush();
    return KvSim.EXIT_OK;
  }

  private static Map<String, Object> cellJson(ServingTuner.Cell c, String model, ServingTuner.Outcome o) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("order", c.order());
    m.put("phase", c.phase());
    m.put("setting", c.setting());
    m.put("vllm", ServingTuner.commandLine(model, o.axes(), c.setting()));
    m.put("kv_memory_bytes", c.kvMemoryBytes());
    m.put("rate_rps", c.maxRateRps());
    m.put("met", c.met());
    m.put("goodput_rps", c.goodputRps());
    m.put("first_target_seconds", Double.isNaN(c.firstTargetSeconds()) ? null : c.firstTargetSeconds());
    m.put("probes", c.probes());
    return m;
  }

  /** Returns whether a file is a pickle: its name ends in .pickle or .pkl, or it starts with the PROTO opcode. */
  static boolean isPickle(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      return false;
    }
    String n = file.getFileName().toString().toLowerCase(Locale.ROOT);
    if (n.endsWith(".pickle") || n.endsWith(".pkl")) {
      return true;
    }
    try (InputStream in = Files.newInputStream(file)) {
      return in.read() == 0x80;
    }
  }

  /**
   * Checks one option value of a non-caching allocator by resolving a run with it, as replay --set
   * does, before anything is written; the run is a tiny generated one (the value is the
   * allocator's to judge, whatever the workload).
   */
  private void checkOption(String key, String value) {
    try {
      RunSpec.resolve(RunRequest.of("churn:ops=10").withAllocators(List.of(allocator)).withDevice(device).withSettings(List.of(allocator + "." + key + "=" + value)),
          new PrintWriter(PrintWriter.nullWriter()));
    } catch (InputException ex) {
      throw new InputException("--values " + key + "=" + value + ": " + ex.getMessage());
    }
  }
}

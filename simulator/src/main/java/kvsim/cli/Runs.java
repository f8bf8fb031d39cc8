package kvsim.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocatorListener;
import kvsim.config.WorkloadSpec;
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.SeedSweep;
import kvsim.registry.WorkloadRegistry;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.report.SweepResults;
import kvsim.report.TextTable;

/** The shared body of {@code replay} and {@code compare}: resolve, run, write results, print the table. */
final class Runs {
  /** The workload {@code compare} runs when given none. */
  static final String DEFAULT_WORKLOAD_RESOURCE = "/kvsim/default-workload.yaml";

  private Runs() {}

  /** Reads a workload argument: a YAML spec file, or null when it is a trace or generator spec. */
  static WorkloadSpec yamlOf(String workloadArg) {
    if (workloadArg.endsWith(".yaml") || workloadArg.endsWith(".yml")) {
      return WorkloadSpec.read(Path.of(workloadArg));
    }
    return null;
  }

  /** Reads the embedded default workload. */
  static WorkloadSpec defaultWorkload() throws IOException {
    try (InputStream in = Runs.class.getResourceAsStream(DEFAULT_WORKLOAD_RESOURCE)) {
      return WorkloadSpec.read("default-workload.yaml", in);
    }
  }

  /**
   * Runs and reports.
   *
   * @param label the workload as the user wrote it (or the default's name)
   * @param yaml the workload spec file's content, or null
   * @param yamlDir the folder paths in the spec are relative to, or null
   * @param listeners optional listeners per allocator
   */
  static int execute(
      PrintWriter out,
      PrintWriter err,
      String label,
      WorkloadSpec yaml,
      Path yamlDir,
      RunOptions o,
      Map<String, AllocatorListener> listeners)
      throws IOException {
    RunSetup setup = RunSetup.resolve(label, yaml, yamlDir, o, err);
    ResultFolder.Target target = outputTarget(o, setup.workload).check();
    PrintWriter progress = o.quiet ? null : err;
    if (o.seeds != null) {
      return sweep(out, progress, setup, parseSeeds(o.seeds), o.seeds.trim(), target);
    }
    List<AllocatorResult.Timing> timings = new ArrayList<>();
    List<AllocatorResult> results = setup.runAll(setup.workload, listeners, timings, progress);
    requireEvents(setup.workload, timings);
    Path dir = ResultsWriter.write(target, setup.configEcho(setup.workload), results, timings);
    out.println("workload: " + setup.workload.spec() + " on " + setup.device.name() + " (" + kvsim.core.Bytes.format(setup.plan.testedRegion().sizeBytes()) + " under test)");
    TextTable.comparison(out, results);
    out.println();
    out.println("results: " + dir);
    out.flush();
    return KvSim.EXIT_OK;
  }

  private static int sweep(PrintWriter out, PrintWriter progress, RunSetup setup, long[] seeds, String seedsText, ResultFolder.Target target)
      throws IOException {
    if (!setup.workload.isGenerator()) {
      throw new InputException("--seeds: the workload " + setup.workload.spec() + " is a trace file; seeds apply to generators");
    }
    Map<String, SeedSweep> sweeps = new LinkedHashMap<>();
    Map<String, List<SweepResults.SeedRow>> perSeed = new LinkedHashMap<>();
    for (String name : setup.allocators) {
      sweeps.put(name, new SeedSweep());
      perSeed.put(name, new ArrayList<>());
    }
    List<AllocatorResult.Timing> timings = new ArrayList<>();
    long started = System.nanoTime();
    for (int i = 0; i < seeds.length; i++) {
      WorkloadRegistry.Workload w = setup.workload.withSeed(seeds[i]);
      List<AllocatorResult> results = setup.runAll(w, Map.of(), timings, null);
      requireEvents(w, timings);
      for (AllocatorResult r : results) {
        sweeps.get(r.allocator()).add(r);
        Map<String, Double> headlines = new LinkedHashMap<>();
        for (String h : SeedSweep.HEADLINES) {
          headlines.put(h, r.headline(h));
        }
        perSeed.get(r.allocator()).add(new SweepResults.SeedRow(seeds[i], headlines));
      }
      if (progress != null && (System.nanoTime() - started) > 3_000_000_000L && (i + 1) % 10 == 0) {
        progress.printf("kvsim: %d/%d seeds%n", i + 1, seeds.length);
        progress.flush();
      }
    }
    List<SweepResults.Entry> entries = new ArrayList<>();
    for (Map.Entry<String, SeedSweep> e : sweeps.entrySet()) {
      entries.add(new SweepResults.Entry(e.getKey(), e.getValue().stats(), perSeed.get(e.getKey())));
    }
    SweepResults sweep =
        new SweepResults(setup.configEcho(setup.workload.withSeed(seeds[0])), Arrays.stream(seeds).boxed().toList(), entries);
    Path dir = ResultsWriter.writeSweep(target, sweep);
    out.println("workload: " + setup.workload.spec() + ", seeds " + seedsText + " (" + seeds.length + " runs per allocator)");
    TextTable.sweep(out, sweeps);
    out.println();
    out.println("results: " + dir);
    out.flush();
    return KvSim.EXIT_OK;
  }

  /** Parses {@code A..B} or {@code a,b,c}. */
  static long[] parseSeeds(String text) {
    try {
      int dots = text.indexOf("..");
      if (dots >= 0) {
        long a = Long.parseLong(text.substring(0, dots).trim());
        long b = Long.parseLong(text.substring(dots + 2).trim());
        if (b < a || b - a >= 1_000_000) {
          throw new InputException("--seeds " + text + ": expected A..B with A <= B and at most a million seeds");
        }
        long[] out = new long[(int) (b - a + 1)];
        for (int i = 0; i < out.length; i++) {
          out[i] = a + i;
        }
        return out;
      }
      String[] parts = text.split(",");
      long[] out = new long[parts.length];
      for (int i = 0; i < parts.length; i++) {
        out[i] = Long.parseLong(parts[i].trim());
      }
      return out;
    } catch (NumberFormatException e) {
      throw new InputException("--seeds " + text + ": expected A..B or a comma-separated list of integers");
    }
  }

  /** {@code -o DIR}, or a fresh run id {@code results/runs/<time>-<workload>[-N]}. */
  private static ResultFolder.Target outputTarget(RunOptions o, WorkloadRegistry.Workload w) {
    if (o.output != null) {
      return ResultFolder.Target.at(o.output, o.force);
    }
    String name = w.isGenerator() ? w.generator() : w.file().getFileName().toString().replaceAll("\\.[^.]*$", "");
    return ResultFolder.Target.fresh(Path.of("results", "runs"), name);
  }

  /** An empty workload is bad input, not a successful run of nothing. */
  private static void requireEvents(WorkloadRegistry.Workload w, List<AllocatorResult.Timing> timings) {
    if (!timings.isEmpty() && timings.get(timings.size() - 1).events() == 0) {
      throw new InputException(w.spec() + ": no events (the workload is empty; nothing to simulate)");
    }
  }
}

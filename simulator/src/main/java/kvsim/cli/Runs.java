package kvsim.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocatorListener;
import kvsim.config.WorkloadSpec;
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.SeedSweep;
import kvsim.registry.WorkloadRegistry;
import kvsim.report.ResultsWriter;
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
    RunSetup setup = RunSetup.resolve(label, yaml, yamlDir, o);
    Path dir = o.output != null ? o.output : defaultOutput(setup.workload);
    PrintWriter progress = o.quiet ? null : err;
    if (o.seeds != null) {
      return sweep(out, progress, setup, parseSeeds(o.seeds), dir);
    }
    List<AllocatorResult.Timing> timings = new ArrayList<>();
    List<AllocatorResult> results = setup.runAll(setup.workload, listeners, timings, progress);
    ResultsWriter.write(dir, setup.configEcho(setup.workload), results, timings);
    out.println("workload: " + setup.workload.spec() + " on " + setup.device.name() + " (" + kvsim.core.Bytes.format(setup.plan.testedRegion().sizeBytes()) + " under test)");
    TextTable.comparison(out, results);
    out.println();
    out.println("results: " + dir);
    out.flush();
    return KvSim.EXIT_OK;
  }

  private static int sweep(PrintWriter out, PrintWriter progress, RunSetup setup, long[] seeds, Path dir) throws IOException {
    if (!setup.workload.isGenerator()) {
      throw new InputException("--seeds: the workload " + setup.workload.spec() + " is a trace file; seeds apply to generators");
    }
    Map<String, SeedSweep> sweeps = new LinkedHashMap<>();
    Map<String, List<Object>> perSeed = new LinkedHashMap<>();
    for (String name : setup.allocators) {
      sweeps.put(name, new SeedSweep());
      perSeed.put(name, new ArrayList<>());
    }
    List<AllocatorResult.Timing> timings = new ArrayList<>();
    long started = System.nanoTime();
    for (int i = 0; i < seeds.length; i++) {
      WorkloadRegistry.Workload w = setup.workload.withSeed(seeds[i]);
      List<AllocatorResult> results = setup.runAll(w, Map.of(), timings, null);
      for (AllocatorResult r : results) {
        sweeps.get(r.allocator()).add(r);
        Map<String, Object> one = new LinkedHashMap<>();
        one.put("seed", seeds[i]);
        for (String h : SeedSweep.HEADLINES) {
          one.put(h, r.headline(h));
        }
        perSeed.get(r.allocator()).add(one);
      }
      if (progress != null && (System.nanoTime() - started) > 3_000_000_000L && (i + 1) % 10 == 0) {
        progress.printf("kvsim: %d/%d seeds%n", i + 1, seeds.length);
        progress.flush();
      }
    }
    Map<String, Object> summary = new LinkedHashMap<>(setup.configEcho(setup.workload.withSeed(seeds[0])));
    summary.put("seeds", List.of(seeds[0], seeds[seeds.length - 1], seeds.length));
    List<Object> allocs = new ArrayList<>();
    for (Map.Entry<String, SeedSweep> e : sweeps.entrySet()) {
      Map<String, Object> a = new LinkedHashMap<>();
      a.put("allocator", e.getKey());
      a.put("sweep", e.getValue().stats());
      a.put("per_seed", perSeed.get(e.getKey()));
      allocs.add(a);
    }
    summary.put("allocators", allocs);
    ResultsWriter.writeSummaryOnly(dir, summary);
    out.println("workload: " + setup.workload.spec() + ", seeds " + seeds[0] + ".." + seeds[seeds.length - 1] + " (" + seeds.length + " runs per allocator)");
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

  private static Path defaultOutput(WorkloadRegistry.Workload w) {
    String name = w.isGenerator() ? w.generator() : w.file().getFileName().toString().replaceAll("\\.[^.]*$", "");
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    Path base = Path.of("results", "runs");
    Path p = base.resolve(stamp + "-" + name);
    for (int i = 2; java.nio.file.Files.exists(p); i++) {
      p = base.resolve(stamp + "-" + name + "-" + i);
    }
    return p;
  }
}

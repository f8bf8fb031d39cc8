package kvsim.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import kvsim.alloc.AllocatorListener;
import kvsim.config.WorkloadSpec;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.registry.WorkloadRegistry;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.report.SweepResults;
import kvsim.report.TextTable;
import kvsim.run.RunResult;
import kvsim.run.RunSpec;
import kvsim.run.Runner;
import kvsim.run.SweepResult;

/** The shared body of {@code replay} and {@code compare}: parse, call the run library, write results, print the table. */
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
   * Runs and reports: resolves the request, checks the output folder, runs, writes the result
   * folder and prints the table.
   *
   * @param command the command's name, for progress lines
   * @param label the workload as the user wrote it (or the default's name)
   * @param yaml the workload spec file's content, or null
   * @param yamlDir the folder paths in the spec are relative to, or null
   * @param listeners optional listeners per allocator
   * @param oom {@code --snapshot-at-oom}, or null: writes its snapshots after the run, before the folder
   */
  static int execute(
      PrintWriter out,
      PrintWriter err,
      String command,
      String label,
      WorkloadSpec yaml,
      Path yamlDir,
      RunOptions o,
      Map<String, ? extends AllocatorListener> listeners,
      OomSnapshotFiles oom)
      throws IOException {
    RunSpec spec = RunSpec.resolve(o.request(label, yaml, yamlDir), err);
    ResultFolder.Target target = outputTarget(o, spec.workload()).reading(Inputs.of(label, spec.workload().file())).withReport(o.report.report()).check();
    if (target.report() && o.seeds == null) { // a seed sweep's folder has no chart: nothing to warm up
      kvsim.report.ChartWarmUp.start(); // Note [Charts off the critical path] on report.ChartJobs
    }
    Runner runner = new Runner(KvSim.Version.version());
    if (o.seeds != null) {
      long[] seeds = parseSeeds(o.seeds);
      Runner.Progress progress = runnerProgress(Progress.of(o.quiet.quiet, err, command, "runs of the sweep"), seeds.length * spec.allocators().size());
      SweepResult sweep = runner.sweep(spec, seeds, progress);
      // The table first, then the files (Note [Charts off the critical path] on report.ChartJobs).
      out.println("workload: " + spec.workload().spec() + ", seeds " + o.seeds.trim() + " (" + seeds.length + " runs per allocator)");
      TextTable.sweep(out, sweep.sweeps());
      out.println();
      out.flush();
      Path dir = ResultsWriter.writeSweep(target, SweepResults.of(sweep.config(), sweep.seeds(), sweep.sweeps()));
      out.println("results: " + dir);
      out.flush();
      return KvSim.EXIT_OK;
    }
    Runner.Progress progress = runnerProgress(Progress.of(o.quiet.quiet, err, command, "runs"), spec.allocators().size());
    RunResult result = runner.run(spec, listeners::get, progress);
    if (oom != null) {
      result = oom.write(out, err, result, target.linkBase(), o.force, Inputs.of(label, spec.workload().file()));
    }
    out.println("workload: " + spec.workload().spec() + " on " + spec.device().name() + " (" + Bytes.format(spec.plan().testedRegion().sizeBytes()) + " under test)");
    TextTable.comparison(out, result.results());
    out.println();
    out.flush();
    Path dir = ResultsWriter.write(target, result.config(), result.results(), result.timings(), result.memoryMaps());
    out.println("results: " + dir);
    out.flush();
    return KvSim.EXIT_OK;
  }

  /** Returns the detail of a run's progress line: its events so far, in millions, and their rate. */
  static String eventsDetail(long events, long wallNanos) {
    return String.format(Locale.ROOT, "%.1f M events, %.2f M events/s", events / 1e6, events * 1e3 / Math.max(1, wallNanos));
  }

  /**
   * Runner progress as {@link Progress} lines: the allocators' runs (or a sweep's cells) done of
   * the total, with the events replayed so far in the run's allocators (Note [Progress pacing]).
   */
  static Runner.Progress runnerProgress(Progress lines, int runs) {
    if (lines == null) {
      return null;
    }
    Map<String, Long> eventsByAllocator = new ConcurrentHashMap<>();
    AtomicInteger done = new AtomicInteger();
    return new Runner.Progress() {
      @Override
      public void events(String allocator, long events, long wallNanos) {
        eventsByAllocator.put(allocator, events);
        long sum = eventsByAllocator.values().stream().mapToLong(Long::longValue).sum();
        lines.update(done.get(), runs, eventsDetail(sum, wallNanos));
      }

      @Override
      public void runs(int finished, int total) {
        done.set(finished);
        lines.update(finished, total);
      }

      @Override
      public void cells(int finished, int total) {
        lines.update(finished, total);
      }
    };
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
      return ResultFolder.Target.at(o.output, ResultFolder.Kind.REPLAY, o.force);
    }
    String name = w.isGenerator() ? w.generator() : w.file().getFileName().toString().replaceAll("\\.[^.]*$", "");
    return ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.REPLAY);
  }
}

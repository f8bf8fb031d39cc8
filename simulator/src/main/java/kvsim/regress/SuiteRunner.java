package kvsim.regress;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.config.Origin;
import kvsim.config.SettingException;
import kvsim.config.Settings;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import kvsim.registry.WorkloadRegistry;
import kvsim.report.ResultsWriter;
import kvsim.run.Parallel;
import kvsim.run.CalibrationFile;
import kvsim.run.RunRequest;
import kvsim.run.RunResult;
import kvsim.run.RunSpec;
import kvsim.run.ServingGrid;
import kvsim.run.Runner;
import kvsim.run.ServingRunner;
import kvsim.run.ServingSpec;
import kvsim.serving.ServingSystems;

/**
 * Runs a suite's scenarios with the run library: every (scenario, allocator) and (scenario, serving
 * system) pair is one cell, a {@link Runner} or {@link ServingRunner} run of one allocator or
 * system, and the cells run on all cores ({@link Parallel}); results come back in suite order
 * whatever the scheduling. Every scenario is resolved before any cell runs, so bad input fails
 * first, naming the suite's file, line and field.
 */
final class SuiteRunner {
  /** Receives progress: {@code done} of {@code total} cells finished. */
  @FunctionalInterface
  interface Progress {
    void cells(int done, int total);
  }

  /**
   * One allocator's or system's run in a scenario.
   *
   * @param run the allocator or system name
   * @param summary its entry of {@code summary.json}, as the result files hold it
   * @param wallNanos the wall time of its run
   */
  record RunSummary(String run, Map<String, Object> summary, long wallNanos) {}

  /** A scenario's runs, in the order the scenario lists them. */
  record ScenarioResult(Suite.Scenario scenario, List<RunSummary> runs) {}

  private SuiteRunner() {}

  /** Scenarios resolved into runs, ready to go: {@link #prepare}, then {@link #run}. */
  static final class Prepared {
    private final List<Suite.Scenario> scenarios;
    private final List<Parallel.Work<RunSummary>> cells;
    private final List<Integer> owner;

    private Prepared(List<Suite.Scenario> scenarios, List<Parallel.Work<RunSummary>> cells, List<Integer> owner) {
      this.scenarios = scenarios;
      this.cells = cells;
      this.owner = owner;
    }
  }

  /**
   * Resolves every scenario's runs; any problem is an InputException at the suite's line.
   *
   * @param settings {@code ALLOCATOR.KEY=VALUE} policy changes, applied to every L1 run of that allocator
   */
  static Prepared prepare(List<Suite.Scenario> scenarios, List<String> settings, String kvsimVersion) {
    List<Parallel.Work<RunSummary>> cells = new ArrayList<>();
    List<Integer> owner = new ArrayList<>();
    for (int i = 0; i < scenarios.size(); i++) {
      Suite.Scenario s = scenarios.get(i);
      for (String run : s.runs()) {
        cells.add(s.kind() == Suite.Kind.SERVING ? servingCell(s, run) : allocatorCell(s, run, settings, kvsimVersion));
        owner.add(i);
      }
    }
    return new Prepared(List.copyOf(scenarios), cells, owner);
  }

  /**
   * Runs prepared scenarios, {@code threads} runs at once, and returns each scenario's runs in
   * suite order.
   */
  static List<ScenarioResult> run(Prepared p, int threads, Progress progress) throws IOException {
    List<Parallel.Work<RunSummary>> cells = p.cells;
    int[] done = {0};
    List<RunSummary> summaries = Parallel.map(cells.size(), threads, i -> {
      RunSummary r = cells.get(i).run(i);
      if (progress != null) {
        synchronized (done) {
          progress.cells(++done[0], cells.size());
        }
      }
      return r;
    });
    List<ScenarioResult> out = new ArrayList<>();
    for (int i = 0; i < p.scenarios.size(); i++) {
      List<RunSummary> runs = new ArrayList<>();
      for (int c = 0; c < summaries.size(); c++) {
        if (p.owner.get(c) == i) {
          runs.add(summaries.get(c));
        }
      }
      out.add(new ScenarioResult(p.scenarios.get(i), runs));
    }
    return out;
  }

  private static Parallel.Work<RunSummary> allocatorCell(Suite.Scenario s, String allocator, List<String> settings, String kvsimVersion) {
    List<String> mine = new ArrayList<>(suiteOptions(s));
    calibration(s); // checked here, outside at(), so that its problem is reported at its own line alone
    // The scenario alone first, so that a problem of the suite is reported at its line.
    RunSpec scenarioOnly = at(s, () -> RunSpec.resolve(request(s, List.of(allocator), mine), null));
    List<String> changes = settings.stream().filter(x -> x.startsWith(allocator + ".")).toList();
    mine.addAll(changes);
    RunSpec spec;
    try {
      spec = changes.isEmpty() ? scenarioOnly : RunSpec.resolve(request(s, List.of(allocator), mine), null);
    } catch (OptionMap.OptionException e) {
      String change = changes.stream().filter(x -> x.startsWith(allocator + "." + e.key() + "=")).findFirst().orElse(null);
      throw change == null ? e : new InputException("--set " + change + ": " + e.getMessage());
    }
    return i -> {
      RunResult r = new Runner(kvsimVersion, 1).run(spec, name -> null, null);
      return new RunSummary(allocator, ResultsWriter.allocatorSummary(r.results().get(0)), r.timings().get(0).wallNanos());
    };
  }

  private static Parallel.Work<RunSummary> servingCell(Suite.Scenario s, String system) {
    for (Settings.Value v : s.settings().values()) {
      String key = v.setting().readsKey();
      String problem = key.isEmpty() ? null : ServingSystems.notRead(system, key);
      if (problem != null) {
        throw v.error(problem + "; move it to a scenario of the systems that read it");
      }
    }
    YamlNode workload = s.field("serving");
    try {
      WorkloadRegistry.resolveRequests(s.workload(), Map.of());
    } catch (InputException e) {
      throw workload.error(e.getMessage());
    }
    // Built once here, so that what only a build finds fails before any run. A setting's problem is
    // at its line already; a build's, at the value that sized the KV memory (Note [Builds that find
    // too little KV memory] on ServingSpec.kvMemorySource), else at the scenario.
    ServingSpec spec;
    try {
      spec = ServingSpec.resolve(ServingSpec.Request.of(s.workload(), List.of(system), s.settings()));
    } catch (SettingException e) {
      throw e;
    } catch (InputException e) {
      throw s.node().error(e.getMessage());
    }
    try {
      ServingGrid.checkBuilds(spec);
    } catch (InputException e) {
      throw spec.kvMemorySource() != null ? spec.kvMemorySource().error(e.getMessage()) : s.node().error(e.getMessage());
    }
    return i -> {
      ServingRunner.SystemResult r = new ServingRunner(1).run(spec, null).get(0);
      return new RunSummary(system, r.summary(), r.wallNanos());
    };
  }

  /** The scenario's {@code options:} as {@code ALLOCATOR.KEY=VALUE} settings. */
  private static List<String> suiteOptions(Suite.Scenario s) {
    List<String> out = new ArrayList<>();
    YamlNode options = s.field("options");
    if (options == null) {
      return out;
    }
    for (String allocator : options.keys()) {
      YamlNode one = options.get(allocator);
      if (!s.runs().contains(allocator)) {
        throw one.error("'" + allocator + "' is not among the scenario's allocators " + s.runs());
      }
      for (String key : one.keys()) {
        out.add(allocator + "." + key + "=" + one.get(key).text());
      }
    }
    return out;
  }

  private static RunRequest request(Suite.Scenario s, List<String> allocators, List<String> settings) {
    List<String> own = new ArrayList<>();
    for (String setting : settings) {
      if (allocators.contains(setting.substring(0, setting.indexOf('.')))) {
        own.add(setting);
      }
    }
    // A policy change of the PyTorch options on the command line replaces the scenario's own.
    boolean confSet = own.stream().anyMatch(x -> x.startsWith("pytorch-caching.torch-alloc-conf="));
    String conf = allocators.contains("pytorch-caching") && !confSet ? s.text("torch-alloc-conf") : null;
    RunRequest r = RunRequest.of(s.workload()).withAllocators(allocators).withDevice(s.text("device")).withModel(s.text("model"))
        .withPlan(s.text("weights"), s.text("activations")).withSettings(own).withTorchAllocConf(conf)
        .withCalibration(calibration(s));
    // Each value's problem is reported at its field's line.
    for (String field : List.of("device", "model", "weights", "activations")) {
      YamlNode n = s.field(field);
      if (n != null) {
        r = r.withOrigin("--" + field, Origin.at(n.source(), n.line(), n.field()));
      }
    }
    return r;
  }

  /**
   * Checks the scenario's calibration file ({@code calibration:}) and returns the path the run
   * library reads it from, or null for none; a file that is missing (or a folder) is reported at the
   * scenario's {@code calibration:} line, a problem inside it at the file's own.
   */
  private static String calibration(Suite.Scenario s) {
    if (s.calibration() == null) {
      return null;
    }
    java.nio.file.Path file = java.nio.file.Path.of(s.calibration());
    try {
      CalibrationFile.read(file);
    } catch (InputException e) {
      throw java.nio.file.Files.isRegularFile(file) ? e : s.field("calibration").error(e.getMessage());
    }
    return s.calibration();
  }

  /**
   * Runs a resolution of the scenario's own fields and reports a problem where it belongs: a value
   * given with its origin ({@link RunRequest#withOrigin}) at its field already; an allocator
   * option's at its {@code options:} entry (or {@code torch-alloc-conf:}); anything else at the
   * scenario's workload, or at the scenario for its memory.
   */
  private static <T> T at(Suite.Scenario s, java.util.function.Supplier<T> resolve) {
    try {
      return resolve.get();
    } catch (SettingException e) {
      throw e;
    } catch (InputException e) {
      YamlNode options = s.field("options");
      if (e instanceof OptionMap.OptionException o) {
        for (String allocator : options == null ? List.<String>of() : options.keys()) {
          YamlNode option = options.get(allocator).get(o.key());
          if (option != null) {
            throw option.error(e.getMessage());
          }
        }
        YamlNode conf = s.field("torch-alloc-conf");
        if (conf != null && o.key().equals("torch-alloc-conf")) {
          throw conf.error(e.getMessage());
        }
      }
      String message = e.getMessage();
      throw (message.startsWith("KV memory") || message.startsWith("the weights") ? s.node() : s.field("workload")).error(message);
    }
  }

  /** Returns a summary's value of {@code metric}: a Number, or null where undefined; an error at the watch entry if it has none. */
  static Object value(Suite.Kind kind, RunSummary run, Suite.Watch watch, String scenario) {
    Object v = lookup(run.summary(), watch.metric());
    if (v == MISSING && kind == Suite.Kind.ALLOCATORS) {
      v = lookup(run.summary(), "metrics." + watch.metric());
    }
    if (v == MISSING) {
      throw watch.error("unknown metric for " + run.run() + " in scenario " + scenario + " (known: " + String.join(", ", names(run.summary(), "")) + ")");
    }
    if (v instanceof Map<?, ?> group) {
      throw watch.error("'" + watch.metric() + "' is a group of values; name one: " + String.join(", ", names(group, watch.metric() + ".")));
    }
    if (v != null && !(v instanceof Number)) {
      throw watch.error("'" + watch.metric() + "' is not a number (" + v + ") and cannot be watched");
    }
    return v;
  }

  private static final Object MISSING = new Object();

  private static Object lookup(Map<?, ?> map, String path) {
    Object at = map;
    for (String part : path.split("\\.")) {
      if (!(at instanceof Map<?, ?> m) || !m.containsKey(part)) {
        return MISSING;
      }
      at = m.get(part);
    }
    return at;
  }

  /** The numeric leaves under a map, as dotted names (the allocators' gauges without their metrics. prefix). */
  private static List<String> names(Map<?, ?> map, String prefix) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<?, ?> e : new LinkedHashMap<>(map).entrySet()) {
      String name = prefix.isEmpty() && e.getKey().equals("metrics") ? "" : prefix + e.getKey() + ".";
      if (e.getValue() instanceof Map<?, ?> inner) {
        if (!e.getKey().equals("options") && !e.getKey().equals("parts")) {
          out.addAll(names(inner, name));
        }
      } else if (e.getValue() == null || e.getValue() instanceof Number) {
        out.add(prefix + e.getKey());
      }
    }
    return out;
  }
}

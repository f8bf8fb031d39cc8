package kvsim.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorListener;
import kvsim.config.WorkloadSpec;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.engine.RegionRouter;
import kvsim.engine.ReplayEngine;
import kvsim.gpu.DeviceSpec;
import kvsim.gpu.MemoryPlan;
import kvsim.metrics.AllocatorResult;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.trace.EventSource;

/**
 * A resolved run: the workload, device, model, memory plan and allocators with their options,
 * merged from a workload spec file (if any) and the command line, which wins. Runs every allocator
 * on its own fresh source, in parallel on up to as many threads as there are cores; results keep
 * the order of the allocator list, so they do not depend on scheduling.
 */
final class RunSetup {
  /** The model that manages the activations region of a memory plan. */
  static final String ACTIVATIONS_ALLOCATOR = "first-fit";

  final WorkloadRegistry.Workload workload;
  final DeviceSpec device;
  final ModelPreset model;
  final MemoryPlan plan;
  final List<String> allocators;
  final Map<String, Map<String, String>> allocatorOptions;
  final boolean check;
  final long sampleEvery;

  private RunSetup(
      WorkloadRegistry.Workload workload,
      DeviceSpec device,
      ModelPreset model,
      MemoryPlan plan,
      List<String> allocators,
      Map<String, Map<String, String>> allocatorOptions,
      boolean check,
      long sampleEvery) {
    this.workload = workload;
    this.device = device;
    this.model = model;
    this.plan = plan;
    this.allocators = allocators;
    this.allocatorOptions = allocatorOptions;
    this.check = check;
    this.sampleEvery = sampleEvery;
  }

  /**
   * Resolves a workload argument (trace, generator spec or YAML spec file) with the command-line
   * options. Errors name where the bad value came from: the option, or the spec file and its line,
   * or the trace header. Warnings (a command-line value overriding the trace header's) go to {@code
   * err}.
   */
  static RunSetup resolve(String workloadArg, WorkloadSpec yaml, Path yamlDir, RunOptions o, PrintWriter err) {
    WorkloadRegistry.Workload workload = resolveWorkload(workloadArg, yaml, yamlDir);
    Map<String, Object> header = workload.header();
    DeviceSpec device =
        choose("--device", o.device, yaml, "device", yaml == null ? null : yaml.device(), workload, header, DeviceSpec::parse, err);
    if (device == null) {
      device = DeviceSpec.defaultDevice();
    }
    ModelPreset model =
        choose("--model", o.model, yaml, "model", yaml == null ? null : yaml.model(), workload, header, ModelPreset::parse, err);
    if (model == null) {
      model = ModelPreset.defaultModel();
    }
    Map<String, String> yamlPlan = yaml == null ? Map.of() : yaml.planStrings();
    for (String key : yamlPlan.keySet()) {
      if (!key.equals("weights") && !key.equals("activations")) {
        throw yaml.origin().error("plan." + key, "unknown field (known: weights, activations)");
      }
    }
    long weights = size("--weights", o.weights, yaml, "plan.weights", yamlPlan.get("weights"));
    long activations = size("--activations", o.activations, yaml, "plan.activations", yamlPlan.get("activations"));
    MemoryPlan plan;
    try {
      plan = new MemoryPlan(device, weights, activations);
    } catch (IllegalArgumentException e) {
      throw new InputException("memory plan: " + e.getMessage());
    }

    List<String> allocators = new ArrayList<>(o.allocators);
    boolean allocatorsFromYaml = allocators.isEmpty() && yaml != null && yaml.allocators() != null;
    if (allocatorsFromYaml) {
      allocators.addAll(yaml.allocators());
    }
    if (allocators.isEmpty()) {
      allocators.addAll(AllocatorRegistry.names());
    }
    Map<String, Map<String, String>> options = new LinkedHashMap<>();
    for (String name : allocators) {
      try {
        AllocatorRegistry.get(name.trim());
      } catch (InputException e) {
        throw allocatorsFromYaml ? yaml.origin().error("allocators", e.getMessage()) : e;
      }
      if (options.containsKey(name)) {
        throw allocatorsFromYaml
            ? yaml.origin().error("allocators", "'" + name + "' given twice")
            : new InputException("--allocator: '" + name + "' given twice");
      }
      options.put(name, new LinkedHashMap<>(yaml == null ? Map.of() : yaml.optionStrings(name)));
    }
    if (yaml != null && yaml.options() != null) {
      for (String name : yaml.options().keySet()) {
        if (!options.containsKey(name)) {
          throw yaml.origin().error("options." + name, "'" + name + "' is not among the allocators run " + options.keySet());
        }
      }
    }
    for (String setting : o.settings) {
      int dot = setting.indexOf('.');
      int eq = setting.indexOf('=');
      if (dot <= 0 || eq < dot) {
        throw new InputException("--set: expected ALLOCATOR.KEY=VALUE, got '" + setting + "'");
      }
      String name = setting.substring(0, dot);
      Map<String, String> m = options.get(name);
      if (m == null) {
        throw new InputException("--set " + setting + ": allocator '" + name + "' is not among those run " + options.keySet());
      }
      m.put(setting.substring(dot + 1, eq), setting.substring(eq + 1));
    }
    String conf = o.torchAllocConf != null ? o.torchAllocConf : yaml == null ? null : yaml.torchAllocConf();
    if (conf != null) {
      Map<String, String> m = options.get("pytorch-caching");
      if (m == null) {
        throw new InputException("--torch-alloc-conf applies to pytorch-caching, which is not among the allocators run " + options.keySet());
      }
      m.put("torch-alloc-conf", conf);
    }

    if (o.sampleEvery < 0) {
      throw new InputException("--sample-every must not be negative");
    }
    RunSetup setup = new RunSetup(workload, device, model, plan, List.copyOf(options.keySet()), options, o.check, o.sampleEvery);
    for (String name : setup.allocators) {
      try {
        setup.newAllocator(name); // fail on bad options before anything runs
      } catch (OptionMap.OptionException e) {
        boolean fromYaml = yaml != null && yaml.optionStrings(name).containsKey(e.key()) && !o.sets(name, e.key());
        throw fromYaml ? yaml.origin().error("options." + name + "." + e.key(), e.getMessage()) : e;
      }
    }
    return setup;
  }

  /**
   * Picks a device or model: the command line, else the spec file, else the trace header, else
   * null. A command-line or spec value that differs from what the trace header names is used, and
   * reported on {@code err}, since the trace's sizes were computed for the header's choice.
   */
  private static <T> T choose(
      String option,
      String cliText,
      WorkloadSpec yaml,
      String yamlField,
      String yamlText,
      WorkloadRegistry.Workload workload,
      Map<String, Object> header,
      java.util.function.Function<String, T> parse,
      PrintWriter err) {
    Object headerValue = header.get(yamlField);
    String headerText = headerValue == null ? null : headerValue.toString();
    T chosen;
    String from;
    if (cliText != null) {
      chosen = parseOr(parse, cliText, e -> new InputException(option + ": " + e.getMessage()));
      from = option + " " + cliText;
    } else if (yamlText != null) {
      chosen = parseOr(parse, yamlText, e -> yaml.origin().error(yamlField, e.getMessage()));
      from = yaml.origin().source() + " (" + yamlField + ": " + yamlText + ")";
    } else if (headerText != null) {
      return parseOr(parse, headerText, e -> InputException.at(workload.spec(), 1, yamlField, "in the trace header: " + e.getMessage()));
    } else {
      return null;
    }
    if (headerText != null) {
      T fromHeader = parseOr(parse, headerText, e -> InputException.at(workload.spec(), 1, yamlField, "in the trace header: " + e.getMessage()));
      if (!fromHeader.equals(chosen) && err != null) {
        err.println("kvsim: warning: " + from + " differs from the " + yamlField + " the trace was written for ("
            + headerText + ", in its header); using " + from);
        err.flush();
      }
    }
    return chosen;
  }

  private static <T> T parseOr(
      java.util.function.Function<String, T> parse, String text, java.util.function.Function<IllegalArgumentException, InputException> error) {
    try {
      return parse.apply(text);
    } catch (InputException e) {
      throw e;
    } catch (IllegalArgumentException e) {
      throw error.apply(e);
    }
  }

  private static WorkloadRegistry.Workload resolveWorkload(String arg, WorkloadSpec yaml, Path yamlDir) {
    if (yaml == null) {
      return WorkloadRegistry.resolve(arg, Map.of());
    }
    if (yaml.workload() == null) {
      throw InputException.at(yaml.origin().source(), 0, "workload", "the workload spec names no workload");
    }
    Map<String, String> params = new LinkedHashMap<>(yaml.paramStrings());
    if (yaml.seed() != null) {
      params.putIfAbsent("seed", Long.toString(yaml.seed()));
    }
    String w = yaml.workload();
    boolean generator = WorkloadRegistry.generators().containsKey(w.split(":", 2)[0]);
    if (!generator && yamlDir != null) {
      w = yamlDir.resolve(w).toString();
    }
    try {
      return WorkloadRegistry.resolve(w, params);
    } catch (OptionMap.OptionException e) {
      String field =
          yaml.paramStrings().containsKey(e.key())
              ? "params." + e.key()
              : e.key().equals("seed") && yaml.seed() != null ? "seed" : "workload";
      throw yaml.origin().error(field, e.getMessage());
    } catch (InputException e) {
      throw yaml.origin().error("workload", e.getMessage());
    }
  }

  private static long size(String option, String cliText, WorkloadSpec yaml, String yamlField, String yamlText) {
    String text = cliText != null ? cliText : yamlText;
    if (text == null) {
      return 0;
    }
    try {
      return Bytes.parse(text);
    } catch (IllegalArgumentException e) {
      throw cliText != null ? new InputException(option + ": " + e.getMessage()) : yaml.origin().error(yamlField, e.getMessage());
    }
  }

  /** Returns a fresh model of this name over the plan's region under test. */
  Allocator newAllocator(String name) {
    return AllocatorRegistry.create(new AllocatorContext(name, plan.testedRegion(), device, model, allocatorOptions.get(name)));
  }

  private Allocator newActivationsAllocator() {
    return plan.activationsRegion()
        .map(r -> AllocatorRegistry.create(new AllocatorContext(ACTIVATIONS_ALLOCATOR, r, device, model, Map.of())))
        .orElse(null);
  }

  /** Returns the configuration echo for summary.json (inputs only, nothing time-dependent). */
  Map<String, Object> configEcho(WorkloadRegistry.Workload w) throws IOException {
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("kvsim_version", KvSim.Version.version());
    Map<String, Object> wl = new LinkedHashMap<>();
    wl.put("spec", w.spec());
    try (EventSource s = w.open(model, device)) {
      wl.putAll(s.describe());
    }
    c.put("workload", wl);
    Map<String, Object> dev = new LinkedHashMap<>();
    dev.put("name", device.name());
    dev.put("capacity_bytes", device.capacityBytes());
    c.put("device", dev);
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", model.name());
    m.put("kv_bytes_per_token", model.kvBytesPerToken());
    c.put("model", m);
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("weights_bytes", plan.weightsBytes());
    p.put("tested_region_bytes", plan.testedRegion().sizeBytes());
    p.put("activations_bytes", plan.activationsBytes());
    if (plan.activationsBytes() > 0) {
      p.put("activations_allocator", ACTIVATIONS_ALLOCATOR);
    }
    c.put("plan", p);
    c.put("check", check);
    return c;
  }

  /**
   * Runs the workload on every allocator and returns the results in allocator order.
   *
   * @param listeners per allocator name, an optional listener (e.g. a snapshot recorder)
   * @param timings receives the wall-clock figures
   * @param err where progress goes (null for none)
   */
  List<AllocatorResult> runAll(
      WorkloadRegistry.Workload w, Map<String, AllocatorListener> listeners, List<AllocatorResult.Timing> timings, PrintWriter err)
      throws IOException {
    int threads = Math.max(1, Math.min(allocators.size(), Runtime.getRuntime().availableProcessors()));
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "kvsim-run");
      t.setDaemon(true);
      return t;
    });
    try {
      List<Future<Object[]>> futures = new ArrayList<>();
      for (String name : allocators) {
        futures.add(pool.submit(() -> runOne(w, name, listeners.get(name), err)));
      }
      List<AllocatorResult> results = new ArrayList<>();
      for (Future<Object[]> f : futures) {
        Object[] pair = get(f);
        results.add((AllocatorResult) pair[0]);
        timings.add((AllocatorResult.Timing) pair[1]);
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  private static Object[] get(Future<Object[]> f) throws IOException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted");
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException r) {
        throw r;
      }
      if (c instanceof IOException io) {
        throw io;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(c);
    }
  }

  private Object[] runOne(WorkloadRegistry.Workload w, String name, AllocatorListener listener, PrintWriter err)
      throws IOException {
    AllocatorContext ctx = new AllocatorContext(name, plan.testedRegion(), device, model, allocatorOptions.get(name));
    Allocator tested = AllocatorRegistry.create(ctx);
    Allocator activations = newActivationsAllocator();
    if (listener != null) {
      tested.setListener(listener);
      if (listener instanceof kvsim.torch.SnapshotRecorder recorder) {
        recorder.bind(tested);
      }
    }
    long start = System.nanoTime();
    ReplayEngine.Progress progress = err == null ? null : events -> {
      double seconds = (System.nanoTime() - start) / 1e9;
      if (seconds >= 3) {
        synchronized (err) {
          err.printf(Locale.ROOT, "kvsim: %s: %.1f M events, %.2f M events/s%n", name, events / 1e6, events / 1e6 / seconds);
          err.flush();
        }
      }
    };
    ReplayEngine.Result r;
    RegionRouter regions =
        activations == null
            ? new RegionRouter(tested)
            : new RegionRouter(tested, List.of(new RegionRouter.Route("activations", activations, request -> !request.splittable())));
    try (EventSource source = w.open(model, device)) {
      r = ReplayEngine.run(regions, source, new ReplayEngine.Options(check, sampleEvery, listener, progress));
    }
    AllocatorResult result =
        new AllocatorResult(
            name,
            ctx.effectiveOptions(),
            r.metrics().counters(),
            r.metrics().summaries(),
            tested.modelledNanos(),
            r.otherRegionOomCount(),
            new java.util.TreeMap<>(tested.extraMetrics()),
            r.metrics().samples());
    return new Object[] {result, new AllocatorResult.Timing(name, r.metrics().events(), r.wallNanos())};
  }
}

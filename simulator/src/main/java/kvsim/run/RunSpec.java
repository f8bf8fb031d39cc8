package kvsim.run;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.Calibration;
import kvsim.config.Origin;
import kvsim.config.WorkloadSpec;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.engine.RegionRouter;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.trace.EventSource;

/**
 * A resolved run: the workload, device, model, memory plan and allocators with their options,
 * merged once from a workload spec file (if any) and the command line, which wins, and from the
 * trace header's model and device. Every command that runs workloads (replay, compare, seed
 * sweeps) builds one and hands it to a {@link Runner}.
 */
public final class RunSpec {
  /** The model that manages the activations region of a memory plan. */
  public static final String ACTIVATIONS_ALLOCATOR = "first-fit";

  private final WorkloadRegistry.Workload workload;
  private final DeviceSpec device;
  private final ModelPreset model;
  private final MemoryPlan plan;
  private final List<String> allocators;
  private final Map<String, Map<String, String>> allocatorOptions;
  private final Calibration calibration;
  private final boolean check;
  private final long sampleEvery;

  private RunSpec(
      WorkloadRegistry.Workload workload,
      DeviceSpec device,
      ModelPreset model,
      MemoryPlan plan,
      List<String> allocators,
      Map<String, Map<String, String>> allocatorOptions,
      Calibration calibration,
      boolean check,
      long sampleEvery) {
    this.calibration = calibration;
    this.workload = workload;
    this.device = device;
    this.model = model;
    this.plan = plan;
    this.allocators = allocators;
    this.allocatorOptions = allocatorOptions;
    this.check = check;
    this.sampleEvery = sampleEvery;
  }

  /** Returns the workload. */
  public WorkloadRegistry.Workload workload() {
    return workload;
  }

  /** Returns the simulated device. */
  public DeviceSpec device() {
    return device;
  }

  /** Returns the model preset (KV bytes per token). */
  public ModelPreset model() {
    return model;
  }

  /** Returns the memory plan. */
  public MemoryPlan plan() {
    return plan;
  }

  /** Returns the allocators to run, in the order given. */
  public List<String> allocators() {
    return allocators;
  }

  /** Returns the calibration applied over the models' default latencies ({@link Calibration#NONE} for none). */
  public Calibration calibration() {
    return calibration;
  }

  /** Returns whether the invariant checkers run after every event. */
  public boolean check() {
    return check;
  }

  /** Returns the time-series stride in events (0: automatic). */
  public long sampleEvery() {
    return sampleEvery;
  }

  /**
   * Resolves a request: a workload argument (trace, generator spec or YAML spec file) with the
   * command-line options. Errors name where the bad value came from: the option, or the spec file and its line,
   * or the trace header. Warnings (a command-line value overriding the trace header's) go to {@code
   * err}.
   */
  public static RunSpec resolve(RunRequest o, PrintWriter err) {
    WorkloadSpec yaml = o.spec();
    WorkloadRegistry.Workload workload = resolveWorkload(o.workload(), yaml, o.specDir());
    Map<String, Object> header = workload.header();
    DeviceSpec device =
        choose("--device", o.origin("--device"), o.device(), yaml, "device", yaml == null ? null : yaml.device(), workload, header, DeviceSpec::parse, err);
    if (device == null) {
      device = DeviceSpec.defaultDevice();
    }
    ModelPreset model =
        choose("--model", o.origin("--model"), o.model(), yaml, "model", yaml == null ? null : yaml.model(), workload, header, ModelPreset::parse, err);
    if (model == null) {
      model = ModelPreset.defaultModel();
    }
    Map<String, String> yamlPlan = yaml == null ? Map.of() : yaml.planStrings();
    for (String key : yamlPlan.keySet()) {
      if (!key.equals("weights") && !key.equals("activations")) {
        throw yaml.origin().error("plan." + key, "unknown field (known: weights, activations)");
      }
    }
    long weights = size(o.origin("--weights"), o.weights(), yaml, "plan.weights", yamlPlan.get("weights"));
    long activations = size(o.origin("--activations"), o.activations(), yaml, "plan.activations", yamlPlan.get("activations"));
    MemoryPlan plan;
    try {
      plan = new MemoryPlan(device, weights, activations);
    } catch (IllegalArgumentException e) {
      // A plan the spec file gave is reported at its plan: line.
      boolean fromYaml = (o.weights() == null && yamlPlan.containsKey("weights")) || (o.activations() == null && yamlPlan.containsKey("activations"));
      throw fromYaml ? yaml.origin().error("plan", e.getMessage()) : new InputException("memory plan: " + e.getMessage());
    }

    List<String> allocators = new ArrayList<>(o.allocators());
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
    for (String setting : o.settings()) {
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
    String conf = o.torchAllocConf() != null ? o.torchAllocConf() : yaml == null ? null : yaml.torchAllocConf();
    boolean confFromYaml = o.torchAllocConf() == null && conf != null;
    if (conf != null) {
      Map<String, String> m = options.get("pytorch-caching");
      if (m == null) {
        String problem = "applies to pytorch-caching, which is not among the allocators run " + options.keySet();
        throw confFromYaml ? yaml.origin().error("torch-alloc-conf", problem) : new InputException("--torch-alloc-conf " + problem);
      }
      m.put("torch-alloc-conf", conf);
    }

    if (o.sampleEvery() < 0) {
      throw new InputException("--sample-every must not be negative");
    }
    Calibration calibration = Calibration.NONE;
    if (o.calibration() != null) {
      calibration = CalibrationFile.read(Path.of(o.calibration()));
    } else if (yaml != null && yaml.calibration() != null) {
      Path file = o.specDir() == null ? Path.of(yaml.calibration()) : o.specDir().resolve(yaml.calibration());
      try {
        calibration = CalibrationFile.read(file);
      } catch (InputException e) {
        // A problem inside a calibration file names that file; a missing one, or a folder, is the spec's line.
        throw Files.isRegularFile(file) ? e : yaml.origin().error("calibration", e.getMessage());
      }
    }
    String calibrationWarning = calibration.deviceWarning(device);
    if (calibrationWarning != null && err != null) {
      err.println("kvsim: warning: " + calibrationWarning); // Note [A calibration from another device] on alloc.Calibration
      err.flush();
    }
    RunSpec setup =
        new RunSpec(workload, device, model, plan, List.copyOf(options.keySet()), options, calibration, o.check(), o.sampleEvery());
    for (String name : setup.allocators) {
      try {
        setup.newAllocator(name); // fail on bad options before anything runs
      } catch (OptionMap.OptionException e) {
        boolean fromYaml = yaml != null && yaml.optionStrings(name).containsKey(e.key()) && !o.sets(name, e.key());
        if (confFromYaml && name.equals("pytorch-caching") && e.key().equals("torch-alloc-conf")) {
          throw yaml.origin().error("torch-alloc-conf", e.getMessage());
        }
        throw fromYaml ? yaml.origin().error("options." + name + "." + e.key(), e.getMessage()) : e;
      } catch (InputException e) {
        // A model that cannot be built over the region under test: a device from the spec file is
        // reported at its device: line.
        boolean deviceFromYaml = o.device() == null && yaml != null && yaml.device() != null;
        throw deviceFromYaml ? yaml.origin().error("device", e.getMessage()) : e;
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
      Origin cliOrigin,
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
      chosen = parseOr(parse, cliText, e -> cliOrigin.error(e.getMessage()));
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

  private static long size(Origin cliOrigin, String cliText, WorkloadSpec yaml, String yamlField, String yamlText) {
    String text = cliText != null ? cliText : yamlText;
    if (text == null) {
      return 0;
    }
    try {
      return Bytes.parse(text);
    } catch (IllegalArgumentException e) {
      throw cliText != null ? cliOrigin.error(e.getMessage()) : yaml.origin().error(yamlField, e.getMessage());
    }
  }

  /** Returns what a model of this name over the plan's region under test is built from. */
  public AllocatorContext contextFor(String name) {
    return new AllocatorContext(name, plan.testedRegion(), device, model, allocatorOptions.get(name), calibration);
  }

  /** Returns a fresh model of this name over the plan's region under test. */
  public Allocator newAllocator(String name) {
    return AllocatorRegistry.create(contextFor(name));
  }

  /** Returns the memory plan's regions for one run of {@code tested}: the region under test and, if planned, the activations region. */
  RegionRouter regionsFor(Allocator tested) {
    Allocator activations = newActivationsAllocator();
    if (activations == null) {
      return new RegionRouter(tested);
    }
    // vLLM's two-pool layout: whatever may not be split into pages goes to the activations region.
    return new RegionRouter(tested, List.of(new RegionRouter.Route("activations", activations, request -> !request.splittable())));
  }

  private Allocator newActivationsAllocator() {
    return plan.activationsRegion()
        .map(r -> AllocatorRegistry.create(new AllocatorContext(ACTIVATIONS_ALLOCATOR, r, device, model, Map.of(), calibration)))
        .orElse(null);
  }

  /** Returns the configuration echo for summary.json (inputs only, nothing time-dependent). */
  public Map<String, Object> configEcho(WorkloadRegistry.Workload w, String kvsimVersion) throws IOException {
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("kvsim_version", kvsimVersion);
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
    if (!calibration.isNone()) {
      c.put("calibration", calibration.echo());
    }
    c.put("check", check);
    return c;
  }
}

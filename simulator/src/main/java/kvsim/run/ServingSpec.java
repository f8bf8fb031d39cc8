package kvsim.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.Calibration;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.ForwardTimeModel;
import kvsim.devicemodel.MemoryPlan;
import kvsim.registry.WorkloadRegistry;
import kvsim.serving.SchedulerConfig;
import kvsim.serving.ServingSystems;

/**
 * A resolved serving run: the request workload, model, device, the KV memory and the scheduler's
 * limits, and the systems to compare, checked once before anything runs.
 *
 * <p>KV memory is either given ({@code --kv-memory}) or derived as vLLM does from {@code
 * gpu_memory_utilization} (default {@value #DEFAULT_GPU_MEMORY_UTILIZATION}): device × fraction −
 * weights − the activation peak, estimated as one forward pass over {@code max_num_batched_tokens}
 * tokens holding its two MLP projections in fp16 (tokens × MLP width × 2 × 2 B); vLLM measures that
 * peak by profiling.
 *
 * <p>Under tensor parallelism ({@code tensor-parallel} N, or a device {@code Nx<preset>}; README,
 * "Several GPUs") every number of the memory plan is one GPU's: the device is one GPU, the model
 * its share ({@link ModelPreset#perGpu}: weights / N, KV heads / N, MLP width / N, so the
 * activations too), and the KV memory is what one GPU holds. Every GPU holds the same block table,
 * so the systems and their allocators see one GPU; the summary gives the total beside it.
 */
public final class ServingSpec {
  /** vLLM's default share of the device it may use. */
  public static final double DEFAULT_GPU_MEMORY_UTILIZATION = 0.9;
  /** vLLM's default KV block size, in tokens. */
  public static final int DEFAULT_BLOCK_TOKENS = 16;

  /**
   * What a user asked for: the workload, the systems and the settings as given, each with its
   * origin ({@link Settings}; a setting not given takes its default).
   *
   * @param workload a request generator spec or a request trace path; a generator's seed ({@code
   *     --seed}) is part of it ({@link #seededWorkload})
   * @param systems system names (empty: vllm)
   * @param settings the serving settings given ({@link ServingSettings})
   * @param check run the invariant checkers after every iteration
   * @param allocatorOptions options of the contiguous systems' allocators by allocator name, as
   *     {@code --set ALLOCATOR.KEY=VALUE} gives them (empty: defaults)
   */
  public record Request(String workload, List<String> systems, Settings settings, boolean check, Map<String, Map<String, String>> allocatorOptions) {
    public Request {
      systems = systems == null ? List.of() : List.copyOf(systems);
      settings = settings == null ? Settings.none() : settings;
      allocatorOptions = allocatorOptions == null ? Map.of() : Map.copyOf(allocatorOptions);
    }

    /** A request without invariant checks or allocator options. */
    public static Request of(String workload, List<String> systems, Settings settings) {
      return new Request(workload, systems, settings, false, Map.of());
    }

    /** Returns this request with other settings. */
    public Request with(Settings other) {
      return new Request(workload, systems, other, check, allocatorOptions);
    }
  }

  private final WorkloadRegistry.RequestWorkload workload;
  private final ModelPreset model;
  private final ModelPreset wholeModel;
  private final DeviceSpec device;
  private final kvsim.devicemodel.DeviceGroup deviceGroup;
  private final int tensorParallel;
  private final long kvMemoryBytes;
  private final SchedulerConfig scheduler;
  private final int blockTokens;
  private final List<String> systems;
  private final Map<String, Map<String, String>> allocatorOptions;
  private final boolean check;
  private final long swapSpaceBytes;
  private final long seed;
  private final String plan;
  private final Calibration calibration;
  private final String costModel;
  private final Map<String, Object> echo;
  private final Settings.Value sizing;
  /** The recorded workload's mean rate once measured, shared by the specs of one workload. */
  private final java.util.concurrent.atomic.AtomicReference<Double> recordedMeanRate;

  private ServingSpec(Request r, ServingSpec shared) {
    if (shared != null && !shared.workload.spec().equals(r.workload())) {
      throw new IllegalArgumentException("a spec shares the workload of another only for the same workload");
    }
    this.workload = shared != null ? shared.workload : WorkloadRegistry.resolveRequests(r.workload(), Map.of());
    this.recordedMeanRate = shared != null ? shared.recordedMeanRate : new java.util.concurrent.atomic.AtomicReference<>();
    Settings given = r.settings();
    Settings.Value modelValue = given.value(ServingSettings.MODEL);
    Settings.Value deviceValue = given.value(ServingSettings.DEVICE);
    try {
      this.wholeModel = modelValue == null ? ModelPreset.defaultModel() : ModelPreset.parse(modelValue.text());
    } catch (IllegalArgumentException e) {
      throw modelValue.error(e.getMessage());
    }
    try {
      this.deviceGroup = deviceValue == null ? new kvsim.devicemodel.DeviceGroup(DeviceSpec.DEFAULT_NAME, DeviceSpec.defaultDevice(), 1)
          : kvsim.devicemodel.DeviceGroup.parse(deviceValue.text());
    } catch (IllegalArgumentException e) {
      throw deviceValue.error(e.getMessage());
    }
    this.device = deviceGroup.gpu();
    this.tensorParallel = tensorParallel(given, deviceGroup, deviceValue);
    String splitRefusal = wholeModel.tensorParallelRefusal(tensorParallel);
    if (splitRefusal != null) {
      Settings.Value tp = given.value(ServingSettings.TENSOR_PARALLEL);
      throw error(tp != null ? tp : deviceValue, splitRefusal);
    }
    this.model = wholeModel.perGpu(tensorParallel);
    this.systems = new ArrayList<>(r.systems().isEmpty() ? List.of("vllm") : r.systems());
    for (String s : systems) {
      ServingSystems.get(s);
    }
    int maxModelLen = given.get(ServingSettings.MAX_MODEL_LEN, model.maxModelLen());
    int maxNumSeqs = given.get(ServingSettings.MAX_NUM_SEQS, SchedulerConfig.DEFAULT_MAX_NUM_SEQS);
    int budget = given.get(ServingSettings.MAX_NUM_BATCHED_TOKENS, SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS);
    this.blockTokens = given.get(ServingSettings.BLOCK_TOKENS, DEFAULT_BLOCK_TOKENS);
    double watermark = given.get(ServingSettings.WATERMARK, SchedulerConfig.DEFAULT_WATERMARK);
    try {
      this.scheduler = new SchedulerConfig(budget, maxNumSeqs, maxModelLen, true, 0, watermark,
          Boolean.parseBoolean(given.get(ServingSettings.SCHEDULER_RESERVE_FULL_ISL, String.valueOf(SchedulerConfig.DEFAULT_RESERVE_FULL_ISL))),
          Boolean.parseBoolean(given.get(ServingSettings.ASYNC_SCHEDULING, String.valueOf(SchedulerConfig.DEFAULT_ASYNC_SCHEDULING))));
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    this.allocatorOptions = r.allocatorOptions();
    String planName = given.get(ServingSettings.PLAN, null);
    Settings.Value kv = given.value(ServingSettings.KV_MEMORY);
    Settings.Value util = given.value(ServingSettings.GPU_MEMORY_UTILIZATION);
    if (kv != null && util != null) {
      throw util.error("give either it or " + kv.origin() + " (the KV memory), not both");
    }
    // What sizes the KV memory, where given: a problem of its size is reported there.
    Settings.Value sizing = kv != null ? kv : util;
    if (kv != null) {
      this.kvMemoryBytes = (Long) kv.value();
      if (kvMemoryBytes <= 0) {
        throw kv.error(kv.text() + " is not within the device's " + Bytes.format(device.capacityBytes()));
      }
      requireFits(kv, kvMemoryBytes, (long) budget * ServingSystems.activationBytesPerToken(model), planName);
    } else {
      double share = given.get(ServingSettings.GPU_MEMORY_UTILIZATION, DEFAULT_GPU_MEMORY_UTILIZATION);
      long activations = (long) budget * ServingSystems.activationBytesPerToken(model);
      long usable = (long) (device.capacityBytes() * share);
      this.kvMemoryBytes = usable - model.weightBytes() - activations;
      if (kvMemoryBytes <= 0) {
        throw error(sizing, "the weights of " + model.name() + perGpu() + " (" + Bytes.format(model.weightBytes()) + ") and its activations ("
            + Bytes.format(activations) + ") leave no KV memory in " + share + " of " + device.name() + "'s " + Bytes.format(device.capacityBytes()));
      }
    }
    long blockBytes = model.kvBytesPerToken() * blockTokens;
    long slots = ServingSystems.numBlocks(kvMemoryBytes, model.kvBytesPerToken(), blockTokens) * blockTokens - blockTokens;
    if (slots < maxModelLen) {
      throw error(sizing, "KV memory of " + Bytes.format(kvMemoryBytes) + " holds " + Math.max(0, slots) + " tokens (" + Bytes.format(blockBytes)
          + " per block of " + blockTokens + "), fewer than max_model_len " + maxModelLen + ": vLLM refuses to start so; give more --kv-memory or a lower --max-model-len");
    }
    this.check = r.check();
    this.swapSpaceBytes = given.get(ServingSettings.SWAP_SPACE, ServingSystems.SWAP_SPACE_BYTES);
    this.seed = given.get(ServingSettings.BEAM_SEED, kvsim.serving.ServingEngine.DEFAULT_SEED);
    this.sizing = sizing;
    this.plan = planName;
    if (ServingSystems.PLAN_NAIVE.equals(planName)) {
      // ServingSystems.build refuses it too; refused here, it is reported where the plan was given.
      for (String s : systems) {
        String refusal = ServingSystems.naivePlanRefusal(s);
        if (refusal != null) {
          throw given.value(ServingSettings.PLAN).error("naive: " + refusal);
        }
      }
    }
    this.calibration = calibration(given.value(ServingSettings.CALIBRATION));
    Settings.Value costModelValue = given.value(ServingSettings.COST_MODEL);
    this.costModel = costModelValue == null ? null : costModelValue.text();
    try {
      // Checked here, so that a predictor that cannot time the run is refused before anything runs.
      forwardTime();
    } catch (InputException e) {
      throw costModelValue == null ? e : costModelValue.error(e.getMessage().replaceFirst("^cost-model [a-z-]+: ", ""));
    }
    checkAllocatorOptions();
    Map<String, Object> e = new LinkedHashMap<>();
    e.put("workload", workload.spec());
    // Ordered maps: Map.of's iteration order changes from one JVM to the next.
    Map<String, Object> modelEcho = new LinkedHashMap<>();
    modelEcho.put("name", model.name());
    modelEcho.put("kv_bytes_per_token", model.kvBytesPerToken());
    e.put("model", modelEcho);
    if (tensorParallel > 1) {
      // Echoed only under tensor parallelism, so that one GPU's result files stay as they were.
      modelEcho.put("kv_bytes_per_token_total", model.kvBytesPerToken() * tensorParallel);
      modelEcho.put("weight_bytes_per_gpu", model.weightBytes());
    }
    Map<String, Object> deviceEcho = new LinkedHashMap<>();
    deviceEcho.put("name", tensorParallel > 1 ? deviceGroup.name() : device.name());
    deviceEcho.put("capacity_bytes", device.capacityBytes());
    if (tensorParallel > 1) {
      deviceEcho.put("gpus", tensorParallel);
    }
    e.put("device", deviceEcho);
    if (tensorParallel > 1) {
      e.put("tensor_parallel", tensorParallel);
    }
    e.put("kv_memory_bytes", kvMemoryBytes);
    if (tensorParallel > 1) {
      e.put("kv_memory_total_bytes", kvMemoryBytes * tensorParallel);
    }
    e.put("check", check);
    // Echoed only when given, so that the result files of runs without them stay as they were.
    if (given.has(ServingSettings.SWAP_SPACE)) {
      e.put("swap_space_bytes", swapSpaceBytes);
    }
    if (given.has(ServingSettings.BEAM_SEED)) {
      e.put("beam_seed", seed);
    }
    if (plan != null) {
      e.put("plan", plan);
    }
    if (!calibration.isNone()) {
      e.put("calibration", calibration.echo());
    }
    this.echo = e;
  }

  private ServingSpec(ServingSpec o, WorkloadRegistry.RequestWorkload workload, List<String> systems) {
    this.workload = workload;
    this.model = o.model;
    this.wholeModel = o.wholeModel;
    this.device = o.device;
    this.deviceGroup = o.deviceGroup;
    this.tensorParallel = o.tensorParallel;
    this.kvMemoryBytes = o.kvMemoryBytes;
    this.scheduler = o.scheduler;
    this.blockTokens = o.blockTokens;
    this.systems = new ArrayList<>(systems);
    this.allocatorOptions = o.allocatorOptions;
    this.check = o.check;
    this.swapSpaceBytes = o.swapSpaceBytes;
    this.seed = o.seed;
    this.plan = o.plan;
    this.calibration = o.calibration;
    this.costModel = o.costModel;
    this.sizing = o.sizing;
    Map<String, Object> e = new LinkedHashMap<>(o.echo);
    e.put("workload", workload.spec());
    this.echo = e;
    this.recordedMeanRate = workload == o.workload ? o.recordedMeanRate : new java.util.concurrent.atomic.AtomicReference<>();
  }

  /**
   * Reads the calibration file of {@code given} (null: none), at the path its origin resolves; a
   * file that is missing is reported at that origin, a problem inside it at the file's own line.
   */
  private static Calibration calibration(Settings.Value given) {
    if (given == null) {
      return Calibration.NONE;
    }
    java.nio.file.Path file = given.origin().resolve(given.text());
    if (!java.nio.file.Files.isRegularFile(file)) {
      throw given.error(file + ": no such calibration file");
    }
    return CalibrationFile.read(file);
  }

  /** Returns this spec with only these systems. */
  public ServingSpec withSystems(List<String> systems) {
    return new ServingSpec(this, workload, systems);
  }

  /**
   * Returns this spec with its workload's arrival rate set to {@code ratePerSecond}. A workload
   * whose rate is an option ({@code requests:}, {@code lengths:}) gets that option; any other (an
   * importer such as {@code azure:}, {@code mooncake:}, {@code burstgpt:}, or a request trace file)
   * keeps its requests and has its arrival times scaled (Note [Rate of a recorded trace]).
   *
   * <p>Note [Rate of a recorded trace]: a recorded trace has no rate option; its mean rate is
   * measured once, by reading it through, as (n − 1) / (last arrival − first arrival), the inverse
   * of its mean gap between arrivals (the workload as given, its own speedup, window and spread
   * included). A probe at rate R then runs the same requests with every time divided by R / mean
   * (the importers' {@code speedup}, multiplied into any speedup given), so the gaps keep their
   * shape (bursts stay bursts) and only their scale changes. A trace of fewer than two requests,
   * or whose requests all arrive at one time, has no mean rate and cannot be scaled.
   */
  public ServingSpec withRate(double ratePerSecond) throws java.io.IOException {
    String g = workload.generator();
    if (hasRateOption()) {
      Map<String, String> params = new LinkedHashMap<>(workload.params());
      params.put("rate", Double.toString(ratePerSecond));
      String spec = workload.spec().replaceAll(",?rate=[^,]*", "") + (workload.spec().contains(":") ? "," : ":") + "rate=" + ratePerSecond;
      return new ServingSpec(this, new WorkloadRegistry.RequestWorkload(spec.replace(":,", ":"), g, params, workload.file()), systems);
    }
    double factor = ratePerSecond / recordedMeanRate();
    Map<String, String> params = new LinkedHashMap<>(workload.params());
    double speedup = Double.parseDouble(params.getOrDefault("speedup", "1")) * factor;
    params.put("speedup", Double.toString(speedup));
    String spec = workload.spec() + " at " + ratePerSecond + " req/s (speedup " + speedup + ")";
    return new ServingSpec(this, new WorkloadRegistry.RequestWorkload(spec, g, params, workload.file()), systems);
  }

  /** Returns whether the workload's arrival rate is one of its options ({@code requests:}, {@code lengths:}). */
  public boolean hasRateOption() {
    String g = workload.generator();
    return "requests".equals(g) || "lengths".equals(g);
  }

  /**
   * Returns the mean arrival rate of a recorded workload (Note [Rate of a recorded trace]),
   * measured on first use by reading it through once; throws InputException when it has none.
   */
  public double recordedMeanRate() throws java.io.IOException {
    synchronized (recordedMeanRate) {
      if (recordedMeanRate.get() == null) {
        recordedMeanRate.set(measureMeanRate(workload));
      }
      return recordedMeanRate.get();
    }
  }

  private static double measureMeanRate(WorkloadRegistry.RequestWorkload workload) throws java.io.IOException {
    long n = 0;
    long first = 0;
    long last = 0;
    try (kvsim.trace.RequestSource source = workload.open()) {
      kvsim.trace.Request r;
      while ((r = source.next()) != null) {
        if (n++ == 0) {
          first = r.arrivalNanos();
        }
        last = r.arrivalNanos();
      }
    }
    if (n < 2 || last == first) {
      throw new InputException(workload.spec() + ": " + n + " request" + (n == 1 ? "" : "s") + (n < 2 ? "" : " all at one time")
          + ": no mean arrival rate, so it cannot be run at other rates");
    }
    return (n - 1) * 1e9 / (last - first);
  }

  /**
   * Checks {@code ALLOCATOR.KEY} settings as {@code kvsim replay --set} does: the allocator must be
   * the one under test of a system run (its options apply to those systems only), and it must
   * accept them, which building each such system once shows before anything runs.
   */
  private void checkAllocatorOptions() {
    for (String allocator : allocatorOptions.keySet()) {
      List<String> users = systems.stream().filter(s -> allocator.equals(ServingSystems.allocatorOf(s))).toList();
      if (users.isEmpty()) {
        List<String> tested = systems.stream().map(ServingSystems::allocatorOf).filter(java.util.Objects::nonNull).distinct().toList();
        throw new InputException("--set " + allocator + ".…: allocator '" + allocator + "' is not under test in the systems run " + systems
            + (tested.isEmpty() ? " (the paged systems take block-size and watermark as serving options)" : " (allocators under test: " + tested + ")"));
      }
      try {
        ServingSystems.build(users.get(0), build(0));
      } catch (kvsim.core.OptionMap.OptionException e) {
        throw new InputException("--set " + allocator + "." + e.key() + ": " + e.getMessage());
      }
    }
  }

  /** Returns what a system of this spec is built from, for a source of {@code hashBlockTokens}. */
  ServingSystems.Build build(int hashBlockTokens) {
    return ServingSystems.Build.of(model, device, kvMemoryBytes, scheduler).blockTokens(blockTokens).hashBlockTokens(hashBlockTokens)
        .swapSpaceBytes(swapSpaceBytes).plan(plan).allocatorOptions(allocatorOptions).calibration(calibration).build();
  }

  /** Returns the calibration whose costs replace the defaults ({@link Calibration#NONE} for none). */
  public Calibration calibration() {
    return calibration;
  }

  /**
   * Returns the cost model of a forward pass: the predictor the cost-model setting and the
   * calibration choose for the model on the device (Note [Which predictor times a run] on {@link
   * kvsim.devicemodel.CostModels}).
   */
  public ForwardTimeModel forwardTime() {
    return kvsim.devicemodel.CostModels.choose(costModel, wholeModel, device, tensorParallel, calibration.cost(), calibration.source());
  }

  /**
   * Returns the tensor-parallel degree: the setting where given, else the GPU count of a multi-GPU
   * device preset, else 1; a setting that contradicts the preset is an error at the setting.
   */
  private static int tensorParallel(Settings given, kvsim.devicemodel.DeviceGroup group, Settings.Value deviceValue) {
    Settings.Value tp = given.value(ServingSettings.TENSOR_PARALLEL);
    if (tp == null) {
      return group.gpus();
    }
    int n = (Integer) tp.value();
    if (group.multi() && n != group.gpus()) {
      throw tp.error(n + " contradicts " + deviceValue.origin() + " " + group.name() + ", which is " + group.gpus()
          + " GPUs; give " + group.gpus() + " or a single-GPU device (" + group.gpu().name() + ")");
    }
    if (n > kvsim.devicemodel.DeviceGroup.MAX_GPUS) {
      throw tp.error(n + " GPUs: kvsim models one node of at most " + kvsim.devicemodel.DeviceGroup.MAX_GPUS
          + " GPUs (pipeline parallelism and several nodes are not modelled)");
    }
    return n;
  }

  /** Returns " per GPU (of N)" under tensor parallelism, for messages about the memory plan; empty otherwise. */
  private String perGpu() {
    return tensorParallel > 1 ? " per GPU (of " + tensorParallel + ")" : "";
  }

  /** Returns how a command's first line names the device: its name, and under tensor parallelism the GPUs ("4xa100-40 (tensor-parallel 4)"). */
  public String deviceText() {
    if (tensorParallel == 1) {
      return device.name();
    }
    return (deviceGroup.multi() ? deviceGroup.name() : tensorParallel + "x" + device.name()) + " (tensor-parallel " + tensorParallel + ")";
  }

  /** Returns the tensor-parallel degree: how many GPUs the model is split over (1: one GPU). */
  public int tensorParallel() {
    return tensorParallel;
  }

  /** Returns the whole model; {@link #model} is one GPU's share of it under tensor parallelism. */
  public ModelPreset wholeModel() {
    return wholeModel;
  }

  /**
   * Checks that a given KV size fits the device beside the model's weights and, for any system of
   * this spec whose plan keeps activations in a region of their own, {@code activationsBytes}
   * (Note [KV memory must fit] on {@link MemoryPlan#kvRoomBytes}); throws InputException with the
   * numbers otherwise.
   */
  private void requireFits(Settings.Value given, long kvBytes, long activationsBytes, String planName) {
    // The naive plan puts the activations into the KV region; hf-naive runs it unless told otherwise.
    boolean apart = systems.stream()
        .anyMatch(s -> !(planName == null ? ServingSystems.defaultPlan(s) : planName).equals(ServingSystems.PLAN_NAIVE));
    long activations = apart ? activationsBytes : 0;
    long room = MemoryPlan.kvRoomBytes(device, model.weightBytes(), activations);
    if (kvBytes <= room) {
      return;
    }
    String parts = model.name() + "'s weights" + perGpu() + " (" + Bytes.format(model.weightBytes()) + ")"
        + (apart ? " and activations (" + Bytes.format(activations) + ", " + scheduler.maxNumBatchedTokens() + " tokens)" : "");
    throw given.error(given.text() + " (" + Bytes.format(kvBytes) + ") of KV memory beside " + parts + " needs "
        + Bytes.format(kvBytes + model.weightBytes() + activations) + ", more than " + device.name() + "'s " + Bytes.format(device.capacityBytes())
        + (room > 0 ? "; at most " + Bytes.format(room) + " of KV memory fits" : "; the weights and activations alone do not fit: give a larger --device"));
  }

  /** Returns an error at {@code at}'s origin, or with no origin where the setting took its default. */
  private static InputException error(Settings.Value at, String problem) {
    return at == null ? new InputException(problem) : at.error(problem);
  }

  /**
   * Returns the given value that sized the KV memory ({@code kv-memory} or {@code
   * gpu-memory-utilization}), or null where it took its default: what a build that finds too
   * little KV memory names.
   *
   * <p>Note [Builds that find too little KV memory]: a system's build refuses a spec when its KV
   * memory gives too few blocks, or one sequence too few tokens, for the system (the contiguous
   * systems' one reservation, vAttention's mapped pages); the build's message says so with the
   * numbers. A sweep grid and a suite report that at the value that sized the KV memory, where it
   * gave one, and otherwise at the cell's workload; the message keeps the system's name.
   */
  public Settings.Value kvMemorySource() {
    return sizing;
  }

  /** Resolves a request; throws InputException naming the option for anything wrong. */
  public static ServingSpec resolve(Request r) {
    return new ServingSpec(r, null);
  }

  /**
   * Resolves a request for the same workload as {@code shared} (null: none), reusing its resolved
   * workload and measured rate instead of opening it again (the cells of a grid).
   */
  static ServingSpec resolve(Request r, ServingSpec shared) {
    return new ServingSpec(r, shared);
  }

  /**
   * Returns {@code workload} with {@code seed} as its generator's seed, as a grid sweep's {@code
   * seeds:} seed a cell ({@code requests:…} and {@code lengths:FILE,…} take {@code seed=N}); throws
   * InputException for a workload that fixes its own seed, and for a recorded trace (an importer of
   * a log, a request trace file), whose requests and times a seed cannot change (Note [The seed of
   * a serving run]).
   *
   * <p>Note [The seed of a serving run]: a user who runs {@code kvsim serving W --seed N} for several
   * N is measuring the spread of a result over workloads drawn from one distribution, as a sweep's
   * {@code seeds:} does; so {@code --seed} seeds the workload's generator (its lengths and Poisson
   * arrivals). The beam selection's seed, which moves only beam-search requests, is {@code
   * --beam-seed}. A recorded trace has nothing to draw: accepting {@code --seed} there would give N
   * identical runs that look like a variance measurement, so it is refused, and so is a seed given
   * twice (in the workload and as {@code --seed}), as a sweep refuses it.
   */
  public static String seededWorkload(String workload, long seed) {
    int colon = workload.indexOf(':');
    String head = colon < 0 ? workload : workload.substring(0, colon);
    boolean seeded = !java.nio.file.Files.exists(java.nio.file.Path.of(workload))
        && (WorkloadRegistry.requestGenerators().containsKey(head) || "lengths".equals(head));
    if (!seeded) {
      throw new InputException("--seed: has no effect on the recorded trace " + workload
          + ": its requests and times are as recorded (--seed seeds a requests: or lengths: workload; --beam-seed the beam selection)");
    }
    if (workload.matches(".*[:,]seed=.*")) {
      throw new InputException("--seed: the workload " + workload + " fixes its own seed; remove seed= from it or --seed");
    }
    return workload + (colon < 0 ? ":" : ",") + "seed=" + seed;
  }

  /** Returns the request workload. */
  public WorkloadRegistry.RequestWorkload workload() {
    return workload;
  }

  /** Returns the model: under tensor parallelism, one GPU's share of it (Note [A model split over GPUs] on ModelPreset). */
  public ModelPreset model() {
    return model;
  }

  /** Returns the device: one GPU of the node under tensor parallelism. */
  public DeviceSpec device() {
    return device;
  }

  /** Returns the KV memory, in bytes. */
  public long kvMemoryBytes() {
    return kvMemoryBytes;
  }

  /** Returns the scheduler's limits. */
  public SchedulerConfig scheduler() {
    return scheduler;
  }

  /** Returns the KV block size, in tokens. */
  public int blockTokens() {
    return blockTokens;
  }

  /** Returns the systems to run, in the order given. */
  public List<String> systems() {
    return List.copyOf(systems);
  }

  /** Returns the host memory for vLLM v0's swapped blocks, in bytes. */
  public long swapSpaceBytes() {
    return swapSpaceBytes;
  }

  /** Returns the memory plan asked for, or null for each system's default. */
  public String plan() {
    return plan;
  }

  /** Returns the run seed of the beam selection. */
  public long seed() {
    return seed;
  }

  /** Returns whether the invariant checkers run after every iteration. */
  public boolean check() {
    return check;
  }

  /** Returns the configuration echo for the result files (inputs only). */
  public Map<String, Object> configEcho() {
    return echo;
  }
}

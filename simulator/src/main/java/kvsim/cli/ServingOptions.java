package kvsim.cli;

import java.util.ArrayList;
import java.util.List;
import kvsim.config.Origin;
import kvsim.config.ServingSettings;
import kvsim.config.Setting;
import kvsim.config.Settings;
import kvsim.core.InputException;
import kvsim.run.ServingGrid;
import kvsim.run.ServingSpec;
import kvsim.serving.ServingSystems;
import picocli.CommandLine.Option;

/** The options of commands that run serving systems ({@code serving}, {@code capacity}): systems, model, device, KV memory, scheduler limits. */
final class ServingOptions {
  @Option(names = "--system", split = ",", paramLabel = "NAME", description = "Systems to run (default: vllm). Known: vllm (vLLM v1, paged KV "
      + "with prefix caching); vllm-v0 (vLLM v0: prefills first, watermark, no chunked prefill); "
      + "orca-max, orca-pow2, orca-oracle (the vLLM paper's Orca baselines: no preemption, one buddy block per request "
      + "reserving max_model_len tokens, the next power of two of its final length, or exactly its final length); hf-naive (one request at "
      + "a time, its KV grown by doubling and copying in PyTorch's caching allocator); vattention (vLLM v1 over vAttention's virtually contiguous "
      + "KV, 2 MiB pages mapped as a request grows).")
  List<String> systems = new ArrayList<>();

  @Option(names = "--model", paramLabel = "MODEL", description = "Model preset (see `kvsim list`). Default: llama-2-7b.")
  String model;

  @Option(names = "--device", paramLabel = "DEVICE", description = "Device preset, multi-GPU preset (4xa100-40) or size. Default: h100-80.")
  String device;

  @Option(names = "--tensor-parallel", paramLabel = "N", description = "GPUs of one node the model is split over by tensor parallelism"
      + " (1 to 8; default 1, or N for a multi-GPU device preset such as 4xa100-40).")
  String tensorParallel;

  @Option(names = "--kv-memory", paramLabel = "SIZE", description = "KV memory, e.g. 12GiB. Default: from --gpu-memory-utilization.")
  String kvMemory;

  @Option(names = "--gpu-memory-utilization", paramLabel = "F", description = "Share of the device for weights, activations and KV, as vLLM's option (default 0.9).")
  String gpuMemoryUtilization;

  @Option(names = "--max-model-len", paramLabel = "N", description = "Longest sequence in tokens. Default: the model's context length.")
  String maxModelLen;

  @Option(names = "--max-num-seqs", paramLabel = "N", description = "Most sequences running at once (default 256).")
  String maxNumSeqs;

  @Option(names = "--max-num-batched-tokens", paramLabel = "N", description = "Token budget of one iteration (default 2048).")
  String maxNumBatchedTokens;

  @Option(names = "--block-tokens", paramLabel = "TOKENS", description = "KV block size of the paged systems, in tokens (default 16).")
  String blockTokens;

  @Option(names = "--block-size", paramLabel = "TOKENS", description = "The old name of --block-tokens.")
  String blockSize;

  @Option(names = "--swap-space", paramLabel = "SIZE", description = "Host memory for vLLM v0's swapped blocks, as vLLM's swap_space (default 4GiB).")
  String swapSpace;

  @Option(names = "--seed", paramLabel = "N", description = "Seed of the workload generator: a requests: or lengths: workload runs with seed=N,"
      + " as a sweep's seeds: give it (default: the workload's own, 1). A recorded trace has no seed: --seed with one is an error.")
  String seed;

  @Option(names = "--seeds", paramLabel = "A..B", description = "Run the workload generator once per seed (A..B or a comma list) and report every"
      + " metric as its median over the seeds with a 95 %% order-statistic interval (README, \"Seeds and intervals\"). A recorded trace has no seed.")
  String seeds;

  @Option(names = "--beam-seed", paramLabel = "N", description = "Run seed of the beam selection of beam-search requests (default 42);"
      + " the workload's lengths and arrivals do not depend on it.")
  String beamSeed;

  @Option(names = "--plan", paramLabel = "PLAN", description = "Memory plan: two-pool (vLLM's: activations in a region of their own) or naive"
      + " (activations in the KV's allocator, as a plain PyTorch program; contiguous systems only). Default: naive for hf-naive, two-pool otherwise.")
  String plan;

  @Option(names = "--check", description = "Run the KV managers' invariant checkers after every iteration.")
  boolean check;

  @Option(names = "--watermark", paramLabel = "F", description = "vllm-v0's admission watermark, a share of the KV blocks (default 0.01).")
  String watermark;

  @Option(names = "--scheduler-reserve-full-isl", paramLabel = "true|false", description = "vLLM v1's full-prompt admission gate (vllm, vattention):"
      + " admit a waiting request only when its whole prompt fits the free KV memory (default true, as vLLM).")
  String schedulerReserveFullIsl;

  @Option(names = "--async-scheduling", paramLabel = "true|false", description = "vLLM v1's asynchronous scheduling (vllm, vattention):"
      + " plan each step while the last one runs, before its tokens are known (default true, as vLLM).")
  String asyncScheduling;

  @Option(names = "--calibration", paramLabel = "FILE", description = "A calibration file (results/calibration/<gpu>.json) whose measured costs"
      + " replace the defaults: forward-pass efficiencies, copy efficiencies, allocator and block-manager latencies.")
  String calibration;

  @Option(names = "--cost-model", paramLabel = "PREDICTOR", description = "Forward-time predictor: auto (default: a built-in profile of the model on the"
      + " device, else the roofline with efficiencies fitted on the device's profiles, else the plain roofline), profile, measured-roofline or roofline.")
  String costModel;

  @Option(names = "--set", paramLabel = "KEY=V1,V2,…", description = "A what-if grid (repeatable): run every combination of the values "
      + "with every --system. KEY is a serving setting (block-tokens, max-num-seqs, max-num-batched-tokens, kv-memory, gpu-memory-utilization, "
      + "max-model-len, watermark, swap-space, plan, scheduler-reserve-full-isl, async-scheduling, cost-model, tensor-parallel; or an alias, such as block-size) or ALLOCATOR.KEY of a contiguous system's allocator (buddy for orca-*, pytorch-caching for hf-naive), "
      + "e.g. --set block-tokens=8,16,32.")
  List<String> settings = new ArrayList<>();

  /**
   * Returns the settings these options give, each parsed by its table entry ({@link
   * ServingSettings}) with the option as its origin; a setting given under two names is refused.
   */
  Settings settings() {
    Settings s = Settings.none();
    s = give(s, ServingSettings.MODEL, "--model", model);
    s = give(s, ServingSettings.DEVICE, "--device", device);
    s = give(s, ServingSettings.TENSOR_PARALLEL, "--tensor-parallel", tensorParallel);
    s = give(s, ServingSettings.KV_MEMORY, "--kv-memory", kvMemory);
    s = give(s, ServingSettings.GPU_MEMORY_UTILIZATION, "--gpu-memory-utilization", gpuMemoryUtilization);
    s = give(s, ServingSettings.MAX_MODEL_LEN, "--max-model-len", maxModelLen);
    s = give(s, ServingSettings.MAX_NUM_SEQS, "--max-num-seqs", maxNumSeqs);
    s = give(s, ServingSettings.MAX_NUM_BATCHED_TOKENS, "--max-num-batched-tokens", maxNumBatchedTokens);
    s = give(s, ServingSettings.BLOCK_TOKENS, "--block-tokens", blockTokens);
    s = give(s, ServingSettings.BLOCK_TOKENS, "--block-size", blockSize);
    s = give(s, ServingSettings.SWAP_SPACE, "--swap-space", swapSpace);
    s = give(s, ServingSettings.SEED, "--seed", seed);
    s = give(s, ServingSettings.BEAM_SEED, "--beam-seed", beamSeed);
    s = give(s, ServingSettings.PLAN, "--plan", plan);
    s = give(s, ServingSettings.WATERMARK, "--watermark", watermark);
    s = give(s, ServingSettings.SCHEDULER_RESERVE_FULL_ISL, "--scheduler-reserve-full-isl", schedulerReserveFullIsl);
    s = give(s, ServingSettings.ASYNC_SCHEDULING, "--async-scheduling", asyncScheduling);
    s = give(s, ServingSettings.CALIBRATION, "--calibration", calibration);
    s = give(s, ServingSettings.COST_MODEL, "--cost-model", costModel);
    return s;
  }

  private static Settings give(Settings s, Setting setting, String option, String text) {
    return text == null ? s : s.and(setting, text, Origin.option(option));
  }

  /**
   * Returns the request these options and {@code workload} make: {@code workload} with {@code
   * --seed} as its generator's seed ({@link ServingSpec#seededWorkload}).
   */
  ServingSpec.Request request(String workload) {
    return request(workload, null);
  }

  /**
   * Returns the seeds of {@code --seeds} (null without it), checked: not with {@code --seed}, each
   * seed once, and only for a workload with a generator (a recorded trace has no seed).
   */
  long[] seeds(String workload) {
    if (seeds == null) {
      return null;
    }
    if (seed != null) {
      throw new InputException("--seeds " + seeds + ": give --seed or --seeds, not both");
    }
    long[] out = Runs.parseSeeds(seeds);
    java.util.Set<Long> seen = new java.util.HashSet<>();
    for (long s : out) {
      if (!seen.add(s)) {
        throw new InputException("--seeds " + seeds + ": the seed " + s + " is given twice");
      }
    }
    try {
      ServingSpec.seededWorkload(workload, out[0]);
    } catch (InputException e) {
      throw new InputException(e.getMessage().replaceFirst("^--seed: ", "--seeds: ").replace("remove seed= from it or --seed", "remove seed= from it or --seeds"), e);
    }
    return out;
  }

  /** Returns the request of one seed of {@code --seeds}: as {@link #request(String)}, with {@code seed=N} on the workload. */
  ServingSpec.Request request(String workload, Long seedOverride) {
    List<String> names = systems.isEmpty() ? List.of("vllm") : systems;
    Settings given = settings();
    for (Settings.Value v : given.values()) {
      refuseUnread(names, v);
    }
    Settings.Value seedValue = given.value(ServingSettings.SEED);
    String w = seedOverride != null ? ServingSpec.seededWorkload(workload, seedOverride)
        : seedValue == null ? workload : ServingSpec.seededWorkload(workload, (Long) seedValue.value());
    return new ServingSpec.Request(w, systems, given.without(ServingSettings.SEED), check, java.util.Map.of());
  }

  /**
   * Writes a warning to {@code err} when the calibration of {@code spec} was measured on another
   * device than the run's (Note [A calibration from another device] on {@code alloc.Calibration}).
   */
  static void warnAboutCalibration(ServingSpec spec, java.io.PrintWriter err) {
    String warning = spec.calibration().deviceWarning(spec.device());
    if (warning != null) {
      err.println("kvsim: warning: " + warning);
      err.flush();
    }
  }

  /**
   * Refuses an option given for a system that would ignore it, as {@code --set} does (Note
   * [Settings each system reads] on {@code serving.ServingSystems}): a silent no-op reads as a
   * result.
   */
  private static void refuseUnread(List<String> systems, Settings.Value value) {
    String key = value.setting().readsKey();
    if (key.isEmpty()) {
      return;
    }
    for (String s : systems) {
      String why = ServingSystems.notRead(s, key); // an unknown system is refused here too
      if (why != null) {
        throw new InputException(value.origin() + " " + value.text() + ": " + why + "; leave it out for " + s + ", or run only systems that read it");
      }
    }
  }

  /** Returns the grid's axes, parsed from {@code --set}. */
  List<ServingGrid.Axis> axes() {
    return ServingGrid.parse(settings);
  }

  /** Returns the cells these options and {@code workload} make: every {@code --set} combination with every system. */
  List<ServingGrid.Cell> cells(String workload) {
    return ServingGrid.cells(request(workload), axes());
  }
}

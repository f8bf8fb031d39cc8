package kvsim.config;

import static kvsim.config.Setting.Level.GRID_FIELD;
import static kvsim.config.Setting.Level.GRID_SET;
import static kvsim.config.Setting.Level.OPTION;
import static kvsim.config.Setting.Level.SET;
import static kvsim.config.Setting.Level.SUITE;
import static kvsim.config.Setting.Type.CHOICE;
import static kvsim.config.Setting.Type.COUNT;
import static kvsim.config.Setting.Type.SHARE;
import static kvsim.config.Setting.Type.SHARE_BELOW_ONE;
import static kvsim.config.Setting.Type.SIZE;
import static kvsim.config.Setting.Type.TEXT;
import static kvsim.config.Setting.Type.WHOLE;

import java.util.ArrayList;
import java.util.List;

/**
 * The settings of a serving run, each declared once (Note [One table of settings]): the options of
 * {@code kvsim serving} and {@code kvsim capacity}, the keys of their {@code --set}, of a sweep
 * grid's {@code set:} and of a suite's serving scenarios all look their settings up here, parse
 * them with {@link Setting#parse} and carry them as {@link Settings} with their origins. The
 * defaults are vLLM's (its {@code EngineArgs}), as {@code run.ServingSpec} applies them.
 *
 * <p>Note [One table of settings]: a setting is one line below. To add one, declare it here with
 * the levels that accept it, read it in {@code run.ServingSpec} ({@code settings.value(S)}), give
 * the serving and capacity commands its option in {@code cli.ServingOptions} (a field and a line of
 * its {@code settings()}), and add its row to README's table of settings; {@code
 * ServingSettingsTest} checks that the option, the table and README agree. Old spellings of a
 * setting stay as aliases, so files written with them keep running and keep their echoes (a grid
 * axis and a cell are echoed under the name they were given).
 */
public final class ServingSettings {
  private static final List<Setting> ALL = new ArrayList<>();

  /** The model preset. */
  public static final Setting MODEL =
      add(Setting.of("model", TEXT, "", "llama-2-7b", "Model preset (see `kvsim list`)", OPTION, GRID_FIELD, SUITE).readsKey("").echo("config.model"));
  /** The device preset or size. */
  public static final Setting DEVICE =
      add(Setting.of("device", TEXT, "", "h100-80", "Device preset or size", OPTION, GRID_FIELD, SUITE).readsKey("").echo("config.device"));
  /** The KV memory, given. */
  public static final Setting KV_MEMORY = add(Setting.of("kv-memory", SIZE, "bytes", "from gpu-memory-utilization",
      "KV memory; replaces gpu-memory-utilization", OPTION, SET, GRID_SET, SUITE).echo("config.kv_memory_bytes"));
  /** The share of the device vLLM may use, from which the KV memory is derived. */
  public static final Setting GPU_MEMORY_UTILIZATION = add(Setting.of("gpu-memory-utilization", SHARE, "share of the device", "0.9",
      "Share of the device for weights, activations and KV, as vLLM's option", OPTION, SET, GRID_SET, SUITE).echo("config.kv_memory_bytes"));
  /** The longest sequence. */
  public static final Setting MAX_MODEL_LEN = add(Setting.of("max-model-len", COUNT, "tokens", "the model's context length",
      "Longest sequence", OPTION, SET, GRID_SET, SUITE).echo("systems[].parts.max_model_len"));
  /** The running-sequence limit. */
  public static final Setting MAX_NUM_SEQS = add(Setting.of("max-num-seqs", COUNT, "sequences", "256",
      "Most sequences running at once", OPTION, SET, GRID_SET, SUITE).echo("systems[].parts.max_num_seqs"));
  /** The token budget of one iteration. */
  public static final Setting MAX_NUM_BATCHED_TOKENS = add(Setting.of("max-num-batched-tokens", COUNT, "tokens", "2048",
      "Token budget of one iteration", OPTION, SET, GRID_SET, SUITE).echo("systems[].parts.max_num_batched_tokens"));
  /** The KV block size of the paged systems, in tokens (not slab's byte-sized block-size allocator option). */
  public static final Setting BLOCK_TOKENS = add(Setting.of("block-tokens", COUNT, "tokens", "16",
      "KV block size of the paged systems, in tokens (the allocator option slab.block-size is a different setting, in bytes)",
      OPTION, SET, GRID_SET, SUITE).aliases("block-size", "block_size", "block_tokens", "page-size").readsKey("block-size")
      .echo("systems[].parts.block_tokens"));
  /** vLLM v0's admission watermark. */
  public static final Setting WATERMARK = add(Setting.of("watermark", SHARE_BELOW_ONE, "share of the KV blocks", "0.01",
      "vllm-v0's admission watermark", OPTION, SET, GRID_SET, SUITE).echo("systems[].parts.watermark"));
  /** Host memory for vLLM v0's swapped blocks. */
  public static final Setting SWAP_SPACE = add(Setting.of("swap-space", SIZE, "bytes", "4GiB",
      "Host memory for vllm-v0's swapped blocks, as vLLM's swap_space", OPTION, SET, GRID_SET, SUITE).echo("config.swap_space_bytes"));
  /** vLLM v1's full-prompt admission gate ({@code scheduler_reserve_full_isl}). */
  public static final Setting SCHEDULER_RESERVE_FULL_ISL = add(Setting.of("scheduler-reserve-full-isl", CHOICE, "", "true",
      "vllm and vattention (vLLM v1's scheduler): admit a waiting request only when its whole prompt fits the free KV memory, as vLLM's scheduler_reserve_full_isl",
      OPTION, SET, GRID_SET, SUITE).choices("true", "false").echo("systems[].parts.scheduler_reserve_full_isl"));
  /** vLLM v1's asynchronous scheduling ({@code async_scheduling}). */
  public static final Setting ASYNC_SCHEDULING = add(Setting.of("async-scheduling", CHOICE, "", "true",
      "vllm and vattention (vLLM v1's scheduler): plan each step while the last one runs, before its tokens are known, as vLLM's async_scheduling",
      OPTION, SET, GRID_SET, SUITE).choices("true", "false").echo("systems[].parts.async_scheduling"));
  /** The memory plan. */
  public static final Setting PLAN = add(Setting.of("plan", CHOICE, "", "naive for hf-naive, two-pool otherwise",
      "Memory plan: two-pool (activations in a region of their own) or naive (activations in the KV's allocator; contiguous systems only)",
      OPTION, SET, GRID_SET, SUITE).choices("two-pool", "naive").echo("config.plan"));
  /** The workload generator's seed. */
  public static final Setting SEED = add(Setting.of("seed", WHOLE, "", "the workload's own (1)",
      "Seed of a requests: or lengths: workload's generator (a sweep grid's seeds: field; a suite writes it in the workload)", OPTION).readsKey("")
      .echo("config.workload"));
  /** The beam selection's seed. */
  public static final Setting BEAM_SEED = add(Setting.of("beam-seed", WHOLE, "", "42",
      "Run seed of the beam selection of beam-search requests", OPTION).readsKey("").echo("config.beam_seed"));

  /** The calibration file whose measured costs replace the defaults. */
  public static final Setting CALIBRATION = add(Setting.of("calibration", TEXT, "file", "none",
      "Calibration file (kvsim-calibration, version 1, 2 or 3) whose measured costs replace the defaults; relative to the grid or suite that names it",
      OPTION, GRID_FIELD, SUITE).readsKey("").echo("config.calibration"));

  /** Which forward-time predictor times the run (Note [Which predictor times a run] on devicemodel.CostModels). */
  public static final Setting COST_MODEL = add(Setting.of("cost-model", CHOICE, "", "auto",
      "Forward-time predictor: auto (a built-in profile of the model on the device, else the roofline fitted on the device's profiles, else the roofline), profile, measured-roofline or roofline",
      OPTION, SET, GRID_SET, SUITE).choices("auto", "roofline", "measured-roofline", "profile").readsKey("").echo("systems[].parts.cost_model"));

  /** The tensor-parallel degree: GPUs of one node the model is split over (README, "Several GPUs"). */
  public static final Setting TENSOR_PARALLEL = add(Setting.of("tensor-parallel", COUNT, "GPUs", "1 (N for a device NxDEVICE)",
      "GPUs of one node the model is split over by tensor parallelism (1 to 8); a multi-GPU device preset NxDEVICE implies N", OPTION, SET, GRID_SET, SUITE)
      .aliases("tensor-parallel-size").readsKey("").echo("config.tensor_parallel"));

  private ServingSettings() {}

  private static Setting add(Setting s) {
    for (Setting other : ALL) {
      for (String name : names(s)) {
        if (other.named(name)) {
          throw new IllegalStateException("the name " + name + " is both " + other.key() + "'s and " + s.key() + "'s");
        }
      }
    }
    ALL.add(s);
    return s;
  }

  private static List<String> names(Setting s) {
    List<String> names = new ArrayList<>(s.aliases());
    names.add(0, s.key());
    return names;
  }

  /** Returns every setting, in the table's order. */
  public static List<Setting> all() {
    return List.copyOf(ALL);
  }

  /** Returns the setting that {@code name} (its key or an alias) names, or null. */
  public static Setting find(String name) {
    for (Setting s : ALL) {
      if (s.named(name)) {
        return s;
      }
    }
    return null;
  }

  /** Returns the settings accepted at {@code level}. */
  public static List<Setting> at(Setting.Level level) {
    return ALL.stream().filter(s -> s.accepts(level)).toList();
  }

  /** Returns the keys of the settings accepted at {@code level}, for messages. */
  public static String keys(Setting.Level level) {
    return String.join(", ", at(level).stream().map(Setting::key).toList());
  }

  /**
   * Returns the setting {@code name} names where {@code level} accepts it; an InputException at
   * {@code origin} otherwise, naming the settings that level accepts.
   */
  public static Setting require(String name, Setting.Level level, Origin origin) {
    Setting s = find(name);
    if (s == null) {
      throw origin.error("'" + name + "' is not a serving setting (known: " + keys(level) + ")");
    }
    if (!s.accepts(level)) {
      throw origin.error(name + " cannot be given as " + article(level) + " (it is accepted as: "
          + String.join(", ", s.levels().stream().sorted().map(Setting.Level::label).toList()) + ")");
    }
    return s;
  }

  private static String article(Setting.Level level) {
    return switch (level) {
      case OPTION -> "an option";
      case SET -> "a --set axis";
      case GRID_SET -> "a key of a grid's set:";
      case GRID_FIELD -> "a grid field";
      case SUITE -> "a field of a suite's serving scenario";
    };
  }

  /**
   * Returns the setting that a value of {@code s} replaces where both are given at different
   * levels (a grid's {@code kv-memory} replaces the command line's {@code gpu-memory-utilization}
   * and the other way round), or null.
   */
  public static Setting replaces(Setting s) {
    return s == KV_MEMORY ? GPU_MEMORY_UTILIZATION : s == GPU_MEMORY_UTILIZATION ? KV_MEMORY : null;
  }

  /** Returns whether {@code name} would name a setting; for callers that also take ALLOCATOR.KEY names. */
  public static boolean isSetting(String name) {
    return find(name) != null;
  }
}

package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.Calibration;
import kvsim.alloc.paged.BlockHasher;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.registry.AllocatorRegistry;

/**
 * The serving systems a user picks with one word, each a scheduler over a KV manager over an
 * allocator:
 *
 * <ul>
 *   <li>{@code vllm}: vLLM v1's scheduler over its block manager, prefix caching on (the default of
 *       vLLM since 0.8).
 *   <li>{@code orca-max}, {@code orca-pow2}, {@code orca-oracle}: the vLLM paper's Orca baselines,
 *       {@link OrcaScheduler} over a {@link ContiguousKvManager} on the {@code buddy} allocator
 *       (default options) with the reservation policy of the name.
 *   <li>{@code hf-naive}: a plain PyTorch program serving one request at a time ({@link
 *       OrcaScheduler} with {@code max_num_seqs} 1, whatever the run's limit) whose KV cache grows
 *       by copying ({@link ContiguousKvManager.Reservation#GROW}) in PyTorch's caching allocator
 *       (default options), its activations and temporaries in the same allocator (the naive plan,
 *       {@link ServingEngine#placeActivationsWithKv}).
 * </ul>
 *
 * <ul>
 *   <li>{@code vattention}: vLLM v1's scheduler over a {@link VAttentionKvManager} (the {@code
 *       vattention} allocator model, 2 MiB pages), no prefix caching.
 * </ul>
 *
 * <p>Memory plans ({@code --plan}): {@code two-pool} (vLLM's layout, the default of every system
 * but {@code hf-naive}) keeps activations out of the KV region; {@code naive} puts each iteration's
 * activations into the KV's allocator, for the contiguous systems only.
 * </ul>
 *
 *   <li>{@code vllm-v0}: vLLM v0's default scheduler ({@link VllmV0Scheduler}: watermark, prefills
 *       first, no chunked prefill, preemption by recompute) over its block manager in v0 mode (free
 *       deque, LIFO reuse, no null block), prefix caching off as in v0's default; the token budget
 *       is at least {@code max_model_len}, as v0 requires without chunked prefill; groups of several
 *       sequences (parallel sampling, beam search) fork and are preempted by swap to a host pool of
 *       {@code swap_space} (4 GiB).
 * </ul>
 */
public final class ServingSystems {
  /**
   * One system.
   *
   * @param name the word a user gives
   * @param description one line for help and listings
   */
  public record System(String name, String description) {}

  /**
   * What a system is built from.
   *
   * @param kvMemoryBytes the KV region's size
   * @param kvBytesPerToken the model's KV bytes per token
   * @param blockTokens tokens per KV block (paged systems)
   * @param scheduler the scheduler's limits
   * @param hashBlockTokens tokens per prefix hash of the request source (0 for none)
   * @param model the model (its KV bytes per token are {@code kvBytesPerToken})
   * @param device the device, for allocator models that need it and for copy times
   * @param swapSpaceBytes host memory for vLLM v0's swapped blocks
   * @param plan the memory plan, {@link #PLAN_NAIVE} or {@link #PLAN_TWO_POOL}, or null for the system's default
   * @param allocatorOptions options of the contiguous systems' allocators, by allocator name ({@code
   *     buddy} for the Orca systems, {@code pytorch-caching} for {@code hf-naive}); the allocator
   *     checks them
   * @param calibration the costs measured that replace the defaults: allocator and block-manager
   *     latencies, copy costs ({@link Calibration#NONE} for none)
   */
  public record Build(long kvMemoryBytes, long kvBytesPerToken, int blockTokens, SchedulerConfig scheduler, int hashBlockTokens,
      ModelPreset model, DeviceSpec device, long swapSpaceBytes, String plan, Map<String, Map<String, String>> allocatorOptions,
      Calibration calibration) {
    public Build {
      allocatorOptions = Map.copyOf(allocatorOptions);
      calibration = calibration == null ? Calibration.NONE : calibration;
      if (model.kvBytesPerToken() != kvBytesPerToken) {
        throw new IllegalArgumentException("KV bytes per token " + kvBytesPerToken + " are not " + model.name() + "'s " + model.kvBytesPerToken());
      }
      if (swapSpaceBytes < 0) {
        throw new InputException("--swap-space: must not be negative, got " + swapSpaceBytes);
      }
      if (plan != null && !plan.equals(PLAN_NAIVE) && !plan.equals(PLAN_TWO_POOL)) {
        throw new InputException("--plan: unknown plan '" + plan + "' (known: " + PLAN_TWO_POOL + ", " + PLAN_NAIVE + ")");
      }
    }

    /** A build without a calibration: every cost at its default. */
    public Build(long kvMemoryBytes, long kvBytesPerToken, int blockTokens, SchedulerConfig scheduler, int hashBlockTokens, ModelPreset model,
        DeviceSpec device, long swapSpaceBytes, String plan, Map<String, Map<String, String>> allocatorOptions) {
      this(kvMemoryBytes, kvBytesPerToken, blockTokens, scheduler, hashBlockTokens, model, device, swapSpaceBytes, plan, allocatorOptions, Calibration.NONE);
    }

    /** A build with vLLM's default swap space and each system's default plan. */
    public Build(long kvMemoryBytes, long kvBytesPerToken, int blockTokens, SchedulerConfig scheduler, int hashBlockTokens, ModelPreset model,
        DeviceSpec device, long swapSpaceBytes) {
      this(kvMemoryBytes, kvBytesPerToken, blockTokens, scheduler, hashBlockTokens, model, device, swapSpaceBytes, null, Map.of());
    }

    /** A build with vLLM's default swap space and every allocator at its default options. */
    public Build(long kvMemoryBytes, long kvBytesPerToken, int blockTokens, SchedulerConfig scheduler, int hashBlockTokens, ModelPreset model,
        DeviceSpec device) {
      this(kvMemoryBytes, kvBytesPerToken, blockTokens, scheduler, hashBlockTokens, model, device, SWAP_SPACE_BYTES, null, Map.of());
    }
  }

  /**
   * A built system: its scheduler and KV manager, and the parts to echo in results.
   *
   * @param scheduler the scheduler
   * @param kv the KV manager
   * @param parts scheduler, KV manager, allocator and their settings, by name
   * @param activationBytesPerToken under the naive plan, the activation bytes per scheduled token
   *     the engine allocates in the KV manager's allocator; 0 under the two-pool plan
   */
  public record Built(Scheduler scheduler, KvManager kv, Map<String, Object> parts, long activationBytesPerToken) {
    /** A system under the two-pool plan: no activations in the KV manager's allocator. */
    public Built(Scheduler scheduler, KvManager kv, Map<String, Object> parts) {
      this(scheduler, kv, parts, 0);
    }
  }

  /** vLLM's layout: KV in its own pool, activations in a region of their own (not allocated by the engine). */
  public static final String PLAN_TWO_POOL = "two-pool";
  /** A plain PyTorch program's: activations and temporaries in the KV's own allocator. */
  public static final String PLAN_NAIVE = "naive";

  /**
   * Returns the activation and temporary bytes of one scheduled token: its two MLP projections in
   * fp16 (MLP width × 2 × 2 B), the estimate vLLM's profiling run would find for the peak.
   */
  public static long activationBytesPerToken(ModelPreset model) {
    return (long) model.intermediateSize() * 2L * 2L;
  }

  private static final Map<String, System> SYSTEMS = new LinkedHashMap<>();

  /** The allocator of the Orca baselines, as the vLLM paper says. */
  public static final String ORCA_ALLOCATOR = "buddy";
  /** vLLM's {@code swap_space} default: 4 GiB of host memory per GPU for v0's swapped blocks (vLLM @1fb9c1b). */
  public static final long SWAP_SPACE_BYTES = 4 * Bytes.GiB;
  /** The allocator of {@code hf-naive}. */
  public static final String NAIVE_ALLOCATOR = "pytorch-caching";

  static {
    SYSTEMS.put("vllm", new System("vllm", "vLLM v1: FCFS continuous batching with chunked prefill, preemption by recompute; paged KV blocks with prefix caching"));
    SYSTEMS.put("vllm-v0", new System("vllm-v0",
        "vLLM v0: prefills first with a 1 % watermark, no chunked prefill, preemption by recompute (swap for n > 1 and beams); paged KV blocks with fork and copy-on-write, no prefix caching"));
    SYSTEMS.put("orca-max", new System("orca-max",
        "Orca(Max): iteration-level FCFS, whole-prompt prefill, no preemption; a contiguous buddy block of max_model_len tokens per request"));
    SYSTEMS.put("orca-pow2", new System("orca-pow2",
        "Orca(Pow2): as orca-max, reserving the next power of two of the request's final length (at most 2x)"));
    SYSTEMS.put("orca-oracle", new System("orca-oracle",
        "Orca(Oracle): as orca-max, reserving exactly the request's final length (prompt + output)"));
    SYSTEMS.put("vattention", new System("vattention",
        "vLLM v1's scheduler over vAttention's KV cache: a virtually contiguous range per request, 2 MiB physical pages mapped as it grows"));
    SYSTEMS.put("hf-naive", new System("hf-naive",
        "a plain PyTorch program: one request at a time, its KV cache grown by doubling and copying in PyTorch's caching allocator"));
  }

  private ServingSystems() {}

  /** Returns the systems in a stable order. */
  public static List<System> systems() {
    return List.copyOf(SYSTEMS.values());
  }

  /** Returns the system of this name; throws InputException naming the known ones otherwise. */
  public static System get(String name) {
    System s = SYSTEMS.get(name);
    if (s == null) {
      throw new InputException("unknown system '" + name + "' (known: " + String.join(", ", SYSTEMS.keySet()) + ")");
    }
    return s;
  }

  /**
   * Returns the name of the registered allocator a system's KV manager is built on ({@code buddy},
   * {@code pytorch-caching}), or null for the paged systems, whose block manager takes its settings
   * as serving options (block size, watermark).
   */
  public static String allocatorOf(String name) {
    get(name);
    return switch (name) {
      case "orca-max", "orca-pow2", "orca-oracle" -> ORCA_ALLOCATOR;
      case "hf-naive" -> NAIVE_ALLOCATOR;
      default -> null;
    };
  }

  /**
   * Returns whether system {@code name} reads the serving setting {@code key} (an option without
   * its dashes, as {@code --set KEY=…}, a sweep grid's {@code set} and a suite's scenario fields
   * name it: {@code block-size}, {@code max-num-seqs}, {@code max-num-batched-tokens}, {@code
   * max-model-len}, {@code kv-memory}, {@code gpu-memory-utilization}, {@code watermark}, {@code
   * swap-space}, {@code plan}) or the allocator option {@code ALLOCATOR.KEY}; false for a key it
   * would ignore.
   *
   * <p>Note [Settings each system reads]: from the builds below. The KV memory ({@code kv-memory},
   * {@code gpu-memory-utilization}), {@code max-model-len}, {@code max-num-batched-tokens} (a
   * scheduler's token budget, and the activation peak of a derived KV memory) and {@code plan}
   * reach every system. {@code block-size} is the block of the paged systems only ({@code vllm},
   * {@code vllm-v0}); the contiguous and vAttention systems keep no blocks. {@code max-num-seqs} is
   * read by every scheduler but {@code hf-naive}'s, which serves one request at a time whatever the
   * limit. {@code watermark} and {@code swap-space} are vLLM v0's (v1 has neither). An allocator
   * option reaches only the systems built on that allocator ({@link #allocatorOf}).
   */
  public static boolean reads(String name, String key) {
    get(name);
    int dot = key.indexOf('.');
    if (dot > 0) {
      return key.substring(0, dot).equals(allocatorOf(name));
    }
    return switch (key) {
      case "kv-memory", "gpu-memory-utilization", "max-model-len", "max-num-batched-tokens", "plan" -> true;
      case "block-size" -> name.equals("vllm") || name.equals("vllm-v0");
      case "max-num-seqs" -> !name.equals("hf-naive");
      case "watermark", "swap-space" -> name.equals("vllm-v0");
      default -> false;
    };
  }

  /**
   * Returns why system {@code name} cannot take the setting {@code key}, "vllm does not read
   * watermark (vllm-v0 does)" (Note [Settings each system reads]), or null when it reads it.
   */
  public static String notRead(String name, String key) {
    if (reads(name, key)) {
      return null;
    }
    List<String> readers = SYSTEMS.keySet().stream().filter(s -> reads(s, key)).toList();
    return name + " does not read " + key + (readers.isEmpty() ? "" : " (" + String.join(", ", readers) + (readers.size() == 1 ? " does" : " do") + ")");
  }

  /** Returns the number of KV blocks ({@code num_gpu_blocks}, the null block included) a region holds. */
  public static long numBlocks(long kvMemoryBytes, long kvBytesPerToken, int blockTokens) {
    return kvMemoryBytes / (kvBytesPerToken * blockTokens);
  }

  /** Builds a fresh instance of a system; throws InputException when the KV memory cannot serve it. */
  public static Built build(String name, Build b) {
    get(name);
    boolean contiguous = name.startsWith("orca") || name.equals("hf-naive");
    if (PLAN_NAIVE.equals(b.plan()) && !contiguous) {
      throw new InputException("--plan naive: " + name + " keeps its KV in a block pool allocated at start-up; only the contiguous systems"
          + " (orca-*, hf-naive) can share their allocator with the activations");
    }
    return switch (name) {
      case "vllm" -> vllm(b);
      case "vllm-v0" -> vllmV0(b);
      case "orca-max" -> orca(name, b, ContiguousKvManager.Reservation.MAX);
      case "orca-pow2" -> orca(name, b, ContiguousKvManager.Reservation.POW2);
      case "orca-oracle" -> orca(name, b, ContiguousKvManager.Reservation.ORACLE);
      case "hf-naive" -> naive(b);
      case "vattention" -> vattention(b);
      default -> throw new IllegalStateException("system " + name + " has no build");
    };
  }

  private static Built orca(String name, Build b, ContiguousKvManager.Reservation reservation) {
    return contiguous(name, b, b.scheduler(), ORCA_ALLOCATOR, reservation);
  }

  private static Built naive(Build b) {
    SchedulerConfig c = b.scheduler();
    SchedulerConfig one = new SchedulerConfig(c.maxNumBatchedTokens(), 1, c.maxModelLen(), c.enableChunkedPrefill(), c.longPrefillTokenThreshold(), c.watermark());
    return contiguous("hf-naive", b, one, NAIVE_ALLOCATOR, ContiguousKvManager.Reservation.GROW);
  }

  private static Built contiguous(String name, Build b, SchedulerConfig config, String allocator, ContiguousKvManager.Reservation reservation) {
    ContiguousKvManager kv = ContiguousKvManager.create(allocator, b.allocatorOptions().getOrDefault(allocator, Map.of()), b.kvMemoryBytes(), b.device(), b.model(), reservation, config.maxModelLen(),
        b.calibration());
    if (kv.capacityTokens() < config.maxModelLen()) {
      throw new InputException(name + ": " + allocator + " over KV memory of " + Bytes.format(b.kvMemoryBytes()) + " gives one sequence at most "
          + kv.capacityTokens() + " tokens" + (reservation == ContiguousKvManager.Reservation.GROW ? " while it grows (old and new buffer)" : "")
          + ", fewer than max_model_len " + config.maxModelLen() + "; give more --kv-memory or a lower --max-model-len");
    }
    boolean naive = b.plan() == null ? name.equals("hf-naive") : b.plan().equals(PLAN_NAIVE);
    Map<String, Object> parts = new LinkedHashMap<>();
    parts.put("scheduler", "orca");
    parts.put("kv_manager", "contiguous");
    parts.put("allocator", allocator);
    parts.put("allocator_options", kv.allocatorOptions());
    parts.put("reservation", reservation.label());
    parts.put("prefix_caching", false);
    parts.put("max_num_batched_tokens", config.maxNumBatchedTokens());
    parts.put("max_num_seqs", config.maxNumSeqs());
    parts.put("max_model_len", config.maxModelLen());
    parts.put("enable_chunked_prefill", false);
    parts.put("preemption", "none");
    if (naive) {
      parts.put("plan", PLAN_NAIVE);
    }
    return new Built(new OrcaScheduler(config, kv), kv, parts, naive ? activationBytesPerToken(b.model()) : 0);
  }

  private static long checkedBlocks(Build b) {
    long numBlocks = numBlocks(b.kvMemoryBytes(), b.kvBytesPerToken(), b.blockTokens());
    if (numBlocks < 2 || numBlocks > Integer.MAX_VALUE / 2) {
      throw new InputException("KV memory of " + b.kvMemoryBytes() + " B makes " + numBlocks + " blocks of " + b.blockTokens() + " tokens; need 2 to " + Integer.MAX_VALUE / 2);
    }
    return numBlocks;
  }

  private static Built vllmV0(Build b) {
    long numBlocks = checkedBlocks(b);
    SchedulerConfig c = b.scheduler();
    SchedulerConfig v0 = new SchedulerConfig(Math.max(c.maxNumBatchedTokens(), c.maxModelLen()), c.maxNumSeqs(), c.maxModelLen(), false, 0, c.watermark());
    long hostBlocks = b.swapSpaceBytes() / ((long) b.blockTokens() * b.kvBytesPerToken());
    if (hostBlocks > Integer.MAX_VALUE / 2 - numBlocks) {
      throw new InputException("--swap-space: " + Bytes.format(b.swapSpaceBytes()) + " makes too many host blocks");
    }
    BlockManagerConfig config = new BlockManagerConfig((int) numBlocks, b.blockTokens(), false, BlockManagerConfig.Mode.V0,
        v0.watermark(), BlockManagerConfig.FreeOrder.LIFO, (int) hostBlocks, v0.maxModelLen(), b.kvBytesPerToken());
    PagedKvManager kv = new PagedKvManager(AllocatorRegistry.blockManager(config), b.hashBlockTokens(), AllocatorRegistry.blockManagerLatency(b.calibration()),
        b.calibration().cost().copyCost(b.device()));
    Map<String, Object> parts = new LinkedHashMap<>();
    parts.put("scheduler", "vllm-v0");
    parts.put("kv_manager", "paged");
    parts.put("block_tokens", b.blockTokens());
    parts.put("num_gpu_blocks", numBlocks);
    parts.put("prefix_caching", false);
    parts.put("watermark", v0.watermark());
    parts.put("max_num_batched_tokens", v0.maxNumBatchedTokens());
    parts.put("max_num_seqs", v0.maxNumSeqs());
    parts.put("max_model_len", v0.maxModelLen());
    parts.put("enable_chunked_prefill", false);
    parts.put("preemption", "recompute");
    parts.put("preemption_multi_sequence", "swap");
    parts.put("swap_space_bytes", b.swapSpaceBytes());
    parts.put("num_cpu_blocks", hostBlocks);
    return new Built(new VllmV0Scheduler(v0, kv), kv, parts);
  }

  private static Built vattention(Build b) {
    VAttentionKvManager kv = VAttentionKvManager.create(Map.of(), b.kvMemoryBytes(), b.device(), b.model(), b.calibration());
    if (kv.capacityTokens() < b.scheduler().maxModelLen()) {
      throw new InputException("vattention: KV memory of " + Bytes.format(b.kvMemoryBytes()) + " maps one sequence at most " + kv.capacityTokens()
          + " tokens, fewer than max_model_len " + b.scheduler().maxModelLen() + "; give more --kv-memory or a lower --max-model-len");
    }
    Map<String, Object> parts = new LinkedHashMap<>();
    parts.put("scheduler", "vllm-v1");
    parts.put("kv_manager", "vattention");
    parts.put("allocator", VAttentionKvManager.ALLOCATOR);
    parts.put("allocator_options", kv.allocatorOptions());
    parts.put("step_tokens", kv.stepTokens());
    parts.put("prefix_caching", false);
    parts.put("max_num_batched_tokens", b.scheduler().maxNumBatchedTokens());
    parts.put("max_num_seqs", b.scheduler().maxNumSeqs());
    parts.put("max_model_len", b.scheduler().maxModelLen());
    parts.put("enable_chunked_prefill", b.scheduler().enableChunkedPrefill());
    return new Built(new VllmV1Scheduler(b.scheduler(), kv), kv, parts);
  }

  private static Built vllm(Build b) {
    long numBlocks = checkedBlocks(b);
    // A serving run prints no block hash, so it hashes with the faster function (BlockHasher's Note [Block hash]).
    BlockManagerConfig config = new BlockManagerConfig((int) numBlocks, b.blockTokens(), true, BlockManagerConfig.Mode.V1, 0,
        BlockManagerConfig.FreeOrder.FIFO, 0, b.scheduler().maxModelLen(), b.kvBytesPerToken(), BlockHasher.Algorithm.MURMUR3);
    PagedKvManager kv = new PagedKvManager(AllocatorRegistry.blockManager(config), b.hashBlockTokens(), AllocatorRegistry.blockManagerLatency(b.calibration()),
        b.calibration().cost().copyCost(b.device()));
    Map<String, Object> parts = new LinkedHashMap<>();
    parts.put("scheduler", "vllm-v1");
    parts.put("kv_manager", "paged");
    parts.put("block_tokens", b.blockTokens());
    parts.put("num_gpu_blocks", numBlocks);
    parts.put("prefix_caching", true);
    parts.put("max_num_batched_tokens", b.scheduler().maxNumBatchedTokens());
    parts.put("max_num_seqs", b.scheduler().maxNumSeqs());
    parts.put("max_model_len", b.scheduler().maxModelLen());
    parts.put("enable_chunked_prefill", b.scheduler().enableChunkedPrefill());
    return new Built(new VllmV1Scheduler(b.scheduler(), kv), kv, parts);
  }
}

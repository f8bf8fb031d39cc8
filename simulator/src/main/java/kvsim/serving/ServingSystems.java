package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.alloc.Calibration;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.registry.AllocatorRegistry;

/**
 * The registry of serving systems, as {@link AllocatorRegistry} is the allocators': each system a
 * user picks with one word is one registration ({@link #register}) of a scheduler kind ({@link
 * SchedulerFactory}) over a KV manager kind ({@link KvManagerFactory}), with its description and
 * its default memory plan. The settings a system reads, the allocator its options go to, whether
 * it can take the naive plan and the {@code parts} echoed in results all come from the two
 * factories, which describe themselves. Registered here:
 *
 * <ul>
 *   <li>{@code vllm}: vLLM v1's scheduler over its block manager, prefix caching on (the default of
 *       vLLM since 0.8).
 *   <li>{@code vllm-v0}: vLLM v0's default scheduler ({@link VllmV0Scheduler}: watermark, prefills
 *       first, no chunked prefill, preemption by recompute) over its block manager in v0 mode (free
 *       deque, LIFO reuse, no null block), prefix caching off as in v0's default; the token budget
 *       is at least {@code max_model_len}, as v0 requires without chunked prefill; groups of several
 *       sequences (parallel sampling, beam search) fork and are preempted by swap to a host pool of
 *       {@code swap_space} (4 GiB).
 *   <li>{@code orca-max}, {@code orca-pow2}, {@code orca-oracle}: the vLLM paper's Orca baselines,
 *       {@link OrcaScheduler} over a {@link ContiguousKvManager} on the {@code buddy} allocator
 *       (default options) with the reservation policy of the name.
 *   <li>{@code vattention}: vLLM v1's scheduler over a {@link VAttentionKvManager} (the {@code
 *       vattention} allocator model, 2 MiB pages), no prefix caching.
 *   <li>{@code hf-naive}: a plain PyTorch program serving one request at a time ({@link
 *       OrcaScheduler} with {@code max_num_seqs} 1, whatever the run's limit) whose KV cache grows
 *       by copying ({@link ContiguousKvManager.Reservation#GROW}) in PyTorch's caching allocator
 *       (default options), its activations and temporaries in the same allocator (the naive plan,
 *       {@link ServingEngine#placeActivationsWithKv}).
 * </ul>
 *
 * <p>Memory plans ({@code --plan}): {@code two-pool} (vLLM's layout, the default of every system
 * but {@code hf-naive}) keeps activations out of the KV region; {@code naive} puts each iteration's
 * activations into the KV's allocator, for the systems whose KV manager can hold them ({@link
 * KvManagerFactory#holdsActivations}: the contiguous ones).
 *
 * <p>Note [Parts order]: a built system's {@code parts} are the scheduler's and KV manager's names
 * and what each factory describes, in the fixed order of {@link #PARTS_ORDER} (the order results
 * have always had), then any part a factory adds that the order does not name, as it added them.
 */
public final class ServingSystems {
  /**
   * One registered system.
   *
   * @param name the word a user gives
   * @param description one line for help and listings
   * @param scheduler the scheduler kind
   * @param kvManager the KV manager kind
   * @param defaultPlan the memory plan when a run names none, {@link #PLAN_TWO_POOL} or {@link #PLAN_NAIVE}
   */
  public record System(String name, String description, SchedulerFactory scheduler, KvManagerFactory kvManager, String defaultPlan) {
    public System {
      if (!defaultPlan.equals(PLAN_TWO_POOL) && !defaultPlan.equals(PLAN_NAIVE)) {
        throw new IllegalArgumentException(name + ": unknown default plan " + defaultPlan);
      }
      if (defaultPlan.equals(PLAN_NAIVE) && !kvManager.holdsActivations()) {
        throw new IllegalArgumentException(name + ": the naive plan needs a KV manager that holds activations");
      }
    }

    /** A system under the two-pool plan by default. */
    public System(String name, String description, SchedulerFactory scheduler, KvManagerFactory kvManager) {
      this(name, description, scheduler, kvManager, PLAN_TWO_POOL);
    }
  }

  /**
   * What a system is built from, made by {@link #of} and its {@link Builder}: the model, device,
   * KV memory and scheduler limits, and the optional settings by name, each at its default unless
   * given (no positional constructor).
   */
  public static final class Build {
    private final long kvMemoryBytes;
    private final int blockTokens;
    private final SchedulerConfig scheduler;
    private final int hashBlockTokens;
    private final ModelPreset model;
    private final DeviceSpec device;
    private final long swapSpaceBytes;
    private final String plan;
    private final Map<String, Map<String, String>> allocatorOptions;
    private final Calibration calibration;

    private Build(Builder b) {
      if (b.swapSpaceBytes < 0) {
        throw new InputException("--swap-space: must not be negative, got " + b.swapSpaceBytes);
      }
      if (b.plan != null && !b.plan.equals(PLAN_NAIVE) && !b.plan.equals(PLAN_TWO_POOL)) {
        throw new InputException("--plan: unknown plan '" + b.plan + "' (known: " + PLAN_TWO_POOL + ", " + PLAN_NAIVE + ")");
      }
      this.kvMemoryBytes = b.kvMemoryBytes;
      this.blockTokens = b.blockTokens;
      this.scheduler = b.scheduler;
      this.hashBlockTokens = b.hashBlockTokens;
      this.model = b.model;
      this.device = b.device;
      this.swapSpaceBytes = b.swapSpaceBytes;
      this.plan = b.plan;
      this.allocatorOptions = Map.copyOf(b.allocatorOptions);
      this.calibration = b.calibration == null ? Calibration.NONE : b.calibration;
    }

    /**
     * Starts a build of a system serving {@code model} on {@code device} with KV memory {@code
     * kvMemoryBytes} and scheduler limits {@code scheduler}; the rest by name, each at its default
     * (block of 16 tokens, no prefix hashes, vLLM's swap space, each system's plan, default allocator
     * options, no calibration).
     */
    public static Builder of(ModelPreset model, DeviceSpec device, long kvMemoryBytes, SchedulerConfig scheduler) {
      return new Builder(model, device, kvMemoryBytes, scheduler);
    }

    /** Returns the KV region's size, in bytes. */
    public long kvMemoryBytes() {
      return kvMemoryBytes;
    }

    /** Returns the model's KV bytes per token. */
    public long kvBytesPerToken() {
      return model.kvBytesPerToken();
    }

    /** Returns the tokens per KV block (paged systems). */
    public int blockTokens() {
      return blockTokens;
    }

    /** Returns the scheduler's limits. */
    public SchedulerConfig scheduler() {
      return scheduler;
    }

    /** Returns the tokens per prefix hash of the request source (0 for none). */
    public int hashBlockTokens() {
      return hashBlockTokens;
    }

    /** Returns the model. */
    public ModelPreset model() {
      return model;
    }

    /** Returns the device, for allocator models that need it and for copy times. */
    public DeviceSpec device() {
      return device;
    }

    /** Returns the host memory for vLLM v0's swapped blocks, in bytes. */
    public long swapSpaceBytes() {
      return swapSpaceBytes;
    }

    /** Returns the memory plan, {@link #PLAN_NAIVE} or {@link #PLAN_TWO_POOL}, or null for the system's default. */
    public String plan() {
      return plan;
    }

    /**
     * Returns the options of the contiguous systems' allocators, by allocator name ({@code buddy} for
     * the Orca systems, {@code pytorch-caching} for {@code hf-naive}); the allocator checks them.
     */
    public Map<String, Map<String, String>> allocatorOptions() {
      return allocatorOptions;
    }

    /** Returns the measured costs that replace the defaults ({@link Calibration#NONE} for none). */
    public Calibration calibration() {
      return calibration;
    }
  }

  /** The optional settings of a {@link Build} by name ({@link Build#of}). */
  public static final class Builder {
    private final ModelPreset model;
    private final DeviceSpec device;
    private final long kvMemoryBytes;
    private final SchedulerConfig scheduler;
    private int blockTokens = 16;
    private int hashBlockTokens;
    private long swapSpaceBytes = SWAP_SPACE_BYTES;
    private String plan;
    private Map<String, Map<String, String>> allocatorOptions = Map.of();
    private Calibration calibration = Calibration.NONE;

    private Builder(ModelPreset model, DeviceSpec device, long kvMemoryBytes, SchedulerConfig scheduler) {
      this.model = model;
      this.device = device;
      this.kvMemoryBytes = kvMemoryBytes;
      this.scheduler = scheduler;
    }

    /** Tokens per KV block of the paged systems (16 by default). */
    public Builder blockTokens(int tokens) {
      this.blockTokens = tokens;
      return this;
    }

    /** Tokens per prefix hash of the request source (0, the default: none). */
    public Builder hashBlockTokens(int tokens) {
      this.hashBlockTokens = tokens;
      return this;
    }

    /** Host memory for vLLM v0's swapped blocks ({@link #SWAP_SPACE_BYTES} by default). */
    public Builder swapSpaceBytes(long bytes) {
      this.swapSpaceBytes = bytes;
      return this;
    }

    /** The memory plan, or null (the default) for each system's own. */
    public Builder plan(String name) {
      this.plan = name;
      return this;
    }

    /** Options of the contiguous systems' allocators, by allocator name (none by default). */
    public Builder allocatorOptions(Map<String, Map<String, String>> options) {
      this.allocatorOptions = options;
      return this;
    }

    /** The measured costs that replace the defaults ({@link Calibration#NONE}, the default: none). */
    public Builder calibration(Calibration calibration) {
      this.calibration = calibration;
      return this;
    }

    /** Returns the build; throws InputException for a negative swap space or an unknown plan. */
    public Build build() {
      return new Build(this);
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


  /** The allocator of the Orca baselines, as the vLLM paper says. */
  public static final String ORCA_ALLOCATOR = "buddy";
  /** vLLM's {@code swap_space} default: 4 GiB of host memory per GPU for v0's swapped blocks (vLLM @1fb9c1b). */
  public static final long SWAP_SPACE_BYTES = 4 * Bytes.GiB;
  /** The allocator of {@code hf-naive}. */
  public static final String NAIVE_ALLOCATOR = "pytorch-caching";

  /** The order of a built system's parts (Note [Parts order]). */
  static final List<String> PARTS_ORDER = List.of("scheduler", "models", "kv_manager", "allocator", "allocator_options", "block_tokens", "num_gpu_blocks",
      "step_tokens", "reservation", "prefix_caching", "watermark", "max_num_batched_tokens", "max_num_seqs", "max_model_len", "enable_chunked_prefill",
      "scheduler_reserve_full_isl", "async_scheduling", "preemption", "preemption_multi_sequence", "swap_space_bytes", "num_cpu_blocks", "plan");
  /** The serving settings every system reads (Note [Settings each system reads]). */
  private static final Set<String> READ_BY_ALL = Set.of("kv-memory", "gpu-memory-utilization", "max-model-len", "max-num-batched-tokens", "plan");

  private static final Map<String, System> SYSTEMS = new LinkedHashMap<>();

  static {
    register(new System("vllm", "vLLM v1: FCFS continuous batching with chunked prefill, preemption by recompute; paged KV blocks with prefix caching",
        VllmV1Scheduler.FACTORY, PagedKvManager.V1_FACTORY));
    register(new System("vllm-v0",
        "vLLM v0: prefills first with a 1 % watermark, no chunked prefill, preemption by recompute (swap for n > 1 and beams); paged KV blocks with fork and copy-on-write, no prefix caching",
        VllmV0Scheduler.FACTORY, PagedKvManager.V0_FACTORY));
    register(new System("orca-max",
        "Orca(Max): iteration-level FCFS, whole-prompt prefill, no preemption; a contiguous buddy block of max_model_len tokens per request",
        OrcaScheduler.FACTORY, ContiguousKvManager.factory(ORCA_ALLOCATOR, ContiguousKvManager.Reservation.MAX)));
    register(new System("orca-pow2",
        "Orca(Pow2): as orca-max, reserving the next power of two of the request's final length (at most 2x)",
        OrcaScheduler.FACTORY, ContiguousKvManager.factory(ORCA_ALLOCATOR, ContiguousKvManager.Reservation.POW2)));
    register(new System("orca-oracle",
        "Orca(Oracle): as orca-max, reserving exactly the request's final length (prompt + output)",
        OrcaScheduler.FACTORY, ContiguousKvManager.factory(ORCA_ALLOCATOR, ContiguousKvManager.Reservation.ORACLE)));
    register(new System("vattention",
        "vLLM v1's scheduler over vAttention's KV cache: a virtually contiguous range per request, 2 MiB physical pages mapped as it grows",
        VllmV1Scheduler.FACTORY, VAttentionKvManager.FACTORY));
    register(new System("hf-naive",
        "a plain PyTorch program: one request at a time, its KV cache grown by doubling and copying in PyTorch's caching allocator",
        OrcaScheduler.ONE_AT_A_TIME, ContiguousKvManager.factory(NAIVE_ALLOCATOR, ContiguousKvManager.Reservation.GROW), PLAN_NAIVE));
  }

  private ServingSystems() {}

  /**
   * Registers a system; every command, the regression suites and the system contract test find it
   * from then on. Adding a system is a scheduler or KV manager factory and one call here.
   *
   * @throws IllegalStateException when a system of that name is registered
   */
  public static synchronized void register(System system) {
    if (SYSTEMS.containsKey(system.name())) {
      throw new IllegalStateException("serving system registered twice: " + system.name());
    }
    SYSTEMS.put(system.name(), system);
  }

  /** Removes a system registered by {@link #register} (tests that register one of their own take it away again). */
  public static synchronized void unregister(String name) {
    if (SYSTEMS.remove(name) == null) {
      throw new IllegalStateException("no serving system " + name);
    }
  }

  /** Returns the systems in registration order. */
  public static synchronized List<System> systems() {
    return List.copyOf(SYSTEMS.values());
  }

  /** Returns the system of this name; throws InputException naming the known ones otherwise. */
  public static synchronized System get(String name) {
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
    return get(name).kvManager().allocator();
  }

  /** Returns the memory plan system {@code name} runs under when none is given. */
  public static String defaultPlan(String name) {
    return get(name).defaultPlan();
  }

  /**
   * Returns why system {@code name} cannot run the naive plan ("vllm keeps its KV in a block pool
   * …"), or null when its KV manager can hold the activations too ({@link
   * KvManagerFactory#holdsActivations}).
   */
  public static String naivePlanRefusal(String name) {
    if (get(name).kvManager().holdsActivations()) {
      return null;
    }
    return name + " keeps its KV in a block pool allocated at start-up; only the contiguous systems"
        + " (orca-*, hf-naive) can share their allocator with the activations";
  }

  /**
   * Returns whether system {@code name} reads the serving setting {@code key} (an option without
   * its dashes, as {@code --set KEY=…}, a sweep grid's {@code set} and a suite's scenario fields
   * name it: {@code block-size}, {@code max-num-seqs}, {@code max-num-batched-tokens}, {@code
   * max-model-len}, {@code kv-memory}, {@code gpu-memory-utilization}, {@code watermark}, {@code
   * swap-space}, {@code plan}) or the allocator option {@code ALLOCATOR.KEY}; false for a key it
   * would ignore.
   *
   * <p>Note [Settings each system reads]: from the factories a system is made of ({@link
   * SchedulerFactory#reads}, {@link KvManagerFactory#reads}) and those every system reads. The KV memory ({@code kv-memory},
   * {@code gpu-memory-utilization}), {@code max-model-len}, {@code max-num-batched-tokens} (a
   * scheduler's token budget, and the activation peak of a derived KV memory) and {@code plan}
   * reach every system. {@code block-size} is the block of the paged systems only ({@code vllm},
   * {@code vllm-v0}); the contiguous and vAttention systems keep no blocks. {@code max-num-seqs} is
   * read by every scheduler but {@code hf-naive}'s, which serves one request at a time whatever the
   * limit. {@code watermark} and {@code swap-space} are vLLM v0's (v1 has neither). An allocator
   * option reaches only the systems built on that allocator ({@link #allocatorOf}).
   */
  public static boolean reads(String name, String key) {
    System s = get(name);
    int dot = key.indexOf('.');
    if (dot > 0) {
      return key.substring(0, dot).equals(s.kvManager().allocator());
    }
    return READ_BY_ALL.contains(key) || s.scheduler().reads().contains(key) || s.kvManager().reads().contains(key);
  }

  /**
   * Returns why system {@code name} cannot take the setting {@code key}, "vllm does not read
   * watermark (vllm-v0 does)" (Note [Settings each system reads]), or null when it reads it.
   */
  public static String notRead(String name, String key) {
    if (reads(name, key)) {
      return null;
    }
    List<String> readers = systems().stream().map(System::name).filter(s -> reads(s, key)).toList();
    return name + " does not read " + key + (readers.isEmpty() ? "" : " (" + String.join(", ", readers) + (readers.size() == 1 ? " does" : " do") + ")");
  }

  /** Returns the number of KV blocks ({@code num_gpu_blocks}, the null block included) a region holds. */
  public static long numBlocks(long kvMemoryBytes, long kvBytesPerToken, int blockTokens) {
    return kvMemoryBytes / (kvBytesPerToken * blockTokens);
  }

  /**
   * Builds a fresh instance of a system: its KV manager from its settings, its scheduler over it,
   * and the parts both describe (Note [Parts order]); throws InputException when the KV memory
   * cannot serve it or the plan does not suit it.
   */
  public static Built build(String name, Build b) {
    System system = get(name);
    String refusal = PLAN_NAIVE.equals(b.plan()) ? naivePlanRefusal(name) : null;
    if (refusal != null) {
      throw new InputException("--plan naive: " + refusal);
    }
    SchedulerConfig config = system.scheduler().effective(b.scheduler());
    Map<String, Object> described = new LinkedHashMap<>();
    described.put("scheduler", system.scheduler().name());
    described.put("kv_manager", system.kvManager().name());
    KvManager kv = system.kvManager().create(name, b, config, described);
    Scheduler scheduler = system.scheduler().create(config, kv);
    system.scheduler().describe(config, described);
    boolean naive = (b.plan() == null ? system.defaultPlan() : b.plan()).equals(PLAN_NAIVE);
    if (naive) {
      described.put("plan", PLAN_NAIVE);
    }
    Map<String, Object> parts = new LinkedHashMap<>();
    for (String key : PARTS_ORDER) {
      if (described.containsKey(key)) {
        parts.put(key, described.get(key));
      }
    }
    parts.putAll(described);
    return new Built(scheduler, kv, parts, naive ? activationBytesPerToken(b.model()) : 0);
  }
}

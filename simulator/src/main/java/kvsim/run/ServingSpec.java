package kvsim.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
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
 */
public final class ServingSpec {
  /** vLLM's default share of the device it may use. */
  public static final double DEFAULT_GPU_MEMORY_UTILIZATION = 0.9;
  /** vLLM's default KV block size, in tokens. */
  public static final int DEFAULT_BLOCK_TOKENS = 16;

  /**
   * What a user asked for, as given; null or 0 where the user said nothing.
   *
   * @param workload a request generator spec or a request trace path
   * @param systems system names
   * @param model model preset
   * @param device device preset or size
   * @param kvMemory KV memory size text
   * @param gpuMemoryUtilization share of the device vLLM may use
   * @param maxModelLen longest sequence (default: the model's context length)
   * @param maxNumSeqs running-sequence limit
   * @param maxNumBatchedTokens token budget per iteration
   * @param blockTokens KV block size in tokens
   * @param check run the invariant checkers after every iteration
   */
  public record Request(
      String workload,
      List<String> systems,
      String model,
      String device,
      String kvMemory,
      Double gpuMemoryUtilization,
      Integer maxModelLen,
      Integer maxNumSeqs,
      Integer maxNumBatchedTokens,
      Integer blockTokens,
      boolean check) {}

  private final WorkloadRegistry.RequestWorkload workload;
  private final ModelPreset model;
  private final DeviceSpec device;
  private final long kvMemoryBytes;
  private final SchedulerConfig scheduler;
  private final int blockTokens;
  private final List<String> systems;
  private final boolean check;
  private final Map<String, Object> echo;

  private ServingSpec(Request r) {
    this.workload = WorkloadRegistry.resolveRequests(r.workload(), Map.of());
    try {
      this.model = r.model() == null ? ModelPreset.defaultModel() : ModelPreset.parse(r.model());
      this.device = r.device() == null ? DeviceSpec.defaultDevice() : DeviceSpec.parse(r.device());
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    this.systems = new ArrayList<>(r.systems() == null || r.systems().isEmpty() ? List.of("vllm") : r.systems());
    for (String s : systems) {
      ServingSystems.get(s);
    }
    int maxModelLen = r.maxModelLen() == null ? model.maxModelLen() : positive("--max-model-len", r.maxModelLen());
    int maxNumSeqs = r.maxNumSeqs() == null ? SchedulerConfig.DEFAULT_MAX_NUM_SEQS : positive("--max-num-seqs", r.maxNumSeqs());
    int budget = r.maxNumBatchedTokens() == null ? SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS : positive("--max-num-batched-tokens", r.maxNumBatchedTokens());
    this.blockTokens = r.blockTokens() == null ? DEFAULT_BLOCK_TOKENS : positive("--block-size", r.blockTokens());
    try {
      this.scheduler = new SchedulerConfig(budget, maxNumSeqs, maxModelLen, true, 0);
    } catch (IllegalArgumentException e) {
      throw new InputException(e.getMessage());
    }
    if (r.kvMemory() != null && r.gpuMemoryUtilization() != null) {
      throw new InputException("--kv-memory and --gpu-memory-utilization: give one of them");
    }
    if (r.kvMemory() != null) {
      try {
        this.kvMemoryBytes = Bytes.parse(r.kvMemory());
      } catch (IllegalArgumentException e) {
        throw new InputException("--kv-memory: " + e.getMessage());
      }
      if (kvMemoryBytes <= 0 || kvMemoryBytes > device.capacityBytes()) {
        throw new InputException("--kv-memory: " + r.kvMemory() + " is not within the device's " + Bytes.format(device.capacityBytes()));
      }
    } else {
      double util = r.gpuMemoryUtilization() == null ? DEFAULT_GPU_MEMORY_UTILIZATION : r.gpuMemoryUtilization();
      if (!(util > 0 && util <= 1)) {
        throw new InputException("--gpu-memory-utilization: must be in (0, 1], got " + util);
      }
      long activations = (long) budget * model.intermediateSize() * 2L * 2L;
      long usable = (long) (device.capacityBytes() * util);
      this.kvMemoryBytes = usable - model.weightBytes() - activations;
      if (kvMemoryBytes <= 0) {
        throw new InputException("the weights of " + model.name() + " (" + Bytes.format(model.weightBytes()) + ") and its activations ("
            + Bytes.format(activations) + ") leave no KV memory in " + util + " of " + device.name() + "'s " + Bytes.format(device.capacityBytes()));
      }
    }
    long blockBytes = model.kvBytesPerToken() * blockTokens;
    long slots = ServingSystems.numBlocks(kvMemoryBytes, model.kvBytesPerToken(), blockTokens) * blockTokens - blockTokens;
    if (slots < maxModelLen) {
      throw new InputException("KV memory of " + Bytes.format(kvMemoryBytes) + " holds " + Math.max(0, slots) + " tokens (" + Bytes.format(blockBytes)
          + " per block of " + blockTokens + "), fewer than max_model_len " + maxModelLen + ": vLLM refuses to start so; give more --kv-memory or a lower --max-model-len");
    }
    this.check = r.check();
    Map<String, Object> e = new LinkedHashMap<>();
    e.put("workload", workload.spec());
    // Ordered maps: Map.of iterates in an order that changes from one JVM to the next.
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", model.name());
    m.put("kv_bytes_per_token", model.kvBytesPerToken());
    e.put("model", m);
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("name", device.name());
    d.put("capacity_bytes", device.capacityBytes());
    e.put("device", d);
    e.put("kv_memory_bytes", kvMemoryBytes);
    e.put("check", check);
    this.echo = e;
  }

  private ServingSpec(ServingSpec o, WorkloadRegistry.RequestWorkload workload, List<String> systems) {
    this.workload = workload;
    this.model = o.model;
    this.device = o.device;
    this.kvMemoryBytes = o.kvMemoryBytes;
    this.scheduler = o.scheduler;
    this.blockTokens = o.blockTokens;
    this.systems = new ArrayList<>(systems);
    this.check = o.check;
    Map<String, Object> e = new LinkedHashMap<>(o.echo);
    e.put("workload", workload.spec());
    this.echo = e;
  }

  /** Returns this spec with only these systems. */
  public ServingSpec withSystems(List<String> systems) {
    return new ServingSpec(this, workload, systems);
  }

  /**
   * Returns this spec with its workload's arrival rate set to {@code ratePerSecond}; the workload
   * must be one whose rate is an option ({@code requests:}, {@code lengths:}).
   */
  public ServingSpec withRate(double ratePerSecond) {
    String g = workload.generator();
    if (!"requests".equals(g) && !"lengths".equals(g)) {
      throw new InputException(workload.spec() + ": only workloads with a rate option (requests:…, lengths:…) can be run at other rates");
    }
    Map<String, String> params = new LinkedHashMap<>(workload.params());
    params.put("rate", Double.toString(ratePerSecond));
    String spec = workload.spec().replaceAll(",?rate=[^,]*", "") + (workload.spec().contains(":") ? "," : ":") + "rate=" + ratePerSecond;
    return new ServingSpec(this, new WorkloadRegistry.RequestWorkload(spec.replace(":,", ":"), g, params, workload.file()), systems);
  }

  private static int positive(String option, int value) {
    if (value < 1) {
      throw new InputException(option + ": must be positive, got " + value);
    }
    return value;
  }

  /** Resolves a request; throws InputException naming the option for anything wrong. */
  public static ServingSpec resolve(Request r) {
    return new ServingSpec(r);
  }

  /** Returns the request workload. */
  public WorkloadRegistry.RequestWorkload workload() {
    return workload;
  }

  /** Returns the model. */
  public ModelPreset model() {
    return model;
  }

  /** Returns the device. */
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

  /** Returns whether the invariant checkers run after every iteration. */
  public boolean check() {
    return check;
  }

  /** Returns the configuration echo for the result files (inputs only). */
  public Map<String, Object> configEcho() {
    return echo;
  }
}

package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.core.InputException;
import kvsim.registry.AllocatorRegistry;

/**
 * The serving systems a user picks with one word, each a scheduler over a KV manager over an
 * allocator. Today: {@code vllm} (vLLM v1's scheduler over its block manager, prefix caching on,
 * the default of vLLM since 0.8). The Orca baselines of the vLLM paper and vLLM v0 are not built
 * yet.
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
   */
  public record Build(long kvMemoryBytes, long kvBytesPerToken, int blockTokens, SchedulerConfig scheduler, int hashBlockTokens) {}

  /**
   * A built system: its scheduler and KV manager, and the parts to echo in results.
   *
   * @param scheduler the scheduler
   * @param kv the KV manager
   * @param parts scheduler, KV manager, allocator and their settings, by name
   */
  public record Built(Scheduler scheduler, KvManager kv, Map<String, Object> parts) {}

  private static final Map<String, System> SYSTEMS = new LinkedHashMap<>();

  static {
    SYSTEMS.put("vllm", new System("vllm", "vLLM v1: FCFS continuous batching with chunked prefill, preemption by recompute; paged KV blocks with prefix caching"));
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

  /** Returns the number of KV blocks ({@code num_gpu_blocks}, the null block included) a region holds. */
  public static long numBlocks(long kvMemoryBytes, long kvBytesPerToken, int blockTokens) {
    return kvMemoryBytes / (kvBytesPerToken * blockTokens);
  }

  /** Builds a fresh instance of a system. */
  public static Built build(String name, Build b) {
    get(name);
    long numBlocks = numBlocks(b.kvMemoryBytes(), b.kvBytesPerToken(), b.blockTokens());
    if (numBlocks < 2 || numBlocks > Integer.MAX_VALUE / 2) {
      throw new InputException("KV memory of " + b.kvMemoryBytes() + " B makes " + numBlocks + " blocks of " + b.blockTokens() + " tokens; need 2 to " + Integer.MAX_VALUE / 2);
    }
    BlockManagerConfig config = new BlockManagerConfig((int) numBlocks, b.blockTokens(), true, BlockManagerConfig.Mode.V1, 0,
        BlockManagerConfig.FreeOrder.FIFO, 0, b.scheduler().maxModelLen(), b.kvBytesPerToken());
    PagedKvManager kv = new PagedKvManager(AllocatorRegistry.blockManager(config), b.hashBlockTokens(), AllocatorRegistry.blockManagerLatency());
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

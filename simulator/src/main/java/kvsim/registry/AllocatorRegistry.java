package kvsim.registry;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorFactory;
import kvsim.alloc.bestfit.BestFitAllocator;
import kvsim.alloc.buddy.BuddyAllocator;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.firstfit.FirstFitAllocator;
import kvsim.alloc.multislab.MultiSlabAllocator;
import kvsim.alloc.paged.PagedAllocator;
import kvsim.alloc.slab.SlabAllocator;
import kvsim.core.InputException;

/**
 * The one place that names concrete allocator classes. Adding a model is one {@code register} line
 * here; the contract test, the CLI's {@code list} and {@code compare} find it through this class.
 */
public final class AllocatorRegistry {

  /**
   * One registered model.
   *
   * @param name registry name used on the command line
   * @param description one line for {@code kvsim list}
   * @param factory builds a fresh instance
   */
  public record Entry(String name, String description, AllocatorFactory factory) {}

  private static final Map<String, Entry> ENTRIES = new LinkedHashMap<>();

  static {
    register("first-fit", "lowest-address free extent that fits, split low, coalesce, O(log n)", FirstFitAllocator::new);
    register(
        BestFitAllocator.NAME,
        "smallest free extent that fits (lowest address on ties), alignment "
            + exactSize(BestFitAllocator.DEFAULT_ALIGNMENT_BYTES) + ", split low, coalesce, O(log n)",
        BestFitAllocator::new);
    register(
        BuddyAllocator.NAME,
        "binary buddy: power-of-two blocks from min-block (default " + exactSize(BuddyAllocator.DEFAULT_MIN_BLOCK_BYTES)
            + "), smallest block that fits, merge buddies",
        BuddyAllocator::new);
    register("slab", "one block size (default 2 MiB), LIFO free stack, O(1)", SlabAllocator::new);
    register("multi-slab", "size classes with a share of the region each (2/32 MiB, 256 KiB, 256 MiB)", MultiSlabAllocator::new);
    register("paged", "vLLM KV block pool: pages of block-tokens (default 16) x KV bytes per token", PagedAllocator::new);
    register(CachingAllocator.NAME, "PyTorch CUDA caching allocator (options: torch-alloc-conf, tie-break)", CachingAllocator::new);
  }

  private AllocatorRegistry() {}

  /** Formats a size with the largest binary unit that divides it ({@code 2 MiB}, {@code 512 B}) for a description. */
  private static String exactSize(long bytes) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (i < units.length - 1 && bytes >= 1024 && bytes % 1024 == 0) {
      bytes /= 1024;
      i++;
    }
    return bytes + " " + units[i];
  }

  private static void register(String name, String description, AllocatorFactory factory) {
    if (ENTRIES.put(name, new Entry(name, description, factory)) != null) {
      throw new IllegalStateException("allocator registered twice: " + name);
    }
  }

  /** Returns every registered model in registration order. */
  public static List<Entry> entries() {
    return List.copyOf(ENTRIES.values());
  }

  /** Returns the registered names in registration order. */
  public static List<String> names() {
    return List.copyOf(ENTRIES.keySet());
  }

  /** Returns the entry of this name; throws InputException naming the known models otherwise. */
  public static Entry get(String name) {
    Entry e = ENTRIES.get(name);
    if (e == null) {
      throw new InputException("unknown allocator '" + name + "' (known: " + String.join(", ", ENTRIES.keySet()) + ")");
    }
    return e;
  }

  /** Builds a model and rejects options it did not read. */
  public static Allocator create(AllocatorContext context) {
    Allocator a = get(context.allocatorName()).factory().create(context);
    context.requireAllUsed();
    return a;
  }
}

package kvsim.registry;

import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorFactory;
import kvsim.alloc.Calibration;
import kvsim.alloc.Capability;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.bestfit.BestFitAllocator;
import kvsim.alloc.buddy.BuddyAllocator;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.caching.DeviceDriver;
import kvsim.alloc.caching.RecordedDriver;
import kvsim.alloc.caching.ReplayDriver;
import kvsim.alloc.caching.TieBreak;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.alloc.firstfit.FirstFitAllocator;
import kvsim.alloc.multislab.MultiSlabAllocator;
import kvsim.alloc.paged.BlockManager;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.alloc.paged.PagedAllocator;
import kvsim.alloc.slab.SlabAllocator;
import kvsim.alloc.stitching.StitchingAllocator;
import kvsim.alloc.vattention.VAttentionAllocator;
import kvsim.core.Bytes;
import kvsim.core.InputException;

/**
 * The one place that names concrete allocator classes. Adding a model is one {@code register} line
 * here; the contract test, the capability test, the CLI's {@code list} and {@code compare} find it
 * through this class.
 *
 * <p>Note [Defaults in descriptions]: a description that quotes an option's default reads it from
 * the model's {@code DEFAULT_*} constant, so each default is written once.
 */
public final class AllocatorRegistry {

  /**
   * One registered model.
   *
   * @param name registry name used on the command line
   * @param description one line for {@code kvsim list}
   * @param capabilities what shape of memory the model hands out ({@link Capability})
   * @param factory builds a fresh instance
   */
  public record Entry(String name, String description, Set<Capability> capabilities, AllocatorFactory factory) {
    public Entry {
      capabilities = Set.copyOf(capabilities);
    }

    /** Returns the capability labels in declaration order, comma-separated (e.g. {@code contiguous,virtual}). */
    public String capabilityLabels() {
      StringBuilder sb = new StringBuilder();
      for (Capability c : Capability.values()) {
        if (capabilities.contains(c)) {
          sb.append(sb.length() > 0 ? "," : "").append(c.label());
        }
      }
      return sb.toString();
    }
  }

  private static final Map<String, Entry> ENTRIES = new LinkedHashMap<>();

  static {
    register(
        "first-fit",
        "lowest-address free extent that fits, split low, coalesce, O(log n); option alignment (default "
            + Bytes.format(FirstFitAllocator.DEFAULT_ALIGNMENT_BYTES) + ")",
        EnumSet.of(Capability.CONTIGUOUS),
        FirstFitAllocator::new);
    register(
        BestFitAllocator.NAME,
        "smallest free extent that fits (lowest address on ties), split low, coalesce, O(log n); option alignment (default "
            + Bytes.format(BestFitAllocator.DEFAULT_ALIGNMENT_BYTES) + ")",
        EnumSet.of(Capability.CONTIGUOUS),
        BestFitAllocator::new);
    register(
        BuddyAllocator.NAME,
        "binary buddy: power-of-two blocks, smallest block that fits, buddies merged on free; option min-block (default "
            + Bytes.format(BuddyAllocator.DEFAULT_MIN_BLOCK_BYTES) + ")",
        EnumSet.of(Capability.CONTIGUOUS),
        BuddyAllocator::new);
    register(
        "slab",
        "one block size, LIFO free stack, O(1); option block-size (default " + Bytes.format(SlabAllocator.DEFAULT_BLOCK_BYTES) + ")",
        EnumSet.of(Capability.BLOCK),
        SlabAllocator::new);
    register(
        "multi-slab",
        "size classes, each with a share of the region; options classes (default " + MultiSlabAllocator.DEFAULT_CLASSES
            + "), split (default " + MultiSlabAllocator.DEFAULT_SPLIT + ": a request between classes takes one block of the larger)",
        EnumSet.of(Capability.BLOCK),
        MultiSlabAllocator::new);
    register(
        "paged",
        "vLLM KV block pool, pages of block-tokens x KV bytes per token; option block-tokens (default "
            + PagedAllocator.DEFAULT_BLOCK_TOKENS + ")",
        EnumSet.of(Capability.BLOCK),
        PagedAllocator::new);
    register(
        CachingAllocator.NAME,
        "PyTorch CUDA caching allocator; options torch-alloc-conf (default: PyTorch's), tie-break (default "
            + CachingAllocator.DEFAULT_TIE_BREAK.label() + ")",
        EnumSet.of(Capability.CONTIGUOUS),
        CachingAllocator::new);
    register(
        VAttentionAllocator.NAME,
        "vAttention: a contiguous virtual range per allocation, physical pages mapped from a LIFO pool; option page-size (default "
            + Bytes.format(VAttentionAllocator.DEFAULT_PAGE_BYTES) + ", 64 KiB to 2 MiB)",
        EnumSet.of(Capability.CONTIGUOUS, Capability.VIRTUAL),
        VAttentionAllocator::new);
    register(
        StitchingAllocator.NAME,
        "GMLake: caching over 2 MiB chunks, free blocks stitched into one virtual range when none fits alone; option max-stitched (default "
            + StitchingAllocator.DEFAULT_MAX_STITCHED + " cached stitched blocks)",
        EnumSet.of(Capability.CONTIGUOUS, Capability.VIRTUAL),
        StitchingAllocator::new);
  }

  private AllocatorRegistry() {}

  private static void register(String name, String description, Set<Capability> capabilities, AllocatorFactory factory) {
    if (capabilities.contains(Capability.CONTIGUOUS) == capabilities.contains(Capability.BLOCK)) {
      throw new IllegalStateException(name + " must declare exactly one of CONTIGUOUS and BLOCK, got " + capabilities);
    }
    if (capabilities.contains(Capability.VIRTUAL) && !capabilities.contains(Capability.CONTIGUOUS)) {
      throw new IllegalStateException(name + ": VIRTUAL implies CONTIGUOUS");
    }
    if (ENTRIES.put(name, new Entry(name, description, capabilities, factory)) != null) {
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

  /**
   * Returns a fresh PyTorch caching model on {@code driver}, with the model's default latencies;
   * {@code deviceTotalBytes} is the device size for the memory fraction and expandable reservations.
   */
  public static TorchCachingModel torchCaching(TorchAllocConf conf, TieBreak tieBreak, DeviceDriver driver, long deviceTotalBytes) {
    return new CachingAllocator(conf, tieBreak, driver, deviceTotalBytes);
  }

  /** Returns a fresh driver that hands out the addresses of a recording, for snapshot replay. */
  public static RecordedDriver recordedDriver() {
    return new ReplayDriver();
  }

  /**
   * Returns the default latency of the paged family's block operations (per call and per block),
   * for KV managers that drive a {@link KvBlockManager} directly.
   */
  public static LatencyModel blockManagerLatency() {
    return PagedAllocator.DEFAULT_LATENCY;
  }

  /** The name under which a calibration's latencies reach vLLM's block manager: the paged family's, whose block operations it times. */
  public static final String BLOCK_MANAGER_CALIBRATION_NAME = "paged";

  /**
   * Returns the latency of the paged family's block operations with the fields {@code calibration}
   * measured for {@code paged} in place of the defaults (the block manager's operations are the
   * {@code paged} model's, so one calibration entry times both).
   */
  public static LatencyModel blockManagerLatency(Calibration calibration) {
    return calibration.apply(BLOCK_MANAGER_CALIBRATION_NAME, blockManagerLatency());
  }

  /** Returns an empty vLLM block manager; throws IllegalArgumentException for settings it cannot run with. */
  public static KvBlockManager blockManager(BlockManagerConfig config) {
    return BlockManager.of(config);
  }
}

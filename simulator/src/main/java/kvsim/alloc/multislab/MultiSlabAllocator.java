package kvsim.alloc.multislab;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.support.FixedBlockPool;
import kvsim.core.Bytes;
import kvsim.devicemodel.Region;

/**
 * A slab allocator with several size classes, each owning a fixed share of the region: the
 * segregated-storage design of slab allocators (Bonwick 1994) with a default class split after the
 * slab-allocator literature for KV caches (README, "Allocator models").
 *
 * <ul>
 *   <li>Option {@code classes} lists {@code BLOCK:PERCENT} pairs, default {@value #DEFAULT_CLASSES}.
 *       Block sizes are distinct, percentages whole numbers from 1 to 100 summing to at most 100.
 *   <li>Class {@code k} gets {@code floor(floor(region × percent / 100) / block)} blocks. The
 *       classes lie in the order the option lists them, each starting where the previous one's
 *       last block ends, from the region's base (by default: 2 MiB, 32 MiB, 256 KiB, 256 MiB
 *       blocks). What is left over (the rounding of every class, and the share the percentages
 *       leave out) lies at the top of the region, reserved but never handed out.
 *   <li>Within a class, blocks come from a LIFO stack with the lowest address on top at the start,
 *       and a free pushes the blocks back in chain order, as in the {@code slab} model.
 *   <li>A request goes to the smallest class whose block holds it and that has a free block:
 *       when that class is full it falls back to the next larger class, and so on.
 *   <li>A splittable request larger than the largest block takes {@code ceil(size / largest
 *       block)} blocks of the largest class (not necessarily adjacent); an unsplittable one is
 *       {@code too_large}. No other request is split, unless option {@code split} is {@code true}
 *       (default {@value #DEFAULT_SPLIT}): Note [Splitting between classes].
 *   <li>An allocation holds whole blocks: {@code allocatedBytes} counts them, so the gap between
 *       request and block is internal fragmentation.
 *   <li>Any other refusal is {@code fragmentation} when the free blocks of all classes together
 *       hold at least the request, {@code no_memory} otherwise.
 *   <li>Freeing a handle that is not live is an error (double free).
 * </ul>
 *
 * <p>Note [Splitting between classes]: the multi-block variant of the slab-allocator article lets a
 * splittable request that falls between two classes take several blocks of the smaller class
 * instead of one block of the larger. kvsim reads "the smaller class" as the largest class whose
 * block is smaller than the request, the class the default rule above already splits over when
 * the request exceeds every block; {@code split=true} extends that rule to every gap between
 * classes. With it, a splittable request of {@code size} bytes whose smallest holding class does
 * not have exactly that block size first takes {@code ceil(size / block)} blocks of the largest
 * class with a smaller block, when that class has so many free; otherwise, or when a class's
 * block is exactly the request, it takes one block as the default rule does (smallest class that
 * holds it, then larger ones); a request of exactly a class's size falls back to splitting over
 * the class below when every class that holds it is full. So any request the default rule would
 * serve is still served, and the requests that succeed stay all those up to {@link
 * #largestFreeBytes()}: a refusal never follows from a smaller class running short while a larger
 * one would have served. Unsplittable requests, and every request under the default {@code
 * split=false}, follow the rules above unchanged; the option is echoed in a run's options only when
 * given, so that a default run's result files stay what they were before it existed.
 *
 * <p>Latency defaults: 20 ns per call plus 10 ns per size class looked at and per block popped or
 * pushed, the {@code slab} model's stack costs plus a short class search.
 *
 * <p>Extra metrics, per class labelled by its block size ({@code 2MiB}, {@code 256KiB}): {@code
 * class_<label>_blocks}, {@code _free_blocks}, {@code _live_allocations}, {@code
 * _requested_bytes}; and {@code fallback_allocations}, the requests served by a larger class than
 * the smallest one that holds them; with {@code split=true} also {@code split_allocations}, the
 * requests served by several blocks of the largest class smaller than them.
 */
public final class MultiSlabAllocator implements Allocator {
  /** Default latencies: 20 ns per call plus 10 ns per class probed or block taken (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(20, 10, 20, 10, 0, 0);

  /** The default classes: 2 MiB 70 %, 32 MiB 15 %, 256 KiB 10 %, 256 MiB 5 %. */
  public static final String DEFAULT_CLASSES = "2MiB:70,32MiB:15,256KiB:10,256MiB:5";

  /** By default a request between classes takes one block of the larger class (the article's policy). */
  public static final boolean DEFAULT_SPLIT = false;

  /**
   * One size class.
   *
   * @param blockBytes the class's block size
   * @param percent the share of the region it owns, 1 to 100
   */
  public record SizeClass(long blockBytes, int percent) {
    public SizeClass {
      if (blockBytes <= 0 || percent < 1 || percent > 100) {
        throw new IllegalArgumentException("bad size class " + blockBytes + " B at " + percent + " %");
      }
    }
  }

  private final Region region;
  private final FixedBlockPool[] pools; // address order
  private final String[] labels;
  private final int[] bySize; // class indices, smallest block first
  private final int largest;
  private final LatencyModel latency;
  private final AllocatorStats stats;
  private final long blockBytesTotal; // the blocks of every class together
  private final boolean split;

  private long fallbackAllocations;
  private long splitAllocations;

  /** Builds the model from its registry context (options {@code classes} and {@code split}). */
  public MultiSlabAllocator(AllocatorContext context) {
    this(context.region(), classesOption(context), splitOption(context), context.latency(DEFAULT_LATENCY));
  }

  /** Builds the model over {@code region} with these classes, in address order. */
  public MultiSlabAllocator(Region region, List<SizeClass> classes) {
    this(region, classes, DEFAULT_SPLIT, DEFAULT_LATENCY);
  }

  /** As {@link #MultiSlabAllocator(Region, List)}, with the latency model given (defaults or a calibration). */
  public MultiSlabAllocator(Region region, List<SizeClass> classes, LatencyModel latency) {
    this(region, classes, DEFAULT_SPLIT, latency);
  }

  /**
   * As {@link #MultiSlabAllocator(Region, List, LatencyModel)}, splitting a request between classes
   * over the smaller one where {@code split} (Note [Splitting between classes]).
   */
  public MultiSlabAllocator(Region region, List<SizeClass> classes, boolean split, LatencyModel latency) {
    validate(classes);
    this.region = region;
    this.latency = latency;
    this.split = split;
    int n = classes.size();
    this.pools = new FixedBlockPool[n];
    this.labels = new String[n];
    long base = region.baseBytes();
    for (int c = 0; c < n; c++) {
      SizeClass sc = classes.get(c);
      long shareBytes = percentOf(region.sizeBytes(), sc.percent());
      pools[c] = new FixedBlockPool(base, sc.blockBytes(), FixedBlockPool.blockCountFor(shareBytes, sc.blockBytes()));
      labels[c] = label(sc.blockBytes());
      base = pools[c].endBytes();
    }
    this.blockBytesTotal = base - region.baseBytes();
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    this.bySize =
        IntStream.range(0, n)
            .boxed()
            .sorted((a, b) -> Long.compare(pools[a].blockBytes(), pools[b].blockBytes()))
            .mapToInt(Integer::intValue)
            .toArray();
    this.largest = bySize[n - 1];
  }

  /**
   * Returns floor(bytes × percent / 100) for 0 ≤ percent ≤ 100 without forming the product, which
   * overflows for regions above {@code Long.MAX_VALUE / 100} (about 92 PB): with bytes = 100q + r,
   * the share is q × percent + floor(r × percent / 100), and neither term can exceed bytes.
   */
  static long percentOf(long bytes, int percent) {
    return bytes / 100 * percent + bytes % 100 * percent / 100;
  }

  /** Reads option {@code split}, recording it only when given (Note [Splitting between classes]). */
  private static boolean splitOption(AllocatorContext context) {
    return context.optional("split") != null && context.bool("split", DEFAULT_SPLIT);
  }

  /**
   * Reads option {@code classes}. Given classes must each get at least one block of their share of
   * the region under test, and no more than a pool counts; the default classes leave a class
   * empty on a small region rather than refuse it, as before.
   */
  private static List<SizeClass> classesOption(AllocatorContext context) {
    boolean given = context.optional("classes") != null;
    String text = context.string("classes", DEFAULT_CLASSES);
    List<SizeClass> classes;
    try {
      classes = parseClasses(text);
    } catch (IllegalArgumentException e) {
      throw context.bad("classes", text, e.getMessage());
    }
    long regionBytes = context.region().sizeBytes();
    for (SizeClass c : classes) {
      long shareBytes = percentOf(regionBytes, c.percent());
      String problem = FixedBlockPool.problemWith(shareBytes, c.blockBytes(), "its " + c.percent() + " % of the region under test", "block size");
      if (problem != null && (given || shareBytes / c.blockBytes() > 0)) {
        throw context.bad("classes", text, "class " + label(c.blockBytes()) + ":" + c.percent() + ": block size " + problem);
      }
    }
    return classes;
  }

  /**
   * Parses {@code 2MiB:70,32MiB:15} into size classes; throws IllegalArgumentException with the
   * problem otherwise.
   */
  public static List<SizeClass> parseClasses(String text) {
    List<SizeClass> out = new ArrayList<>();
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("expected BLOCK:PERCENT pairs such as " + DEFAULT_CLASSES);
    }
    for (String item : text.split(",", -1)) {
      String[] parts = item.split(":", -1);
      if (parts.length != 2) {
        throw new IllegalArgumentException("'" + item.trim() + "' is not BLOCK:PERCENT, e.g. 2MiB:70");
      }
      long blockBytes = Bytes.parse(parts[0]);
      if (blockBytes <= 0) {
        throw new IllegalArgumentException("block size '" + parts[0].trim() + "' must be positive");
      }
      int percent;
      try {
        percent = Integer.parseInt(parts[1].trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("percentage '" + parts[1].trim() + "' is not a whole number");
      }
      if (percent < 1 || percent > 100) {
        throw new IllegalArgumentException("percentage " + percent + " is not between 1 and 100");
      }
      out.add(new SizeClass(blockBytes, percent));
    }
    validate(out);
    return out;
  }

  /** Rejects an empty list, a block size given twice and percentages summing past 100. */
  private static void validate(List<SizeClass> classes) {
    if (classes.isEmpty()) {
      throw new IllegalArgumentException("at least one size class is needed");
    }
    int percentSum = 0;
    for (int i = 0; i < classes.size(); i++) {
      percentSum += classes.get(i).percent();
      for (int j = 0; j < i; j++) {
        if (classes.get(j).blockBytes() == classes.get(i).blockBytes()) {
          throw new IllegalArgumentException("block size " + label(classes.get(i).blockBytes()) + " appears twice");
        }
      }
    }
    if (percentSum > 100) {
      throw new IllegalArgumentException("percentages sum to " + percentSum + ", more than 100");
    }
  }

  /** Returns a class label: the block size in the largest binary unit that divides it. */
  static String label(long blockBytes) {
    if (blockBytes % Bytes.GiB == 0) {
      return blockBytes / Bytes.GiB + "GiB";
    }
    if (blockBytes % Bytes.MiB == 0) {
      return blockBytes / Bytes.MiB + "MiB";
    }
    if (blockBytes % Bytes.KiB == 0) {
      return blockBytes / Bytes.KiB + "KiB";
    }
    return blockBytes + "B";
  }

  @Override
  public String name() {
    return "multi-slab";
  }

  /** Returns whether a splittable request between classes takes blocks of the smaller class. */
  public boolean splits() {
    return split;
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (split && request.splittable()) {
      return allocateSplitting(size);
    }
    int probes = 0;
    for (int c : bySize) {
      FixedBlockPool pool = pools[c];
      if (pool.blockBytes() < size) {
        continue;
      }
      probes++;
      if (pool.freeBlocks() > 0) {
        if (probes > 1) {
          fallbackAllocations++;
        }
        return take(c, 1, size, probes);
      }
    }
    FixedBlockPool big = pools[largest];
    if (size > big.blockBytes()) {
      probes++;
      if (!request.splittable()) {
        stats.addModelledNanos(latency.allocNanos(probes));
        return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
      }
      // size ≤ the free bytes of the class bounds the block count by its int free count.
      if (size <= (long) big.freeBlocks() * big.blockBytes()) {
        return take(largest, (int) Bytes.ceilDiv(size, big.blockBytes()), size, probes);
      }
    }
    stats.addModelledNanos(latency.allocNanos(probes));
    return AllocOutcome.OutOfMemory.classify(size, freeBytes(), largestFreeBytes());
  }

  /** Serves a splittable request under {@code split=true} (Note [Splitting between classes]). */
  private AllocOutcome allocateSplitting(long size) {
    int below = -1; // the largest class whose block is smaller than the request
    int holding = bySize.length; // position in bySize of the smallest class whose block holds it
    for (int i = 0; i < bySize.length; i++) {
      if (pools[bySize[i]].blockBytes() >= size) {
        holding = i;
        break;
      }
      below = bySize[i];
    }
    boolean exact = holding < bySize.length && pools[bySize[holding]].blockBytes() == size;
    int probes = 0;
    if (below >= 0 && !exact) {
      probes++;
      if (fitsSplit(below, size)) {
        return takeSplit(below, size, probes);
      }
    }
    for (int i = holding; i < bySize.length; i++) {
      probes++;
      if (pools[bySize[i]].freeBlocks() > 0) {
        if (i > holding) {
          fallbackAllocations++;
        }
        return take(bySize[i], 1, size, probes);
      }
    }
    if (below >= 0 && exact) {
      probes++;
      if (fitsSplit(below, size)) {
        return takeSplit(below, size, probes);
      }
    }
    stats.addModelledNanos(latency.allocNanos(probes));
    return AllocOutcome.OutOfMemory.classify(size, freeBytes(), largestFreeBytes());
  }

  /** Returns whether class {@code c}'s free blocks hold {@code size}, without overflow. */
  private boolean fitsSplit(int c, long size) {
    FixedBlockPool pool = pools[c];
    return size <= (long) pool.freeBlocks() * pool.blockBytes();
  }

  private AllocOutcome takeSplit(int c, long size, int probes) {
    splitAllocations++;
    // size ≤ the free bytes of the class bounds the block count by its int free count.
    return take(c, (int) Bytes.ceilDiv(size, pools[c].blockBytes()), size, probes);
  }

  private AllocOutcome take(int c, int blocks, long size, int probes) {
    FixedBlockPool pool = pools[c];
    int head = pool.take(blocks, size);
    stats.onAlloc(size, blocks * pool.blockBytes());
    stats.addModelledNanos(latency.allocNanos(probes + blocks));
    return new AllocOutcome.Allocated(((long) c << 32) | head, blocks * pool.blockBytes(), pool.extentsOf(head));
  }

  @Override
  public void free(long handle) {
    int c = checkedClass(handle);
    FixedBlockPool pool = pools[c];
    long requested = pool.requestedOf((int) handle);
    int n = pool.release((int) handle);
    stats.onFree(requested, n * pool.blockBytes());
    stats.addModelledNanos(latency.freeNanos(n));
  }

  private int checkedClass(long handle) {
    long c = handle >>> 32;
    if (handle < 0 || c >= pools.length || !pools[(int) c].isHead(handle & 0xFFFF_FFFFL)) {
      throw new AllocatorMisuseException(
          "multi-slab: handle " + handle + " is not a live allocation (double free?)");
    }
    return (int) c;
  }

  @Override
  public Extents extentsOf(long handle) {
    return pools[checkedClass(handle)].extentsOf((int) handle);
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  /** Returns the free blocks of every class together: all blocks less the allocated ones, O(1). */
  @Override
  public long freeBytes() {
    return blockBytesTotal - stats.allocatedBytes();
  }

  /**
   * Returns the larger of the largest block that is free in any class and the free blocks of the
   * largest class taken together (a splittable request's limit); O(number of classes). With {@code
   * split=true}, also the free blocks of each class taken together, up to the next larger block
   * (the requests that class serves by splitting).
   */
  @Override
  public long largestFreeBytes() {
    if (split) {
      return largestFreeSplitting();
    }
    long best = 0;
    for (FixedBlockPool pool : pools) {
      if (pool.freeBlocks() > 0) {
        best = Math.max(best, pool.blockBytes());
      }
    }
    FixedBlockPool big = pools[largest];
    return Math.max(best, (long) big.freeBlocks() * big.blockBytes());
  }

  /**
   * The largest request served under {@code split=true}: a request up to a free block's size takes
   * one block; one above class k's block and up to the next larger block, or any size above the
   * largest block, takes blocks of class k when its free blocks hold it. The requests served are
   * all those up to the largest of these (Note [Splitting between classes]).
   */
  private long largestFreeSplitting() {
    long best = 0;
    for (int i = 0; i < bySize.length; i++) {
      FixedBlockPool pool = pools[bySize[i]];
      int free = pool.freeBlocks();
      if (free == 0) {
        continue;
      }
      long together = (long) free * pool.blockBytes();
      long upTo = i + 1 < bySize.length ? Math.min(together, pools[bySize[i + 1]].blockBytes()) : together;
      best = Math.max(best, Math.max(pool.blockBytes(), upTo));
    }
    return best;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public Map<String, Long> extraMetrics() {
    Map<String, Long> out = new LinkedHashMap<>();
    for (int c = 0; c < pools.length; c++) {
      String prefix = "class_" + labels[c] + "_";
      out.put(prefix + "blocks", (long) pools[c].blockCount());
      out.put(prefix + "free_blocks", (long) pools[c].freeBlocks());
      out.put(prefix + "live_allocations", pools[c].liveAllocations());
      out.put(prefix + "requested_bytes", pools[c].requestedBytes());
    }
    out.put("fallback_allocations", fallbackAllocations);
    if (split) {
      out.put("split_allocations", splitAllocations);
    }
    return out;
  }

  @Override
  public void checkInvariants() {
    long expectedBase = region.baseBytes();
    long allocated = 0;
    long requested = 0;
    long live = 0;
    for (int c = 0; c < pools.length; c++) {
      FixedBlockPool pool = pools[c];
      pool.checkInvariants(name() + " class " + labels[c]);
      allocated += pool.allocatedBlocks() * pool.blockBytes();
      requested += pool.requestedBytes();
      live += pool.liveAllocations();
      if (pool.baseBytes() != expectedBase) {
        throw new InvariantViolation(
            name(), "class " + labels[c] + " starts at " + pool.baseBytes() + ", expected " + expectedBase);
      }
      if (!split && c != largest && pool.allocatedBlocks() != pool.liveAllocations()) {
        throw new InvariantViolation(
            name(), "class " + labels[c] + " holds multi-block allocations, which only the largest class may");
      }
      expectedBase = pool.endBytes();
    }
    if (expectedBase > region.endBytes()) {
      throw new InvariantViolation(name(), "classes end at " + expectedBase + ", past the region end " + region.endBytes());
    }
    stats.check(name(), region.sizeBytes(), allocated, requested, live);
  }

  @Override
  public List<SegmentLayout> layout() {
    List<SegmentLayout> out = new ArrayList<>();
    for (int c = 0; c < pools.length; c++) {
      FixedBlockPool pool = pools[c];
      if (pool.blockCount() == 0) {
        continue;
      }
      List<SegmentLayout.Block> blocks = new ArrayList<>(pool.blockCount());
      pool.appendLayout(blocks);
      out.add(new SegmentLayout(pool.baseBytes(), pool.endBytes() - pool.baseBytes(), labels[c], 0, false, blocks));
    }
    long end = pools[pools.length - 1].endBytes();
    if (end < region.endBytes()) {
      long tail = region.endBytes() - end;
      out.add(
          new SegmentLayout(
              end, tail, "unassigned", 0, false,
              List.of(new SegmentLayout.Block(end, tail, 0, SegmentLayout.State.INACTIVE))));
    }
    return out;
  }
}

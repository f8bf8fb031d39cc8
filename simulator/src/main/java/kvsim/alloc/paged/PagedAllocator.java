package kvsim.alloc.paged;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.devicemodel.Region;

/**
 * The {@code paged} allocator at L1: vLLM v1's KV block pool ({@code BlockPool} and
 * {@code FreeKVCacheBlockQueue}, {@code vllm/v1/core/block_pool.py} and {@code kv_cache_utils.py} at
 * commit ec5ef0a) serving byte requests
 * as lists of pages. Each allocation is one block table; there is no prefix hashing at this level
 * (the {@code BlockManager} adds it for token-level scripts and the serving engine).
 *
 * <ul>
 *   <li>A page is {@code block-tokens × bytes_per_token} bytes (option {@code block-tokens},
 *       default 16; bytes per token from the model, 512 KiB for Llama-2-7B in fp16, so 8 MiB
 *       pages by default).
 *   <li>The region is cut into {@code floor(region / page)} pages; page 0 is vLLM's null block and
 *       is never handed out ({@code BlockPool}'s constructor), and a tail shorter than a page is never used.
 *   <li>A splittable request takes {@code ceil(size / page)} pages popped from the head of the free
 *       queue; the pages need not be adjacent. An unsplittable request is {@code too_large}: the
 *       pool holds only KV, and the engine routes such requests to the activations region. So is a
 *       request larger than the whole region, whatever its size up to {@code Long.MAX_VALUE}.
 *   <li>A free returns the table's pages to the tail of the free queue tail page first ({@code
 *       BlockPool.free_blocks}), so the least recently released pages are reused first.
 *   <li>{@link #largestFreeBytes()} is every free page: a splittable request can use any of them.
 *   <li>Freeing a handle that is not live is an error (double free).
 * </ul>
 *
 * <p>Latency defaults: 20 ns per call plus 10 ns per page popped or appended, the cost of a
 * cache-resident linked-list operation (as for the slab model).
 */
public final class PagedAllocator implements Allocator {
  /** Default latencies: 20 ns per call plus 10 ns per page popped or appended (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(20, 10, 20, 10, 0, 0);

  /** Default tokens per page, vLLM's default block size. */
  public static final int DEFAULT_BLOCK_TOKENS = 16;

  private final Region region;
  private final long pageBytes;
  private final int numPages;
  private final BlockPool pool;
  private final LatencyModel latency;
  private final int[][] tableOfHead;
  private final long[] requestedOfHead;
  private final AllocatorStats stats;

  /** Builds the model from its registry context (option {@code block-tokens}). */
  public PagedAllocator(AllocatorContext context) {
    this(context.region(), pageBytesOf(context), context.latency(DEFAULT_LATENCY));
  }

  private static long pageBytesOf(AllocatorContext context) {
    boolean tokensGiven = context.optional("block-tokens") != null;
    long tokens = context.integer("block-tokens", DEFAULT_BLOCK_TOKENS);
    if (tokens <= 0 || tokens > Integer.MAX_VALUE) {
      throw context.bad("block-tokens", Long.toString(tokens), "must be a positive number of tokens");
    }
    long page = Math.multiplyExact(tokens, context.model().kvBytesPerToken());
    long pages = context.region().sizeBytes() / page;
    if (pages < 2) {
      String problem =
          "the region under test ("
              + Bytes.format(context.region().sizeBytes())
              + ") holds fewer than 2 pages of "
              + Bytes.format(page)
              + " ("
              + tokens
              + " tokens of "
              + context.model().name()
              + "; vLLM keeps one page as the null page): give a larger --device, or fewer block-tokens";
      if (tokensGiven) {
        throw context.bad("block-tokens", Long.toString(tokens), problem);
      }
      throw new InputException("paged: " + problem);
    }
    if (pages > Integer.MAX_VALUE - 8) {
      String problem = "the region under test (" + Bytes.format(context.region().sizeBytes()) + ") holds " + pages + " pages of " + Bytes.format(page)
          + ", more than " + (Integer.MAX_VALUE - 8) + "; use more block-tokens";
      if (tokensGiven) {
        throw context.bad("block-tokens", Long.toString(tokens), problem);
      }
      throw new InputException("paged: " + problem);
    }
    return page;
  }

  /** Builds a pool over {@code region} with pages of {@code pageBytes}. */
  public PagedAllocator(Region region, long pageBytes) {
    this(region, pageBytes, DEFAULT_LATENCY);
  }

  /** As {@link #PagedAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public PagedAllocator(Region region, long pageBytes, LatencyModel latency) {
    if (pageBytes <= 0) {
      throw new IllegalArgumentException("page size must be positive");
    }
    long count = region.sizeBytes() / pageBytes;
    if (count < 2) {
      throw new IllegalArgumentException("the region holds fewer than 2 pages of " + pageBytes + " B");
    }
    if (count > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("too many pages: " + count + "; use larger pages");
    }
    this.region = region;
    this.pageBytes = pageBytes;
    this.numPages = (int) count;
    this.pool = new BlockPool(name(), numPages, false, BlockPool.Kind.V1);
    this.latency = latency;
    this.tableOfHead = new int[numPages][];
    this.requestedOfHead = new long[numPages];
    this.stats = AllocatorStats.reserving(region.sizeBytes());
  }

  @Override
  public String name() {
    return "paged";
  }

  /** Returns the page size. */
  public long pageBytes() {
    return pageBytes;
  }

  /** Returns the number of pages, the null page included. */
  public int numPages() {
    return numPages;
  }

  /** Returns the free pages in the order allocation takes them (head of the free queue first). */
  public int[] freeQueue() {
    return pool.freeOrder();
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (!request.splittable()) {
      stats.addModelledNanos(latency.allocNanos(0));
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    if (size > region.sizeBytes()) {
      // More than the whole region can never be served. Checked before the page count so that the
      // count stays within the pool's int range (sizes near 2^63 used to wrap it around).
      stats.addModelledNanos(latency.allocNanos(0));
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    long needed = Bytes.ceilDiv(size, pageBytes);
    if (needed > pool.numFreeBlocks()) {
      stats.addModelledNanos(latency.allocNanos(0));
      return AllocOutcome.OutOfMemory.classify(size, freeBytes(), largestFreeBytes());
    }
    int n = (int) needed;
    int[] table = new int[n];
    for (int i = 0; i < n; i++) {
      table[i] = pool.popBlock(null); // head of the free queue first, as getNewBlocks pops
    }
    int head = table[0];
    tableOfHead[head] = table;
    requestedOfHead[head] = size;
    stats.onAlloc(size, n * pageBytes);
    stats.addModelledNanos(latency.allocNanos(n));
    return new AllocOutcome.Allocated(head, n * pageBytes, extentsOf(table));
  }

  private Extents extentsOf(int[] table) {
    if (table.length == 1) {
      return Extents.single(region.baseBytes() + table[0] * pageBytes, pageBytes);
    }
    Extents.Builder extents = new Extents.Builder(table.length == 1 ? 1 : 4);
    for (int page : table) {
      extents.add(region.baseBytes() + page * pageBytes, pageBytes);
    }
    return extents.build();
  }

  @Override
  public void free(long handle) {
    int head = checkedHead(handle);
    int[] table = tableOfHead[head];
    pool.freeBlocks(table, 0, table.length, true);
    tableOfHead[head] = null;
    stats.onFree(requestedOfHead[head], table.length * pageBytes);
    requestedOfHead[head] = 0;
    stats.addModelledNanos(latency.freeNanos(table.length));
  }

  private int checkedHead(long handle) {
    if (handle < 0 || handle >= numPages || tableOfHead[(int) handle] == null) {
      throw new AllocatorMisuseException("paged: handle " + handle + " is not a live allocation (double free?)");
    }
    return (int) handle;
  }

  @Override
  public Extents extentsOf(long handle) {
    return extentsOf(tableOfHead[checkedHead(handle)]);
  }

  /** Returns the block table (page ids in order) of a live allocation. */
  public int[] blockTable(long handle) {
    return tableOfHead[checkedHead(handle)].clone();
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  @Override
  public long freeBytes() {
    return (long) pool.numFreeBlocks() * pageBytes;
  }

  @Override
  public long largestFreeBytes() {
    return (long) pool.numFreeBlocks() * pageBytes;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public Map<String, Long> extraMetrics() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("page_bytes", pageBytes);
    m.put("pages_total", (long) pool.usableBlocks());
    m.put("pages_free", (long) pool.numFreeBlocks());
    return m;
  }

  @Override
  public void checkInvariants() {
    int[] expected = new int[numPages];
    long pages = 0;
    long requested = 0;
    long live = 0;
    for (int h = 0; h < numPages; h++) {
      int[] table = tableOfHead[h];
      if (table == null) {
        continue;
      }
      live++;
      if (table.length == 0 || table[0] != h) {
        throw new InvariantViolation(name(), "allocation " + h + " does not start with its own page");
      }
      for (int page : table) {
        if (page < 0 || page >= numPages || page == pool.nullBlock()) {
          throw new InvariantViolation(name(), "allocation " + h + " holds page " + page);
        }
        if (expected[page]++ > 0) {
          throw new InvariantViolation(name(), "page " + page + " belongs to two allocations");
        }
      }
      long r = requestedOfHead[h];
      if (r > table.length * pageBytes || r <= (table.length - 1) * pageBytes) {
        throw new InvariantViolation(name(), "allocation " + h + " holds " + table.length + " pages for " + r + " B");
      }
      pages += table.length;
      requested += r;
    }
    pool.checkInvariants(expected);
    if (pages + pool.numFreeBlocks() != pool.usableBlocks()) {
      throw new InvariantViolation(
          name(), "pages do not balance: " + pages + " allocated + " + pool.numFreeBlocks() + " free != " + pool.usableBlocks());
    }
    stats.check(name(), region.sizeBytes(), pages * pageBytes, requested, live);
  }

  @Override
  public List<SegmentLayout> layout() {
    long[] requestedOfPage = new long[numPages];
    boolean[] used = new boolean[numPages];
    for (int h = 0; h < numPages; h++) {
      int[] table = tableOfHead[h];
      if (table != null) {
        long left = requestedOfHead[h];
        for (int page : table) {
          used[page] = true;
          requestedOfPage[page] = Math.min(left, pageBytes);
          left -= requestedOfPage[page];
        }
      }
    }
    List<SegmentLayout.Block> blocks = new ArrayList<>(numPages + 1);
    for (int p = 0; p < numPages; p++) {
      SegmentLayout.State s = used[p] ? SegmentLayout.State.ACTIVE_ALLOCATED : SegmentLayout.State.INACTIVE;
      blocks.add(new SegmentLayout.Block(region.baseBytes() + p * pageBytes, pageBytes, requestedOfPage[p], s));
    }
    long tail = region.sizeBytes() - (long) numPages * pageBytes;
    if (tail > 0) {
      blocks.add(
          new SegmentLayout.Block(
              region.baseBytes() + (long) numPages * pageBytes, tail, 0, SegmentLayout.State.INACTIVE));
    }
    return List.of(new SegmentLayout(region.baseBytes(), region.sizeBytes(), "paged-" + pageBytes, 0, false, blocks));
  }
}

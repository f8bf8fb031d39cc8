package kvsim.alloc.vattention;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
 * vAttention's KV-cache memory (Prabhu, Nayak, Mohan, Ramjee, Panwar; ASPLOS 2025, arXiv
 * 2405.04437) at L1: each allocation is one contiguous range of virtual addresses, and physical
 * pages from a pool are mapped behind it with CUDA's virtual memory calls ({@code cuMemMap}, {@code
 * cuMemUnmap}), so that unmodified attention kernels see a contiguous KV cache while physical memory
 * is handed out a page at a time. The rules follow the paper and its code
 * (github.com/microsoft/vattention, {@code vattention/}):
 *
 * <ul>
 *   <li>Physical pages are {@code page-size} bytes (default 2 MiB, the granularity of {@code
 *       cuMemCreate}; a power of two from 64 KiB, the sizes below 2 MiB being those vAttention
 *       reaches with its own UVM driver). The region holds {@code floor(region / page)} pages, page
 *       i at {@code base + i × page}; a tail shorter than a page is never used. The pages are created once, up front ({@code reserve_physical_pages}), so
 *       the whole region is reserved from the start.
 *   <li>The free pages form one pool used as a stack, as vAttention's ({@code pop_back} to map,
 *       {@code push_back} on unmap): the page unmapped last is mapped next. At the start page 0 is
 *       on top.
 *   <li>A request maps {@code ceil(size / page)} pages at once, in the order it pops them, to
 *       consecutive pages of its virtual range; splittable or not, since the range is contiguous
 *       either way. {@code allocated_bytes} counts the mapped pages, so the unused tail of the last
 *       page is internal fragmentation.
 *   <li>A free unmaps the pages last page first (vAttention's {@code unmap_req_page_one} works back
 *       from the end of a request), so the allocation's first page ends on top of the pool.
 *   <li>A request for more pages than the pool holds is {@code too_large}; one for more pages than
 *       are free is {@code no_memory}. There is no {@code fragmentation} refusal, since any free
 *       pages will do: {@link #largestFreeBytes()} is every free page, as {@link #freeBytes()} is.
 *   <li>Each allocation's virtual range starts at the base of a request slot's reservation (Note
 *       [Virtual reservations]); the ranges lie in {@link #virtualSpace()}, apart from the region.
 *   <li>Freeing a handle that is not live is an error (double free).
 * </ul>
 *
 * <p>Note [Virtual reservations]: vAttention reserves, for each of {@code max_batch_size} request
 * slots ({@code reqId}), virtual memory for {@code max_model_len} tokens, and the serving engine
 * grows the mapping page by page as the request's tokens arrive ({@code step}). kvsim's L1 has byte
 * requests without a length to grow to, so an allocation maps all its pages when it is made, and its
 * virtual range is its size rounded up to whole pages. The slots are kept: slot s reserves the
 * pool's size (the most one allocation can map) from {@code virtualBase + s × poolBytes}; a request
 * takes the lowest free slot (vAttention's {@code alloc_new_batch_idx} returns the lowest inactive
 * {@code reqId} when, as here, a finished request's pages are unmapped at once) and its range starts
 * at the slot's base. {@code virtualBase} is 2^40 (1 TiB, above the memory of every device preset),
 * or the region's end rounded up to a page where that is higher, so that a virtual range never falls
 * on the region's physical addresses. At most one slot per page is live, so the virtual space spans
 * {@code pages × poolBytes}; a region for which that passes 2^63 (above 4 TiB with 2 MiB pages,
 * above about 724 GiB with 64 KiB pages) is refused when the model is built. vAttention's deferred
 * reclamation, which keeps a finished request's pages mapped for the next request of its slot, is
 * left out: L1 unmaps on free, as vAttention's {@code step} with eager reclamation does.
 *
 * <p>Latency defaults: 20 ns per call plus 10 ns per page taken from or returned to the pool (the
 * {@code slab} model's stack costs), and per page {@value #MAP_NANOS} ns to map ({@code cuMemMap}
 * and {@code cuMemSetAccess} of a page already created into the pool) and {@value #UNMAP_NANOS} ns
 * to unmap ({@code cuMemUnmap}). Both are medians measured on an NVIDIA H100 80GB HBM3 (driver
 * 580.159.04, 2026-11-27) by {@code kvsim gpu replay churn:ops=4000,min-size-mib=2,max-size-mib=2
 * --mode arena -a vattention}, where every allocation is one 2 MiB page: 59.2 µs per map and 40.6
 * µs per unmap over 2,479 pages ({@code
 * results/reproductions/gpu-validation/h100-80-one-page/vattention/gpu-calls.csv}). The earlier
 * default, 40 µs for each (a secondary summary of the paper's figure for the pair), was 32 % under
 * that map. A calibration file replaces them ({@code device_alloc_ns} and {@code device_free_ns}
 * are per page); {@code kvsim gpu calibrate}'s per-page figures also time the page's {@code
 * cuMemCreate} and its release, which vAttention does once, outside the map.
 *
 * <p>Extra metrics: {@code pages_mapped} and {@code pages_unmapped}, the pages mapped and unmapped
 * so far (one {@code cuMemMap} or {@code cuMemUnmap} call each, so there are no separate call
 * counts), and {@code pool_pages}, the pages of the pool.
 */
public final class VAttentionAllocator implements Allocator {
  /** The registry name. */
  public static final String NAME = "vattention";

  /** Modelled nanoseconds to map one page (the class comment says where it was measured). */
  static final long MAP_NANOS = 59_000;

  /** Modelled nanoseconds to unmap one page (the class comment says where it was measured). */
  static final long UNMAP_NANOS = 40_000;

  /** Default latencies: 20 ns per call, 10 ns per page, {@value #MAP_NANOS} ns per page mapped, {@value #UNMAP_NANOS} ns per page unmapped. */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(20, 10, 20, 10, MAP_NANOS, UNMAP_NANOS);

  /** Default page size: 2 MiB, the granularity of {@code cuMemCreate}. */
  public static final long DEFAULT_PAGE_BYTES = 2 * Bytes.MiB;

  /** The smallest page size: 64 KiB, with vAttention's own UVM driver. */
  public static final long MIN_PAGE_BYTES = 64 * Bytes.KiB;

  /** The largest page size: 2 MiB. */
  public static final long MAX_PAGE_BYTES = 2 * Bytes.MiB;

  /** Where the virtual space starts at the lowest: 2^40 (1 TiB), above every device preset's memory. */
  public static final long VIRTUAL_BASE_BYTES = 1L << 40;

  private static final int FIRST = -1; // previousPage[] of an allocation's first page
  private static final int FREE = -2; // previousPage[] of a page in the pool
  private static final long GENERATION_MASK = 0xFF_FFFFL; // handles below 2^56

  private final Region region;
  private final long pageBytes;
  private final int pageCount;
  private final long poolBytes;
  private final long virtualBaseBytes;
  private final LatencyModel latency;
  private final AllocatorStats stats;

  // The pool: free pages, the top at freePages[freeCount - 1].
  private final int[] freePages;
  private int freeCount;
  // Per page: the page mapped before it in its allocation, FIRST, or FREE.
  private final int[] previousPage;

  // Per request slot (Note [Virtual reservations]); a slot with 0 pages is free.
  private final LowestFreeSlots slots = new LowestFreeSlots();
  private int[] pagesOfSlot = new int[16];
  private int[] lastPageOfSlot = new int[16];
  private long[] requestedOfSlot = new long[16];
  private int[] generationOfSlot = new int[16];

  private long pagesMapped;
  private long pagesUnmapped;

  /** Builds the model from its registry context (option {@code page-size}). */
  public VAttentionAllocator(AllocatorContext context) {
    this(context.region(), pageBytesOf(context), context.latency(DEFAULT_LATENCY));
  }

  private static long pageBytesOf(AllocatorContext context) {
    String given = context.optional("page-size");
    long page = context.bytes("page-size", DEFAULT_PAGE_BYTES);
    String problem = problemWith(context.region(), page);
    if (problem == null) {
      return page;
    }
    if (given != null) {
      throw context.bad("page-size", given, problem);
    }
    throw new InputException(NAME + ": " + problem);
  }

  /** Builds the model over {@code region} with pages of {@code pageBytes}. */
  public VAttentionAllocator(Region region, long pageBytes) {
    this(region, pageBytes, DEFAULT_LATENCY);
  }

  /** As {@link #VAttentionAllocator(Region, long)}, with the latency model given (defaults or a calibration). */
  public VAttentionAllocator(Region region, long pageBytes, LatencyModel latency) {
    String problem = problemWith(region, pageBytes);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    this.region = region;
    this.pageBytes = pageBytes;
    this.pageCount = (int) (region.sizeBytes() / pageBytes);
    this.poolBytes = pageCount * pageBytes;
    this.virtualBaseBytes = virtualBaseFor(region, pageBytes);
    this.latency = latency;
    this.stats = AllocatorStats.reserving(region.sizeBytes());
    this.freePages = new int[pageCount];
    this.previousPage = new int[pageCount];
    for (int i = 0; i < pageCount; i++) {
      freePages[i] = pageCount - 1 - i; // page 0 on top
      previousPage[i] = FREE;
    }
    this.freeCount = pageCount;
  }

  /** Returns why a model cannot be built over {@code region} with these pages, or null. */
  private static String problemWith(Region region, long pageBytes) {
    if (pageBytes < MIN_PAGE_BYTES || pageBytes > MAX_PAGE_BYTES || Long.bitCount(pageBytes) != 1) {
      return "the page size must be a power of two from 64 KiB to 2 MiB (vAttention's page sizes), got " + pageBytes + " B";
    }
    long pages = region.sizeBytes() / pageBytes;
    if (pages > Integer.MAX_VALUE - 8) {
      return "too many pages: " + pages + "; use a larger page size";
    }
    // One reservation of the pool per page (Note [Virtual reservations]) must end below 2^63.
    long base = virtualBaseFor(region, pageBytes);
    long pool = pages * pageBytes;
    if (pages > 0 && pool > (Long.MAX_VALUE - base) / pages) {
      return "the region (" + Bytes.format(region.sizeBytes()) + ") is too large for the virtual space of "
          + Bytes.format(pageBytes) + " pages (one reservation of the whole pool per page must end below 2^63 B); "
          + "use a larger page size";
    }
    return null;
  }

  private static long virtualBaseFor(Region region, long pageBytes) {
    long end = region.endBytes();
    long r = end % pageBytes;
    // The region's end is at most Long.MAX_VALUE; rounding it up may not be a long.
    long rounded = r == 0 ? end : end > Long.MAX_VALUE - (pageBytes - r) ? Long.MAX_VALUE : end + (pageBytes - r);
    return Math.max(VIRTUAL_BASE_BYTES, rounded);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Returns the page size. */
  public long pageBytes() {
    return pageBytes;
  }

  /** Returns the number of pages in the pool. */
  public int pageCount() {
    return pageCount;
  }

  /** Returns the first address of the virtual space. */
  public long virtualBaseBytes() {
    return virtualBaseBytes;
  }

  @Override
  public Optional<Region> virtualSpace() {
    return Optional.of(new Region(region.name() + "-virtual", virtualBaseBytes, (long) pageCount * poolBytes));
  }

  /** Returns the first virtual address of a request slot's reservation. */
  private long virtualAddressOf(int slot) {
    return virtualBaseBytes + slot * poolBytes;
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    if (size > poolBytes) {
      stats.addModelledNanos(latency.allocNanos(0));
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    long pages = Bytes.ceilDiv(size, pageBytes); // ≤ pageCount, an int
    if (pages > freeCount) {
      stats.addModelledNanos(latency.allocNanos(0));
      return new AllocOutcome.OutOfMemory(OomReason.NO_MEMORY, size, freeBytes(), largestFreeBytes());
    }
    int n = (int) pages;
    int slot = takeSlot();
    int previous = FIRST;
    for (int i = 0; i < n; i++) {
      int page = freePages[--freeCount];
      previousPage[page] = previous;
      previous = page;
    }
    lastPageOfSlot[slot] = previous;
    pagesOfSlot[slot] = n;
    requestedOfSlot[slot] = size;
    int generation = (int) ((generationOfSlot[slot] + 1) & GENERATION_MASK);
    generationOfSlot[slot] = generation;
    long mappedBytes = n * pageBytes;
    pagesMapped += n;
    stats.onAlloc(size, mappedBytes);
    stats.addModelledNanos(cost(latency.allocBaseNanos(), latency.allocPerStepNanos(), latency.deviceAllocNanos(), n));
    return new AllocOutcome.Allocated(
        ((long) generation << 32) | slot, mappedBytes, Extents.single(virtualAddressOf(slot), mappedBytes));
  }

  private int takeSlot() {
    int slot = slots.take();
    if (slot == pagesOfSlot.length) {
      int n = (int) Math.min((long) slot * 2, Math.max(pageCount, 1));
      pagesOfSlot = Arrays.copyOf(pagesOfSlot, n);
      lastPageOfSlot = Arrays.copyOf(lastPageOfSlot, n);
      requestedOfSlot = Arrays.copyOf(requestedOfSlot, n);
      generationOfSlot = Arrays.copyOf(generationOfSlot, n);
    }
    return slot;
  }

  /**
   * Returns {@code base + (perPage + perMap) × pages}, saturating at {@code Long.MAX_VALUE}: a
   * calibration may charge anything per call, and modelled time must not wrap.
   */
  private static long cost(long base, long perPage, long perMap, int pages) {
    long perPageTotal = perPage + perMap;
    if (perPageTotal < 0 || (pages > 0 && perPageTotal > (Long.MAX_VALUE - base) / pages)) {
      return Long.MAX_VALUE;
    }
    return base + perPageTotal * pages;
  }

  @Override
  public void free(long handle) {
    int slot = checkedSlot(handle);
    int n = pagesOfSlot[slot];
    // Unmap the last page first: the first page ends on top of the pool.
    for (int page = lastPageOfSlot[slot]; page != FIRST; ) {
      int before = previousPage[page];
      previousPage[page] = FREE;
      freePages[freeCount++] = page;
      page = before;
    }
    long requested = requestedOfSlot[slot];
    pagesOfSlot[slot] = 0;
    requestedOfSlot[slot] = 0;
    slots.release(slot);
    pagesUnmapped += n;
    stats.onFree(requested, n * pageBytes);
    stats.addModelledNanos(cost(latency.freeBaseNanos(), latency.freePerStepNanos(), latency.deviceFreeNanos(), n));
  }

  private int checkedSlot(long handle) {
    long slot = handle & 0xFFFF_FFFFL;
    if (handle < 0
        || slot >= slots.used()
        || pagesOfSlot[(int) slot] == 0
        || generationOfSlot[(int) slot] != handle >>> 32) {
      throw new AllocatorMisuseException(NAME + ": handle " + handle + " is not a live allocation (double free?)");
    }
    return (int) slot;
  }

  @Override
  public Extents extentsOf(long handle) {
    int slot = checkedSlot(handle);
    return Extents.single(virtualAddressOf(slot), pagesOfSlot[slot] * pageBytes);
  }

  /**
   * Returns the physical pages of a live allocation in mapping order: page i backs the i-th page of
   * its virtual range.
   */
  public int[] pagesOf(long handle) {
    int slot = checkedSlot(handle);
    int[] out = new int[pagesOfSlot[slot]];
    int i = out.length;
    for (int page = lastPageOfSlot[slot]; page != FIRST; page = previousPage[page]) {
      out[--i] = page;
    }
    return out;
  }

  /** Returns the free pages in the order the next requests will map them (top of the pool first). */
  public int[] freePageOrder() {
    int[] out = new int[freeCount];
    for (int i = 0; i < freeCount; i++) {
      out[i] = freePages[freeCount - 1 - i];
    }
    return out;
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  /** Returns the bytes of the free pages, O(1). */
  @Override
  public long freeBytes() {
    return freeCount * pageBytes;
  }

  /** Returns the bytes of the free pages: any request up to them is served, O(1). */
  @Override
  public long largestFreeBytes() {
    return freeCount * pageBytes;
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public Map<String, Long> extraMetrics() {
    Map<String, Long> out = new LinkedHashMap<>();
    out.put("pages_mapped", pagesMapped);
    out.put("pages_unmapped", pagesUnmapped);
    out.put("pool_pages", (long) pageCount);
    return out;
  }

  /**
   * Checks that every page is in the pool or mapped once by one live allocation, that each
   * allocation maps the pages its request needs, that the request slots agree with the live
   * allocations, and that the gauges and counters match.
   */
  @Override
  public void checkInvariants() {
    boolean[] seen = new boolean[pageCount];
    if (freeCount < 0 || freeCount > pageCount) {
      throw new InvariantViolation(NAME, "the pool holds " + freeCount + " of " + pageCount + " pages");
    }
    for (int i = 0; i < freeCount; i++) {
      int page = freePages[i];
      if (page < 0 || page >= pageCount || seen[page]) {
        throw new InvariantViolation(NAME, "the pool holds page " + page + " twice or outside the region");
      }
      if (previousPage[page] != FREE) {
        throw new InvariantViolation(NAME, "page " + page + " is in the pool but mapped");
      }
      seen[page] = true;
    }
    long mapped = 0;
    long requested = 0;
    long live = 0;
    int used = slots.used();
    for (int slot = 0; slot < used; slot++) {
      int n = pagesOfSlot[slot];
      if (n == 0) {
        if (requestedOfSlot[slot] != 0) {
          throw new InvariantViolation(NAME, "free slot " + slot + " holds requested bytes");
        }
        continue;
      }
      live++;
      int count = 0;
      for (int page = lastPageOfSlot[slot]; page != FIRST; page = previousPage[page]) {
        if (page < 0 || page >= pageCount) {
          throw new InvariantViolation(NAME, "slot " + slot + " maps " + page + ", not a page of the pool");
        }
        if (seen[page]) {
          throw new InvariantViolation(NAME, "page " + page + " is mapped twice, or mapped and in the pool");
        }
        seen[page] = true;
        if (++count > n) {
          throw new InvariantViolation(NAME, "slot " + slot + " maps more than its " + n + " pages");
        }
      }
      if (count != n) {
        throw new InvariantViolation(NAME, "slot " + slot + " maps " + count + " pages, expected " + n);
      }
      long r = requestedOfSlot[slot];
      if (r <= (n - 1) * pageBytes || r > n * pageBytes) {
        throw new InvariantViolation(NAME, "slot " + slot + " maps " + n + " pages for " + r + " B");
      }
      mapped += n;
      requested += r;
    }
    for (int page = 0; page < pageCount; page++) {
      if (!seen[page]) {
        throw new InvariantViolation(NAME, "page " + page + " is neither in the pool nor mapped (leaked)");
      }
    }
    if (mapped + freeCount != pageCount) {
      throw new InvariantViolation(NAME, mapped + " mapped + " + freeCount + " free pages != " + pageCount);
    }
    if (used > Math.max(pageCount, 0) || live + slots.freeCount() != used) {
      throw new InvariantViolation(NAME, used + " slots used, " + live + " live, " + slots.freeCount() + " free");
    }
    slots.checkInvariants(NAME, s -> pagesOfSlot[s] != 0);
    if (pagesMapped - pagesUnmapped != mapped) {
      throw new InvariantViolation(
          NAME, pagesMapped + " pages mapped and " + pagesUnmapped + " unmapped so far, but " + mapped + " are mapped");
    }
    stats.check(NAME, region.sizeBytes(), mapped * pageBytes, requested, live);
  }

  /**
   * Returns the region as one segment of physical pages, each active with its share of its
   * allocation's requested bytes (filled in mapping order) or inactive, and the tail shorter than a
   * page as an inactive block.
   */
  @Override
  public List<SegmentLayout> layout() {
    long[] requestedOfPage = new long[pageCount];
    for (int slot = 0; slot < slots.used(); slot++) {
      int n = pagesOfSlot[slot];
      if (n == 0) {
        continue;
      }
      long left = requestedOfSlot[slot];
      int i = n - 1; // the last page holds the tail of the request
      for (int page = lastPageOfSlot[slot]; page != FIRST; page = previousPage[page], i--) {
        requestedOfPage[page] = Math.min(pageBytes, left - i * pageBytes);
      }
    }
    List<SegmentLayout.Block> blocks = new ArrayList<>(pageCount + 1);
    for (int page = 0; page < pageCount; page++) {
      boolean mapped = previousPage[page] != FREE;
      blocks.add(
          new SegmentLayout.Block(
              region.baseBytes() + page * pageBytes,
              pageBytes,
              mapped ? requestedOfPage[page] : 0,
              mapped ? SegmentLayout.State.ACTIVE_ALLOCATED : SegmentLayout.State.INACTIVE));
    }
    long tail = region.sizeBytes() - poolBytes;
    if (tail > 0) {
      blocks.add(new SegmentLayout.Block(region.baseBytes() + poolBytes, tail, 0, SegmentLayout.State.INACTIVE));
    }
    return List.of(new SegmentLayout(region.baseBytes(), region.sizeBytes(), "vattention-pages", 0, false, blocks));
  }
}

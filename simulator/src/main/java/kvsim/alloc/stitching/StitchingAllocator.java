package kvsim.alloc.stitching;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
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
 * GMLake's allocator (Guo et al., "GMLake: Efficient and Transparent GPU Memory Defragmentation for
 * Large-scale DNN Training with Virtual Memory Stitching", ASPLOS 2024, arXiv 2401.08156) at L1: a
 * caching allocator in PyTorch's manner whose blocks are ranges of virtual addresses over physical
 * chunks, so that when no single cached block can serve a request, several free blocks are
 * <em>stitched</em> into one new virtually contiguous block ({@code cuMemAddressReserve}, then
 * {@code cuMemMap} of each chunk) instead of reserving more memory or failing.
 *
 * <ul>
 *   <li>Physical memory is created in chunks of {@value #CHUNK_BYTES} bytes (2 MiB, the granularity
 *       of {@code cuMemCreate}); chunk i lies at {@code base + i × 2 MiB}, and a tail shorter than a
 *       chunk is never used. A request takes {@code ceil(size / 2 MiB)} chunks, splittable or not;
 *       {@code allocated_bytes} counts whole chunks, so the unused tail is internal fragmentation.
 *   <li>A <em>segment</em> (GMLake's primitive block as created) is one virtual reservation with
 *       chunks created and mapped behind it, the lowest-numbered chunks not yet reserved. Its
 *       <em>blocks</em> tile it in whole chunks, free or allocated, and are split (low end taken)
 *       and merged with free neighbours as PyTorch's large pool does. Segments are never released.
 *   <li>A request of n chunks is served by the first of these that applies (GMLake's allocation
 *       states, Note [Design]): (1) a free block of exactly n chunks, best fit (smallest size, then
 *       oldest segment, then lowest chunk); (2) a cached stitched block of n chunks whose chunks
 *       are all free (the stitched pool, Note [Stitched pool]); (3) the best-fitting larger free
 *       block, split; (4) stitching: while no single free block covers what is left, the largest
 *       free block is taken whole (best-fit order among equals), and then the smallest one that
 *       covers the rest, split; (5) with too few free chunks, a new segment of just the missing
 *       chunks, then stitching of every free block; with none free at all, a new segment of n
 *       chunks, served whole. Otherwise the request is refused
 *       {@code no_memory}; one above every chunk of the region is {@code too_large}. There is no
 *       {@code fragmentation} refusal: stitching makes every free chunk usable.
 *   <li>Each allocation is one virtual range: its block's range in its segment's reservation, or
 *       the stitched block's own reservation. The ranges lie in {@link #virtualSpace()} (Note
 *       [Virtual slots]); the chunks, which {@link #layout()} shows, lie in the region.
 *   <li>Freeing a handle that is not live is an error (double free).
 * </ul>
 *
 * <p>Note [Design]: GMLake is PyTorch's caching allocator with stitching added, so the natural
 * route would be a variant of {@code pytorch-caching}. That model follows PyTorch's rounding,
 * pools, segment sizes and retry ladder decision for decision and is checked against real
 * snapshots; stitching changes which blocks exist (virtual ranges over chunks that belong to other
 * blocks), which its block and segment structures cannot express without changing them. This is
 * therefore a model of its own, with the parts of PyTorch's large pool that stitching needs (best
 * fit, splitting off the low end, merging free neighbours) kept at chunk granularity. The order of
 * the five states follows the descriptions of GMLake's algorithm (exact match, single block,
 * multiple blocks, insufficient blocks, out of memory): free blocks are stitched <em>before</em>
 * more memory is reserved, not only where PyTorch would give up, which is how GMLake reserves less
 * than PyTorch. The paper itself was not at hand; the states are taken from secondary summaries.
 *
 * <p>Note [Stitched pool]: a stitched block remembers the chunk ranges it maps. When its
 * allocation is freed, those ranges return to their segments as free blocks (merged with free
 * neighbours) and the stitched block is kept in the stitched pool, mapped, so that a later request
 * of its size whose ranges are all still free reuses it with no driver call: the ranges are cut out
 * of the free blocks that hold them. While one of its chunks is used by another allocation it
 * cannot be reused, but it stays in the pool. The pool keeps at most {@code max-stitched} blocks
 * (default {@value #DEFAULT_MAX_STITCHED}); past that the least recently freed one is unmapped and
 * its reservation freed. GMLake bounds its stitched pool by its own heuristics; the bound here is
 * this model's, so that the pool's lookups stay short.
 *
 * <p>Note [Free-block index]: best fit by (size, segment, chunk) is PyTorch's (stream, size,
 * address) order with the segment's age standing in for its address, since a segment's chunks are
 * not adjacent physically. The free blocks are kept per size in chunks, each size's blocks in an
 * ordered set, with a bitmap of the sizes that have any: a best-fit search is one scan of the
 * bitmap from the size asked for and the first block of that size, and adding or removing a block
 * touches one small set, not a set of every free block. A segment records each block by its first
 * and its last chunk, so the neighbours of a freed block are two array reads; only reusing a cached
 * stitched block looks for the free block that holds a range's first chunk by walking back to that
 * block's start.
 *
 * <p>Note [Virtual slots]: as in the {@code vattention} model, every reservation (a segment or a
 * stitched block) starts at the base of a slot of the size of the whole chunk pool, slot s at
 * {@code virtualBase + s × pool}, the lowest free slot taken first. Live reservations number at
 * most {@code 2 × chunks + max-stitched + 1} (a segment holds at least one chunk, a live stitched
 * block at least two, and one more stitched block is cached before the oldest is evicted), so the
 * virtual space spans that many slots from {@code virtualBase}, 2^40 or the region's end rounded up
 * to a chunk where that is higher. A region for which that passes 2^63 is refused.
 *
 * <p>Note [What is left out]: GMLake, built into PyTorch's allocator, leaves small requests to
 * PyTorch's small pool (blocks under 1 MiB carved from 2 MiB segments) and stitches large blocks;
 * here every request takes whole chunks, so a small request costs a chunk. PyTorch's retry ladder (freeing cached segments and
 * retrying) is not modelled: segments are never released, and it could not serve anything that
 * stitching does not, since every free chunk can already be stitched. Streams, events and the
 * {@code max_split_size} rule are left out.
 *
 * <p>Latency defaults: 50 ns per call plus 20 ns per block cut or merged and per cached stitched
 * block examined; {@value #VMM_CALL_NANOS} ns per driver call on the allocation path (a {@code
 * cuMemAddressReserve}, a {@code cuMemCreate} of one chunk, a {@code cuMemMap} of one chunk with
 * its {@code cuMemSetAccess}) and as much per call on the free path (a {@code cuMemUnmap} of one
 * chunk, a {@code cuMemAddressFree}) when a stitched block is evicted. A new segment of k chunks is
 * 1 + 2k calls, a stitch of k chunks 1 + k. These are estimates (a secondary summary of the
 * vAttention paper puts a map with its access call at about 40 µs; no per-call figure from GMLake
 * was at hand); a calibration file replaces them ({@code
 * device_alloc_ns} and {@code device_free_ns} are per driver call).
 *
 * <p>Extra metrics: {@code stitches} (stitched blocks made), {@code stitched_chunks} and {@code
 * stitched_bytes} (chunks and bytes mapped by them), {@code stitch_reuses} (requests served by a
 * cached stitched block), {@code stitched_cached} (stitched blocks in the pool now), {@code
 * stitched_evicted}, {@code segments} (segments created) and {@code vmm_calls} (driver calls).
 */
public final class StitchingAllocator implements Allocator {
  /** The registry name. */
  public static final String NAME = "stitching";

  /** The physical chunk: 2 MiB, the granularity of {@code cuMemCreate}. */
  public static final long CHUNK_BYTES = 2 * Bytes.MiB;

  /** Default bound of the stitched pool. */
  public static final int DEFAULT_MAX_STITCHED = 64;

  /** The largest {@code max-stitched} accepted. */
  public static final int MAX_MAX_STITCHED = 1 << 20;

  /** Modelled nanoseconds of one driver call (reserve, create, map, unmap, address free). */
  static final long VMM_CALL_NANOS = 20_000;

  /** Default latencies (the class comment says why). */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(50, 20, 50, 20, VMM_CALL_NANOS, VMM_CALL_NANOS);

  /** Where the virtual space starts at the lowest: 2^40 (1 TiB), above every device preset's memory. */
  public static final long VIRTUAL_BASE_BYTES = 1L << 40;

  /** A segment: a reservation with chunks mapped behind it, tiled by blocks. */
  private static final class Segment {
    final int index; // creation order
    final int slot;
    /** The segment's chunks in order: a run of consecutive chunk numbers (see the constructor). */
    final int[] chunks;
    // The blocks by their first chunk and by their last; null where no block starts or ends.
    final Piece[] startAt;
    final Piece[] endAt;

    Segment(int index, int slot, int[] chunks) {
      this.index = index;
      this.slot = slot;
      // A segment takes the lowest chunks not yet reserved, and no chunk is ever unreserved, so its
      // chunks follow one another: the allocated-chunk bits of a block are one range.
      for (int i = 1; i < chunks.length; i++) {
        if (chunks[i] != chunks[0] + i) {
          throw new IllegalStateException("segment " + index + ": chunks " + Arrays.toString(chunks) + " do not follow one another");
        }
      }
      this.chunks = chunks;
      this.startAt = new Piece[chunks.length];
      this.endAt = new Piece[chunks.length];
    }

    /** Returns the block that holds chunk {@code c}, walking back to its first chunk. */
    Piece blockHolding(int c) {
      while (startAt[c] == null) {
        c--;
      }
      return startAt[c];
    }

    /** Records a block's first and last chunk. */
    void place(Piece p) {
      startAt[p.start] = p;
      endAt[p.start + p.length - 1] = p;
    }
  }

  /** A block of a segment, in whole chunks; free when it has no owner. */
  private static final class Piece {
    final Segment segment;
    final int age; // the segment's index, read by the best-fit order without a load of the segment
    int start;
    int length;
    Allocation owner;

    Piece(Segment segment, int start, int length) {
      this.segment = segment;
      this.age = segment.index;
      this.start = start;
      this.length = length;
    }
  }

  /** A stitched block: its reservation and the chunk ranges it maps, in order. */
  private static final class Stitched {
    final int slot;
    final int chunks;
    final Segment[] segments;
    final int[] starts;
    final int[] lengths;
    final int[] physical; // the chunks in mapping order
    Allocation live;
    // While live: the allocated block of each range.
    final Piece[] pieces;

    Stitched(int slot, int chunks, Segment[] segments, int[] starts, int[] lengths) {
      this.slot = slot;
      this.chunks = chunks;
      this.segments = segments;
      this.starts = starts;
      this.lengths = lengths;
      this.pieces = new Piece[starts.length];
      this.physical = new int[chunks];
      for (int i = 0, k = 0; i < starts.length; i++) {
        for (int c = 0; c < lengths[i]; c++) {
          physical[k++] = segments[i].chunks[starts[i] + c];
        }
      }
    }
  }

  /** A live allocation: one block of a segment, or a stitched block. */
  private static final class Allocation {
    final long requested;
    final int chunks;
    long handle;
    long virtualAddress;
    Piece block;
    Stitched stitched;

    Allocation(long requested, int chunks) {
      this.requested = requested;
      this.chunks = chunks;
    }
  }

  private static final int GENERATION_MASK = 0xFF_FFFF; // handles below 2^56

  /**
   * The free blocks in best-fit order: by size, then oldest segment, then lowest chunk. One set per
   * size (in chunks), ordered by segment and chunk, and a bitmap of the sizes that have free blocks,
   * so that a search is a bitmap scan and a lookup in one small set (Note [Free-block index]).
   */
  private static final class FreeIndex {
    private static final Comparator<Piece> BY_PLACE = (a, b) -> {
      if (a.age != b.age) {
        return a.age < b.age ? -1 : 1;
      }
      return Integer.compare(a.start, b.start);
    };

    private final TreeSet<Piece>[] bySize;
    private final BitSet sizes = new BitSet();
    private int count;

    @SuppressWarnings("unchecked")
    FreeIndex(int chunkCount) {
      bySize = (TreeSet<Piece>[]) new TreeSet<?>[chunkCount + 1];
    }

    void add(Piece p) {
      TreeSet<Piece> set = bySize[p.length];
      if (set == null) {
        set = bySize[p.length] = new TreeSet<>(BY_PLACE);
      }
      if (set.isEmpty()) {
        sizes.set(p.length);
      }
      set.add(p);
      count++;
    }

    void remove(Piece p) {
      TreeSet<Piece> set = bySize[p.length];
      set.remove(p);
      if (set.isEmpty()) {
        sizes.clear(p.length);
      }
      count--;
    }

    /** Returns the best-fitting free block of at least {@code n} chunks, or null. */
    Piece bestFit(int n) {
      int size = sizes.nextSetBit(n);
      return size < 0 ? null : bySize[size].first();
    }

    /** Returns the largest free block (the oldest segment's, lowest chunk, among equals), or null. */
    Piece largest() {
      int size = sizes.length() - 1;
      return size < 0 ? null : bySize[size].first();
    }

    boolean contains(Piece p) {
      TreeSet<Piece> set = bySize[p.length];
      return set != null && set.contains(p) && set.ceiling(p) == p;
    }

    int size() {
      return count;
    }
  }

  private final Region region;
  private final int chunkCount;
  private final long poolBytes;
  private final int maxStitched;
  private final int maxSlots;
  private final long virtualBaseBytes;
  private final LatencyModel latency;
  private final AllocatorStats stats = new AllocatorStats();

  private final BitSet reservedChunks = new BitSet();
  // Per physical chunk: whether an allocated block holds it (what a cached stitched block checks).
  private final long[] allocatedChunks;
  private int reservedCount;
  private final BitSet usedSlots = new BitSet();
  private int slotHint; // every slot below it is in use
  private final List<Segment> segments = new ArrayList<>();
  private final FreeIndex freeBlocks;
  private int freeChunks;
  // Live allocations by handle: the low 32 bits index the table, the next 24 count its reuses.
  private Allocation[] table = new Allocation[16];
  private int[] generationOf = new int[16];
  private int[] freeIndices = new int[16];
  private int freeIndexCount;
  private int tableUsed;
  private int liveCount;
  // The stitched pool: least recently freed first, and by size.
  private final LinkedHashSet<Stitched> cached = new LinkedHashSet<>();
  private final Map<Integer, LinkedHashSet<Stitched>> cachedBySize = new HashMap<>();

  private long stitches;
  private long stitchedChunks;
  private long stitchReuses;
  private long stitchedEvicted;
  private long vmmCalls;

  // Per operation: steps and driver calls, charged at its end.
  private long steps;
  private long calls;

  /** Builds the model from its registry context (option {@code max-stitched}). */
  public StitchingAllocator(AllocatorContext context) {
    this(context.region(), maxStitchedOf(context), context.latency(DEFAULT_LATENCY));
  }

  private static int maxStitchedOf(AllocatorContext context) {
    String given = context.optional("max-stitched");
    long n = context.integer("max-stitched", DEFAULT_MAX_STITCHED);
    if (n > MAX_MAX_STITCHED) {
      throw context.bad("max-stitched", given, "at most " + MAX_MAX_STITCHED);
    }
    return (int) n;
  }

  /** Builds the model over {@code region} with the default pool bound and latencies. */
  public StitchingAllocator(Region region) {
    this(region, DEFAULT_MAX_STITCHED, DEFAULT_LATENCY);
  }

  /** Builds the model over {@code region}, keeping at most {@code maxStitched} cached stitched blocks. */
  public StitchingAllocator(Region region, int maxStitched, LatencyModel latency) {
    if (maxStitched < 0 || maxStitched > MAX_MAX_STITCHED) {
      throw new IllegalArgumentException("max-stitched must lie in [0, " + MAX_MAX_STITCHED + "], got " + maxStitched);
    }
    long chunks = region.sizeBytes() / CHUNK_BYTES;
    if (chunks > (Integer.MAX_VALUE - MAX_MAX_STITCHED - 8) / 2) {
      throw new InputException(NAME + ": the region (" + Bytes.format(region.sizeBytes()) + ") holds too many chunks");
    }
    this.region = region;
    this.chunkCount = (int) chunks;
    this.poolBytes = chunks * CHUNK_BYTES;
    this.maxStitched = maxStitched;
    this.maxSlots = 2 * chunkCount + maxStitched + 1;
    long end = region.endBytes();
    long r = end % CHUNK_BYTES;
    long rounded = r == 0 ? end : end > Long.MAX_VALUE - (CHUNK_BYTES - r) ? Long.MAX_VALUE : end + (CHUNK_BYTES - r);
    this.virtualBaseBytes = Math.max(VIRTUAL_BASE_BYTES, rounded);
    if (poolBytes > 0 && maxSlots > (Long.MAX_VALUE - virtualBaseBytes) / poolBytes) {
      throw new InputException(NAME + ": the region (" + Bytes.format(region.sizeBytes())
          + ") is too large for the virtual space (one reservation of the whole pool per slot must end below 2^63 B)");
    }
    this.latency = latency;
    this.freeBlocks = new FreeIndex(chunkCount);
    this.allocatedChunks = new long[(chunkCount + 63) / 64];
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Optional<Region> virtualSpace() {
    return Optional.of(new Region(region.name() + "-virtual", virtualBaseBytes, maxSlots * poolBytes));
  }

  private long slotAddress(int slot) {
    return virtualBaseBytes + slot * poolBytes;
  }

  private int takeSlot() {
    int slot = usedSlots.nextClearBit(slotHint);
    if (slot >= maxSlots) {
      throw new IllegalStateException(NAME + ": more reservations than the virtual space was sized for");
    }
    usedSlots.set(slot);
    slotHint = slot + 1;
    return slot;
  }

  private void releaseSlot(int slot) {
    usedSlots.clear(slot);
    slotHint = Math.min(slotHint, slot);
  }

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long size = request.sizeBytes();
    steps = 0;
    calls = 0;
    if (size > poolBytes) {
      charge(true);
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, size, freeBytes(), largestFreeBytes());
    }
    int n = (int) Bytes.ceilDiv(size, CHUNK_BYTES);
    if (n > freeChunks + chunkCount - reservedCount) {
      charge(true);
      return new AllocOutcome.OutOfMemory(OomReason.NO_MEMORY, size, freeBytes(), largestFreeBytes());
    }
    Allocation a = new Allocation(size, n);
    Piece fit = freeBlocks.bestFit(n);
    Stitched reusable;
    if (fit != null && fit.length == n) {
      serveFromBlock(a, fit);
    } else if ((reusable = cachedStitched(n)) != null) {
      reuse(a, reusable);
    } else if (fit != null) {
      serveFromBlock(a, fit);
    } else if (freeChunks == 0) {
      serveFromBlock(a, createSegment(n));
    } else {
      if (freeChunks < n) {
        createSegment(n - freeChunks);
      }
      stitch(a, n);
    }
    register(a);
    long bytes = n * CHUNK_BYTES;
    stats.onAlloc(size, bytes);
    charge(true);
    return new AllocOutcome.Allocated(a.handle, bytes, Extents.single(a.virtualAddress, bytes));
  }

  private void serveFromBlock(Allocation a, Piece block) {
    a.block = carve(block.segment, block.start, a.chunks, a);
    a.virtualAddress = slotAddress(block.segment.slot) + a.block.start * CHUNK_BYTES;
  }

  /** Reserves and maps a segment of {@code k} new chunks, one free block; returns it. */
  private Piece createSegment(int k) {
    int[] chunks = new int[k];
    int at = 0;
    for (int i = 0; i < k; i++) {
      at = reservedChunks.nextClearBit(at);
      reservedChunks.set(at);
      chunks[i] = at;
    }
    Segment s = new Segment(segments.size(), takeSlot(), chunks);
    segments.add(s);
    Piece p = new Piece(s, 0, k);
    s.place(p);
    freeBlocks.add(p);
    freeChunks += k;
    reservedCount += k;
    stats.reserve(k * CHUNK_BYTES);
    calls += 1 + 2L * k;
    steps++;
    return p;
  }

  /** Stitches free blocks covering {@code n} chunks (the largest first, the last best fit) into a new block for {@code a}. */
  private void stitch(Allocation a, int n) {
    List<Piece> taken = new ArrayList<>();
    int left = n;
    while (left > 0) {
      Piece p = freeBlocks.bestFit(left);
      if (p == null) {
        p = freeBlocks.largest();
      }
      int k = Math.min(left, p.length);
      taken.add(carve(p.segment, p.start, k, a));
      left -= k;
    }
    int m = taken.size();
    Segment[] segs = new Segment[m];
    int[] starts = new int[m];
    int[] lengths = new int[m];
    for (int i = 0; i < m; i++) {
      Piece p = taken.get(i);
      segs[i] = p.segment;
      starts[i] = p.start;
      lengths[i] = p.length;
    }
    Stitched s = new Stitched(takeSlot(), n, segs, starts, lengths);
    taken.toArray(s.pieces);
    s.live = a;
    a.stitched = s;
    a.virtualAddress = slotAddress(s.slot);
    stitches++;
    stitchedChunks += n;
    calls += 1 + (long) n;
  }

  /** Returns a cached stitched block of {@code n} chunks whose ranges are all free, or null. */
  private Stitched cachedStitched(int n) {
    LinkedHashSet<Stitched> ofSize = cachedBySize.get(n);
    if (ofSize == null) {
      return null;
    }
    for (Stitched s : ofSize) {
      steps++;
      if (allFree(s)) {
        return s;
      }
    }
    return null;
  }

  private boolean allFree(Stitched s) {
    for (int c : s.physical) {
      if ((allocatedChunks[c >>> 6] & (1L << c)) != 0) {
        return false;
      }
    }
    return true;
  }

  private void reuse(Allocation a, Stitched s) {
    uncache(s);
    for (int i = 0; i < s.starts.length; i++) {
      s.pieces[i] = carve(s.segments[i], s.starts[i], s.lengths[i], a);
    }
    s.live = a;
    a.stitched = s;
    a.virtualAddress = slotAddress(s.slot);
    stitchReuses++;
  }

  private void uncache(Stitched s) {
    cached.remove(s);
    LinkedHashSet<Stitched> ofSize = cachedBySize.get(s.chunks);
    ofSize.remove(s);
    if (ofSize.isEmpty()) {
      cachedBySize.remove(s.chunks);
    }
  }

  /**
   * Cuts chunks {@code [start, start + length)} of a segment, which lie in one free block, out of
   * it for {@code owner}; the rest of the block stays free. Returns the new allocated block.
   */
  private Piece carve(Segment seg, int start, int length, Allocation owner) {
    Piece p = seg.blockHolding(start);
    freeBlocks.remove(p);
    int end = p.start + p.length;
    Piece mid;
    if (p.start < start) {
      p.length = start - p.start;
      seg.place(p);
      freeBlocks.add(p);
      mid = new Piece(seg, start, length);
    } else {
      mid = p;
      mid.length = length;
    }
    seg.place(mid);
    if (end > start + length) {
      Piece right = new Piece(seg, start + length, end - start - length);
      seg.place(right);
      freeBlocks.add(right);
    }
    mid.owner = owner;
    markAllocated(seg, start, length, true);
    freeChunks -= length;
    steps++;
    return mid;
  }

  /**
   * Marks the chunks at positions [start, start + length) of {@code seg} allocated or free, a word
   * at a time (allocations average dozens of chunks; a segment's chunks follow one another).
   */
  private void markAllocated(Segment seg, int start, int length, boolean allocated) {
    setBits(allocatedChunks, seg.chunks[start], seg.chunks[start] + length, allocated);
  }

  /** Sets ({@code value}) or clears bits [from, to) of {@code words}, bit i at {@code words[i / 64]}, bit i % 64. */
  static void setBits(long[] words, int from, int to, boolean value) {
    if (from >= to) {
      return;
    }
    int first = from >>> 6;
    int last = (to - 1) >>> 6;
    long firstMask = -1L << from; // shifts take the count modulo 64
    long lastMask = -1L >>> -to;
    if (first == last) {
      apply(words, first, firstMask & lastMask, value);
      return;
    }
    apply(words, first, firstMask, value);
    Arrays.fill(words, first + 1, last, value ? -1L : 0L);
    apply(words, last, lastMask, value);
  }

  private static void apply(long[] words, int w, long mask, boolean value) {
    words[w] = value ? words[w] | mask : words[w] & ~mask;
  }

  /** Returns an allocated block to its segment's free blocks, merged with free neighbours. */
  private void release(Piece p) {
    p.owner = null;
    freeChunks += p.length;
    Segment seg = p.segment;
    markAllocated(seg, p.start, p.length, false);
    Piece l = p.start > 0 ? seg.endAt[p.start - 1] : null;
    if (l != null && l.owner == null) {
      freeBlocks.remove(l);
      seg.startAt[p.start] = null;
      seg.endAt[p.start - 1] = null;
      l.length += p.length;
      seg.place(l);
      p = l;
    }
    int next = p.start + p.length;
    Piece h = next < seg.chunks.length ? seg.startAt[next] : null;
    if (h != null && h.owner == null) {
      freeBlocks.remove(h);
      seg.startAt[next] = null;
      seg.endAt[next - 1] = null;
      p.length += h.length;
      seg.place(p);
    }
    freeBlocks.add(p);
    steps++;
  }

  /** Puts a new allocation in the table and gives it its handle. */
  private void register(Allocation a) {
    int index;
    if (freeIndexCount > 0) {
      index = freeIndices[--freeIndexCount];
    } else {
      index = tableUsed++;
      if (index == table.length) {
        table = Arrays.copyOf(table, index * 2);
        generationOf = Arrays.copyOf(generationOf, index * 2);
        freeIndices = Arrays.copyOf(freeIndices, index * 2);
      }
    }
    int generation = (generationOf[index] + 1) & GENERATION_MASK;
    generationOf[index] = generation;
    table[index] = a;
    a.handle = ((long) generation << 32) | index;
    liveCount++;
  }

  @Override
  public void free(long handle) {
    Allocation a = checked(handle);
    int index = (int) handle;
    table[index] = null;
    freeIndices[freeIndexCount++] = index;
    liveCount--;
    steps = 0;
    calls = 0;
    if (a.stitched == null) {
      release(a.block);
    } else {
      Stitched s = a.stitched;
      for (int i = 0; i < s.starts.length; i++) {
        release(s.pieces[i]);
        s.pieces[i] = null;
      }
      s.live = null;
      cached.add(s);
      cachedBySize.computeIfAbsent(s.chunks, k -> new LinkedHashSet<>()).add(s);
      if (cached.size() > maxStitched) {
        Stitched oldest = cached.iterator().next();
        uncache(oldest);
        releaseSlot(oldest.slot);
        stitchedEvicted++;
        calls += oldest.chunks + 1L;
      }
    }
    stats.onFree(a.requested, a.chunks * CHUNK_BYTES);
    charge(false);
  }

  /** Charges the operation's steps and driver calls, saturating at {@code Long.MAX_VALUE}. */
  private void charge(boolean alloc) {
    vmmCalls += calls;
    long base = alloc ? latency.allocBaseNanos() : latency.freeBaseNanos();
    long perStep = alloc ? latency.allocPerStepNanos() : latency.freePerStepNanos();
    long perCall = alloc ? latency.deviceAllocNanos() : latency.deviceFreeNanos();
    stats.addModelledNanos(saturatingAdd(base, saturatingAdd(saturatingTimes(perStep, steps), saturatingTimes(perCall, calls))));
  }

  private static long saturatingTimes(long a, long b) {
    return b != 0 && a > Long.MAX_VALUE / b ? Long.MAX_VALUE : a * b;
  }

  private static long saturatingAdd(long a, long b) {
    long s = a + b;
    return s < 0 ? Long.MAX_VALUE : s;
  }

  private Allocation checked(long handle) {
    long index = handle & 0xFFFF_FFFFL;
    Allocation a = handle >= 0 && index < tableUsed ? table[(int) index] : null;
    if (a == null || a.handle != handle) {
      throw new AllocatorMisuseException(NAME + ": handle " + handle + " is not a live allocation (double free?)");
    }
    return a;
  }

  @Override
  public Extents extentsOf(long handle) {
    Allocation a = checked(handle);
    return Extents.single(a.virtualAddress, a.chunks * CHUNK_BYTES);
  }

  /** Returns the physical chunks of a live allocation in mapping order: chunk i backs its i-th 2 MiB. */
  public int[] chunksOf(long handle) {
    Allocation a = checked(handle);
    int[] out = new int[a.chunks];
    int i = 0;
    if (a.stitched == null) {
      for (int c = 0; c < a.chunks; c++) {
        out[i++] = a.block.segment.chunks[a.block.start + c];
      }
    } else {
      Stitched s = a.stitched;
      for (int r = 0; r < s.starts.length; r++) {
        for (int c = 0; c < s.lengths[r]; c++) {
          out[i++] = s.segments[r].chunks[s.starts[r] + c];
        }
      }
    }
    return out;
  }

  /** Returns whether a live allocation is served by a stitched block. */
  public boolean isStitched(long handle) {
    return checked(handle).stitched != null;
  }

  /** Returns the number of chunks in the region. */
  public int chunkCount() {
    return chunkCount;
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  /** Returns the bytes of the free chunks of the segments and of the chunks not yet reserved, O(1). */
  @Override
  public long freeBytes() {
    return (freeChunks + (long) (chunkCount - reservedCount)) * CHUNK_BYTES;
  }

  /** Returns {@link #freeBytes()}: stitching serves any request up to every free chunk, O(1). */
  @Override
  public long largestFreeBytes() {
    return freeBytes();
  }

  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public Map<String, Long> extraMetrics() {
    Map<String, Long> out = new LinkedHashMap<>();
    out.put("stitches", stitches);
    out.put("stitched_chunks", stitchedChunks);
    out.put("stitched_bytes", stitchedChunks * CHUNK_BYTES);
    out.put("stitch_reuses", stitchReuses);
    out.put("stitched_cached", (long) cached.size());
    out.put("stitched_evicted", stitchedEvicted);
    out.put("segments", (long) segments.size());
    out.put("vmm_calls", vmmCalls);
    return out;
  }

  /**
   * Checks that every reserved chunk belongs to one segment, that each segment's blocks tile it with
   * no two free blocks adjacent, that the free blocks and the free-block index agree, that every
   * allocated block belongs to one live allocation whose chunks it adds up to, that the stitched
   * pool and the virtual slots agree with the stitched blocks, and that the gauges match.
   */
  @Override
  public void checkInvariants() {
    boolean[] seen = new boolean[chunkCount];
    int reserved = 0;
    int free = 0;
    int freeBlockCount = 0;
    IdentityHashMap<Allocation, Integer> chunksOfOwner = new IdentityHashMap<>();
    BitSet slots = new BitSet();
    for (Segment seg : segments) {
      claimSlot(slots, seg.slot, "segment");
      for (int c : seg.chunks) {
        if (c < 0 || c >= chunkCount || seen[c] || !reservedChunks.get(c)) {
          throw new InvariantViolation(NAME, "chunk " + c + " is outside the region, in two segments or not marked reserved");
        }
        seen[c] = true;
      }
      reserved += seg.chunks.length;
      int at = 0;
      boolean previousFree = false;
      int boundaries = 0;
      for (int c = 0; c < seg.chunks.length; c++) {
        boundaries += (seg.startAt[c] != null ? 1 : 0) + (seg.endAt[c] != null ? 1 : 0);
      }
      int blockCount = 0;
      while (at < seg.chunks.length) {
        Piece p = seg.startAt[at];
        if (p == null || p.segment != seg || p.start != at || p.length <= 0 || at + p.length > seg.chunks.length
            || seg.endAt[at + p.length - 1] != p) {
          throw new InvariantViolation(NAME, "segment " + seg.slot + ": the blocks do not tile it from chunk " + at);
        }
        at += p.length;
        blockCount++;
        boolean isFree = p.owner == null;
        for (int c = p.start; c < p.start + p.length; c++) {
          int phys = seg.chunks[c];
          if (((allocatedChunks[phys >>> 6] & (1L << phys)) != 0) == isFree) {
            throw new InvariantViolation(NAME, "segment " + seg.slot + ": chunk " + c + " is marked " + (isFree ? "allocated" : "free")
                + " in a " + (isFree ? "free" : "allocated") + " block");
          }
        }
        if (isFree) {
          if (previousFree) {
            throw new InvariantViolation(NAME, "segment " + seg.slot + ": two adjacent free blocks at chunk " + p.start);
          }
          if (!freeBlocks.contains(p)) {
            throw new InvariantViolation(NAME, "segment " + seg.slot + ": free block at chunk " + p.start + " is not indexed");
          }
          free += p.length;
          freeBlockCount++;
        } else {
          if (!isLive(p.owner)) {
            throw new InvariantViolation(NAME, "segment " + seg.slot + ": block at chunk " + p.start + " belongs to no live allocation");
          }
          chunksOfOwner.merge(p.owner, p.length, Integer::sum);
        }
        previousFree = isFree;
      }
      if (boundaries != 2 * blockCount) {
        throw new InvariantViolation(NAME, "segment " + seg.slot + ": " + boundaries + " block ends recorded for " + blockCount + " blocks");
      }
    }
    if (reserved != reservedCount || reservedChunks.cardinality() != reserved) {
      throw new InvariantViolation(NAME, reserved + " chunks in segments, " + reservedCount + " counted reserved");
    }
    if (free != freeChunks || freeBlockCount != freeBlocks.size()) {
      throw new InvariantViolation(NAME, free + " free chunks in " + freeBlockCount + " blocks, but " + freeChunks
          + " counted and " + freeBlocks.size() + " indexed");
    }
    long allocated = 0;
    long requested = 0;
    long liveStitched = 0;
    int liveFound = 0;
    for (Allocation a : liveAllocations()) {
      liveFound++;
      if (a.chunks <= 0 || a.requested <= (a.chunks - 1) * CHUNK_BYTES || a.requested > a.chunks * CHUNK_BYTES) {
        throw new InvariantViolation(NAME, "handle " + a.handle + " holds " + a.chunks + " chunks for " + a.requested + " B");
      }
      if (chunksOfOwner.getOrDefault(a, 0) != a.chunks) {
        throw new InvariantViolation(NAME, "handle " + a.handle + " owns " + chunksOfOwner.get(a) + " chunks, expected " + a.chunks);
      }
      if ((a.block == null) == (a.stitched == null)) {
        throw new InvariantViolation(NAME, "handle " + a.handle + " is neither or both a block and a stitched block");
      }
      if (a.stitched == null) {
        if (a.block.owner != a || a.virtualAddress != slotAddress(a.block.segment.slot) + a.block.start * CHUNK_BYTES) {
          throw new InvariantViolation(NAME, "handle " + a.handle + ": its block or virtual address disagrees");
        }
      } else {
        Stitched s = a.stitched;
        liveStitched++;
        claimSlot(slots, s.slot, "stitched block");
        int sum = 0;
        for (int i = 0; i < s.starts.length; i++) {
          Piece p = s.segments[i].startAt[s.starts[i]];
          if (p == null || p.owner != a || p.length != s.lengths[i] || s.pieces[i] != p) {
            throw new InvariantViolation(NAME, "handle " + a.handle + ": stitched range " + i + " is not its block");
          }
          sum += s.lengths[i];
        }
        if (s.live != a || sum != a.chunks || s.chunks != a.chunks || a.virtualAddress != slotAddress(s.slot)) {
          throw new InvariantViolation(NAME, "handle " + a.handle + ": its stitched block disagrees");
        }
      }
      allocated += a.chunks * CHUNK_BYTES;
      requested += a.requested;
    }
    int bySize = 0;
    for (Map.Entry<Integer, LinkedHashSet<Stitched>> e : cachedBySize.entrySet()) {
      for (Stitched s : e.getValue()) {
        if (s.chunks != e.getKey() || !cached.contains(s)) {
          throw new InvariantViolation(NAME, "the stitched pool's size index disagrees with the pool");
        }
        bySize++;
      }
    }
    if (bySize != cached.size() || cached.size() > maxStitched) {
      throw new InvariantViolation(NAME, cached.size() + " cached stitched blocks, " + bySize + " indexed, bound " + maxStitched);
    }
    for (Stitched s : cached) {
      int sum = 0;
      for (int length : s.lengths) {
        sum += length;
      }
      if (s.live != null || sum != s.chunks || Arrays.stream(s.pieces).anyMatch(x -> x != null)) {
        throw new InvariantViolation(NAME, "a cached stitched block is live or its ranges do not add up");
      }
      claimSlot(slots, s.slot, "cached stitched block");
    }
    if (usedSlots.nextClearBit(0) < slotHint) {
      throw new InvariantViolation(NAME, "slot " + usedSlots.nextClearBit(0) + " is free below the search hint " + slotHint);
    }
    if (!slots.equals(usedSlots)) {
      throw new InvariantViolation(NAME, "virtual slots in use " + usedSlots + " but reservations hold " + slots);
    }
    if (liveStitched > stitches) {
      throw new InvariantViolation(NAME, liveStitched + " live stitched blocks but only " + stitches + " stitched");
    }
    if (liveFound != liveCount || liveCount + freeIndexCount != tableUsed) {
      throw new InvariantViolation(NAME, liveFound + " live allocations in the table, " + liveCount + " counted, "
          + freeIndexCount + " free entries of " + tableUsed);
    }
    stats.check(NAME, reservedCount * CHUNK_BYTES, allocated, requested, liveCount);
  }

  private boolean isLive(Allocation a) {
    long index = a.handle & 0xFFFF_FFFFL;
    return index < tableUsed && table[(int) index] == a;
  }

  /** Returns the live allocations in table order. */
  private List<Allocation> liveAllocations() {
    List<Allocation> out = new ArrayList<>(liveCount);
    for (int i = 0; i < tableUsed; i++) {
      if (table[i] != null) {
        out.add(table[i]);
      }
    }
    return out;
  }

  private static void claimSlot(BitSet slots, int slot, String what) {
    if (slots.get(slot)) {
      throw new InvariantViolation(NAME, what + " shares virtual slot " + slot);
    }
    slots.set(slot);
  }

  /**
   * Returns the region as one segment of chunks in address order, each active with its share of its
   * allocation's requested bytes (filled in mapping order) or inactive (free in a segment, or not
   * reserved), and the tail shorter than a chunk as an inactive block.
   */
  @Override
  public List<SegmentLayout> layout() {
    long[] requestedOfChunk = new long[chunkCount];
    boolean[] allocatedChunk = new boolean[chunkCount];
    for (Allocation a : liveAllocations()) {
      int[] chunks = chunksOf(a.handle);
      for (int i = 0; i < chunks.length; i++) {
        allocatedChunk[chunks[i]] = true;
        requestedOfChunk[chunks[i]] = Math.max(0, Math.min(CHUNK_BYTES, a.requested - i * CHUNK_BYTES));
      }
    }
    List<SegmentLayout.Block> blocks = new ArrayList<>(chunkCount + 1);
    for (int c = 0; c < chunkCount; c++) {
      blocks.add(new SegmentLayout.Block(
          region.baseBytes() + c * CHUNK_BYTES,
          CHUNK_BYTES,
          requestedOfChunk[c],
          allocatedChunk[c] ? SegmentLayout.State.ACTIVE_ALLOCATED : SegmentLayout.State.INACTIVE));
    }
    long tail = region.sizeBytes() - poolBytes;
    if (tail > 0) {
      blocks.add(new SegmentLayout.Block(region.baseBytes() + poolBytes, tail, 0, SegmentLayout.State.INACTIVE));
    }
    return List.of(new SegmentLayout(region.baseBytes(), region.sizeBytes(), "stitching-chunks", 0, false, blocks));
  }

  /** Returns the cached stitched blocks' sizes in chunks, least recently freed first (for tests). */
  List<Integer> cachedSizes() {
    List<Integer> out = new ArrayList<>();
    for (Iterator<Stitched> it = cached.iterator(); it.hasNext(); ) {
      out.add(it.next().chunks);
    }
    return out;
  }
}

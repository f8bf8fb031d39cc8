package kvsim.alloc.caching;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.AllocatorStats;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.devicemodel.Region;

/**
 * PyTorch's CUDA caching allocator (the "native" backend), one device allocator, following
 * PyTorch's {@code c10/cuda/CUDACachingAllocator.cpp} as read at pytorch/pytorch @eb42ad6 (the
 * 2.2/2.3 era) rule by rule, so that a sequence of malloc/free calls gives the same segments,
 * blocks and addresses as the real allocator. Functions named below without a file are that file's.
 * What it models of later versions (the options {@code large_segment_size_mb}, {@code
 * per_process_memory_fraction} and {@code throw_on_cudamalloc_oom}, the segment-age {@link
 * TieBreak}) was read in the same file of 2026 main, as copied in mara-werils/pytorch @20c4398.
 *
 * <ul>
 *   <li>Requests are rounded ({@code round_size}): below 512 B to 512 B; with {@code
 *       roundup_power2_divisions} d &gt; 1 for the size's interval and a size &gt; 512·d, up to the
 *       next of d equal steps between powers of two; otherwise up to a multiple of 512 B.
 *   <li>Rounded sizes up to 1 MiB use the small pool, larger ones the large pool ({@code malloc});
 *       free blocks of a pool are ordered by (stream, size, tie-break) ({@link TieBreak}).
 *   <li>A request takes the best fit of its own stream ({@code get_free_block}); an oversize block
 *       (at least {@code max_split_size}) serves only oversize requests, and only if it exceeds the
 *       request by less than {@code max_non_split_rounding_mb}.
 *   <li>On a miss, new memory comes from the driver ({@code alloc_block}, {@code
 *       get_allocation_size}): a segment of 2 MiB (small), 20 MiB (1-10 MiB) or the request rounded
 *       up to 2 MiB; with expandable segments, pages are mapped at the lowest address that fits
 *       ({@code try_allocate_expandable_block}).
 *   <li>If the driver has no room, the retry ladder of {@code malloc} runs: garbage collection (if
 *       on), attempt 1, {@code release_available_cached_blocks} + attempt 2 (only with {@code
 *       max_split_size}), {@code empty_cache} + attempt 3 (counted in {@code num_alloc_retries}),
 *       then OOM ({@code num_ooms}).
 *   <li>A found block is split ({@code should_split}) when the remainder is at least 512 B (small
 *       pool or expandable segments) or more than 1 MiB (large pool, non-oversize request); the
 *       allocation takes the low part.
 *   <li>A freed block merges with its free neighbours, previous first ({@code free_block}), so no
 *       two adjacent blocks of a segment are both free. Nothing goes back to the driver on free.
 *   <li>Memory goes back only through {@code release_available_cached_blocks}, {@code empty_cache}
 *       ({@code release_cached_blocks}: whole classic segments; expandable pages through {@code
 *       unmap_block}) and garbage collection ({@code garbage_collect_cached_blocks}, only with a
 *       per-process memory fraction).
 *   <li>Statistics are those of {@code torch.cuda.memory_stats()}, see {@link TorchStats} ({@link
 *       #torchStats()}). The SPI's gauges ({@link #stats()}) are kept beside them: reserved bytes
 *       are {@code total_allocated_memory}, allocated and requested bytes and the live count the
 *       {@code all} values of {@code allocated_bytes}, {@code requested_bytes} and {@code
 *       allocation}.
 * </ul>
 *
 * <p>Not modelled: private pools (CUDA graphs, MemPool), cross-stream frees ({@code record_stream};
 * every free completes at once), free-memory callbacks, IPC; none of them decides a placement in
 * the default pools. Options come from the {@code torch-alloc-conf} option in PyTorch syntax
 * ({@link TorchAllocConf}) and {@code tie-break} ({@code address} | {@code segment-age}).
 *
 * <p>Note [Device size]: the "total device memory" of {@code set_per_process_memory_fraction} (the
 * memory fraction) and of an expandable segment's reservation (1.125 × it) is the region this
 * model manages, since that is all the device it sees.
 *
 * <p>Note [Latency]: defaults 1 µs per malloc and 0.5 µs per free served from the cache (the
 * host-side cost of a mutex, a tree search and stats updates), 64 µs per {@code cudaMalloc} or page
 * map and 84 µs per {@code cudaFree} or unmap; a calibration file replaces them. The two driver
 * costs are what {@code kvsim gpu calibrate} measured on an NVIDIA H100 80GB HBM3 (driver
 * 580.159.04, 2026-11-27), the median of {@code cuMemAlloc}'s and {@code cuMemFree}'s per-size
 * medians over segments of 2 MiB to 1 GiB: {@code results/calibration/h100-80-measured.json}
 * ({@code latency.pytorch-caching}). The earlier defaults, 100 and 200 µs, were estimates, 1.6 and
 * 2.4 times what that H100 measured (an NVIDIA H200 measured 51 and 67 µs). Two things this leaves out:
 * that device was idle, so its {@code cudaFree} had no queued kernels to wait for; and above 128 MiB
 * both calls grow with the size (2 GiB: 394 µs and 1.46 ms on the H100), which one cost per call
 * does not model.
 */
public final class CachingAllocator implements TorchCachingModel {
  /**
   * Default latencies: 1 µs per allocation and 0.5 µs per free on the cached path, 64 µs per
   * {@code cudaMalloc} and 84 µs per {@code cudaFree}, as measured on an H100 (Note [Latency]); a
   * calibration file measured on a real GPU replaces them.
   */
  public static final LatencyModel DEFAULT_LATENCY = new LatencyModel(1_000, 0, 500, 0, 64_000, 84_000);

  // The registry name, PyTorch's size constants (kMinBlockSize and the rest) and MAX_REQUEST_BYTES
  // are declared in TorchCachingModel, so that snapshot code can use them without naming this
  // class. The fields below are package-private for the classes that read this model's state:
  // SnapshotRestore, FreeSpaceAnalysis and CachingInvariantChecker; only this class's policy and
  // SnapshotRestore change them.

  private static final AllocatorListener NO_LISTENER = new AllocatorListener() {};

  final TorchAllocConf conf;
  private final TieBreak tieBreak;
  final DeviceDriver driver;
  private final long deviceTotalBytes;
  final long maxSplitSize;
  final boolean setFraction;
  final long allowedMemoryMaximum;
  private final boolean gcActive;
  final BlockPool smallPool;
  final BlockPool largePool;
  final TreeMap<Long, Segment> segments = new TreeMap<>();
  final TorchStats torchStats = new TorchStats();
  final AllocatorStats stats = new AllocatorStats();
  private final LatencyModel latency;
  private final Block searchKey = new Block(0);
  private AllocatorListener listener = NO_LISTENER;
  private final SnapshotRestore snapshots = new SnapshotRestore(this);
  private final FreeSpaceAnalysis freeSpace = new FreeSpaceAnalysis(this);

  /** Bytes of the segments held as one whole free block (Note [Releasable segments]). */
  long releasableBytes;
  long nextSerial;
  private boolean hardReject;
  private long[] streamsSeen = new long[4];
  private int streamCount;

  Block[] byHandle = new Block[1024];
  private int[] freeHandles = new int[1024];
  int freeHandleCount;
  int handleHigh;

  /** Builds the model from its registry context: options {@code torch-alloc-conf} and {@code tie-break}. */
  public CachingAllocator(AllocatorContext context) {
    this(conf(context), tieBreak(context), new RegionDriver(context.region()), context.region().sizeBytes(), context.latency(DEFAULT_LATENCY));
  }

  /** Builds a model over a region with the given options. */
  public CachingAllocator(TorchAllocConf conf, TieBreak tieBreak, Region region) {
    this(conf, tieBreak, new RegionDriver(region), region.sizeBytes());
  }

  /**
   * Builds a model on any driver; {@code deviceTotalBytes} is the device size for the memory
   * fraction and expandable reservations.
   */
  public CachingAllocator(TorchAllocConf conf, TieBreak tieBreak, DeviceDriver driver, long deviceTotalBytes) {
    this(conf, tieBreak, driver, deviceTotalBytes, DEFAULT_LATENCY);
  }

  /** Builds a model on any driver with the given latency model. */
  public CachingAllocator(TorchAllocConf conf, TieBreak tieBreak, DeviceDriver driver, long deviceTotalBytes, LatencyModel latency) {
    // A device above 1 EiB would let sizes derived from it (reservations, the gauges' rounded sizes)
    // leave the range of a long.
    if (deviceTotalBytes > MAX_REQUEST_BYTES) {
      throw new IllegalArgumentException(
          "a device of " + deviceTotalBytes + " B is larger than the " + MAX_REQUEST_BYTES + " B (1 EiB) this model computes with");
    }
    this.conf = conf;
    this.tieBreak = tieBreak;
    this.driver = driver;
    this.deviceTotalBytes = deviceTotalBytes;
    this.maxSplitSize = conf.maxSplitSizeBytes();
    this.setFraction = conf.fractionSet();
    this.allowedMemoryMaximum = setFraction ? (long) (conf.perProcessMemoryFraction() * (double) deviceTotalBytes) : Long.MAX_VALUE;
    this.gcActive = setFraction && conf.garbageCollectionThreshold() > 0.0;
    this.smallPool = new BlockPool(true, tieBreak);
    this.largePool = new BlockPool(false, tieBreak);
    this.latency = latency;
    torchStats.maxSplitSize = maxSplitSize == TorchAllocConf.UNLIMITED ? -1 : maxSplitSize;
    Arrays.fill(freeHandles, -1);
  }

  private static TorchAllocConf conf(AllocatorContext context) {
    String text = context.string("torch-alloc-conf", "");
    try {
      return TorchAllocConf.parse(text);
    } catch (IllegalArgumentException e) {
      throw context.bad("torch-alloc-conf", text, e.getMessage());
    }
  }

  private static TieBreak tieBreak(AllocatorContext context) {
    String text = context.string("tie-break", DEFAULT_TIE_BREAK.label());
    try {
      return TieBreak.of(text);
    } catch (IllegalArgumentException e) {
      throw context.bad("tie-break", text, e.getMessage());
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Returns the options in force. */
  @Override
  public TorchAllocConf conf() {
    return conf;
  }

  /** Returns the tie-break in force. */
  public TieBreak tieBreak() {
    return tieBreak;
  }

  /** Returns the device size used for the memory fraction and expandable reservations. */
  @Override
  public long deviceTotalBytes() {
    return deviceTotalBytes;
  }

  /** Returns the driver this model draws segments from. */
  public DeviceDriver driver() {
    return driver;
  }

  /** Returns PyTorch's statistics ({@code torch.cuda.memory_stats()}). */
  @Override
  public TorchStats torchStats() {
    return torchStats;
  }

  @Override
  public AllocatorStats stats() {
    return stats;
  }

  /**
   * total_allocated_memory: bytes held from the driver (classic segments + mapped pages), which
   * is the reserved-bytes gauge.
   */
  long totalAllocatedMemory() {
    return stats.reservedBytes();
  }

  @Override
  public void setListener(AllocatorListener listener) {
    this.listener = listener == null ? NO_LISTENER : listener;
  }

  // ---------------------------------------------------------------- policy (pure functions)

  /**
   * round_size. Exact for every size; throws ArithmeticException where the rounded size exceeds
   * {@code Long.MAX_VALUE} (sizes within 511 B of it, or from 2^62 with divisions), sizes {@link
   * #allocate} refuses first.
   */
  @Override
  public long roundSize(long sizeBytes) {
    if (sizeBytes < MIN_BLOCK_BYTES) {
      return MIN_BLOCK_BYTES;
    }
    int divisions = conf.divisionsFor(sizeBytes);
    if (divisions > 1 && sizeBytes > MIN_BLOCK_BYTES * divisions) {
      return roundupPower2NextDivision(sizeBytes, divisions);
    }
    return ceilTo(sizeBytes, MIN_BLOCK_BYTES);
  }

  /**
   * roundup_power2_next_division. Exact: for sizes from 2^62 the next power of two or division is
   * past {@code Long.MAX_VALUE} and this throws ArithmeticException; {@link #allocate} refuses such
   * sizes before rounding.
   */
  private static long roundupPower2NextDivision(long size, int divisions) {
    if (Long.bitCount(size) == 1) {
      return size;
    }
    long floor = Long.highestOneBit(size);
    long step = floor >>> (31 - Integer.numberOfLeadingZeros(divisions));
    if (step == 0) {
      return Math.multiplyExact(floor, 2);
    }
    long down = size & ~(step - 1);
    return down == size ? size : Math.addExact(down, step);
  }

  /** get_allocation_size: the size of a new classic segment for a rounded size. */
  public long allocationSize(long roundedBytes) {
    if (roundedBytes <= SMALL_SIZE_BYTES) {
      return SMALL_BUFFER_BYTES;
    }
    if (roundedBytes < MIN_LARGE_ALLOC_BYTES) {
      return conf.largeSegmentSizeBytes();
    }
    return ceilTo(roundedBytes, ROUND_LARGE_BYTES);
  }

  private boolean shouldSplit(Block block, long size) {
    long remaining = block.size - size;
    if (block.segment.pool.small || conf.expandableSegments()) {
      return remaining >= MIN_BLOCK_BYTES;
    }
    return size < maxSplitSize && remaining > SMALL_SIZE_BYTES;
  }

  /**
   * Rounds {@code x} (>= 0) up to a multiple of {@code multiple} (> 0) without forming {@code x +
   * multiple - 1}, which overflows for a large x or a large multiple (a {@code large_segment_size_mb}
   * near 2^43); throws ArithmeticException if the multiple itself is past {@code Long.MAX_VALUE}.
   */
  private static long ceilTo(long x, long multiple) {
    long r = x % multiple;
    return r == 0 ? x : Math.addExact(x, multiple - r);
  }

  // ---------------------------------------------------------------- malloc

  @Override
  public AllocOutcome allocate(AllocRequest request) {
    long orig = request.sizeBytes();
    long stream = request.stream();
    stats.addModelledNanos(latency.allocBaseNanos());
    if (orig >= MAX_REQUEST_BYTES) {
      // Before any rounding: this bound keeps round_size and get_allocation_size below 2^61.
      torchStats.numOoms++;
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, orig, freeBytes(), largestFreeBytes());
    }
    noteStream(stream);
    long size = roundSize(orig);
    BlockPool pool = size <= SMALL_SIZE_BYTES ? smallPool : largePool;
    Block block = getFreeBlock(pool, stream, size);
    if (block == null) {
      block = allocateNew(pool, stream, size);
      if (block == null) {
        torchStats.numOoms++;
        return AllocOutcome.OutOfMemory.classify(orig, freeBytes(), largestFreeBytes());
      }
    }
    block = allocFoundBlock(block, size, orig, shouldSplit(block, size));
    return new AllocOutcome.Allocated(block.handle, block.size, Extents.single(block.address, block.size));
  }

  /** The cache miss path of {@code malloc}: GC, then attempts 1-3 of the retry ladder. */
  private Block allocateNew(BlockPool pool, long stream, long size) {
    long allocSize = allocationSize(size);
    hardReject = false;
    if (gcActive) {
      garbageCollectCachedBlocks();
    }
    Block b = allocBlock(pool, stream, size, allocSize, false);
    if (b == null && !hardReject && releaseAvailableCachedBlocks(pool, stream, size)) {
      b = allocBlock(pool, stream, size, allocSize, false);
    }
    if (b == null && !hardReject) {
      releaseCachedBlocks();
      b = allocBlock(pool, stream, size, allocSize, true);
    }
    return b;
  }

  Block key(long stream, long size) {
    Block k = searchKey;
    k.stream = stream;
    k.size = size;
    k.address = Long.MIN_VALUE;
    return k;
  }

  /** get_free_block, expandable blocks included; removes and returns the block, or null if none. */
  private Block getFreeBlock(BlockPool pool, long stream, long size) {
    if (gcActive) {
      pool.getFreeBlocksCallCount++;
    }
    Block b = pool.blocks.ceiling(key(stream, size));
    if (b == null || b.stream != stream) {
      return null;
    }
    if (b.expandable()) {
      // get_free_block: prefer the next block in pool order while its reach is strictly smaller.
      Block next = pool.blocks.higher(b);
      while (b.expandable() && next != null && next.stream == stream && reach(next) < reach(b)) {
        b = next;
        next = pool.blocks.higher(next);
      }
    }
    if (size < maxSplitSize && b.size >= maxSplitSize) {
      return null;
    }
    // b.size >= size + max_non_split_rounding, as a difference: the sum overflows for a rounding
    // near Long.MAX_VALUE (max_non_split_rounding_mb up to 2^43), where PyTorch's unsigned sum does not.
    if (size >= maxSplitSize && b.size - size >= conf.maxNonSplitRoundingBytes()) {
      return null;
    }
    pool.remove(b);
    return b;
  }

  private static long reach(Block b) {
    return b.size + (b.next != null && !b.next.mapped ? b.next.size : 0);
  }

  /** alloc_block: new memory from the driver; the block is in no pool. */
  private Block allocBlock(BlockPool pool, long stream, long size, long allocSize, boolean isRetry) {
    if (isRetry) {
      torchStats.numAllocRetries++;
    }
    // total + allocSize > allowed, as a difference: a large segment size can make the sum wrap.
    if (setFraction && allocSize > allowedMemoryMaximum - totalAllocatedMemory()) {
      if (conf.throwOnCudamallocOom()) {
        torchStats.numOomRejections++;
        hardReject = true;
      }
      return null;
    }
    if (conf.expandableSegments()) {
      return tryAllocateExpandableBlock(pool, stream, size);
    }
    long ptr = driver.malloc(allocSize, stream);
    if (ptr < 0) {
      return null;
    }
    stats.addModelledNanos(latency.deviceAllocNanos());
    stats.reserve(allocSize);
    Segment seg = new Segment(ptr, allocSize, stream, pool, false, 0, nextSerial++);
    putSegment(seg);
    Block b = new Block(seg, ptr, allocSize);
    seg.head = b;
    segmentChanged(seg);
    torchStats.increase(TorchStats.Kind.SEGMENT, pool.small, 1);
    torchStats.increase(TorchStats.Kind.RESERVED_BYTES, pool.small, allocSize);
    if (allocSize >= maxSplitSize) {
      torchStats.oversizeSegment(true);
    }
    torchStats.numDeviceAlloc++;
    listener.segmentAlloc(ptr, allocSize, stream);
    return b;
  }

  /** alloc_found_block, with should_split's result and the inactive_split statistics. */
  private Block allocFoundBlock(Block block, long size, long orig, boolean split) {
    BlockPool pool = block.segment.pool;
    boolean small = pool.small;
    boolean alreadySplit = block.isSplit();
    boolean expandable = block.expandable();
    if (split) {
      Block remaining = block;
      block = new Block(remaining.segment, remaining.address, size);
      block.splice(remaining.prev, remaining);
      remaining.address += size;
      remaining.size -= size;
      pool.insert(remaining);
      if (alreadySplit && !expandable) {
        torchStats.decrease(TorchStats.Kind.INACTIVE_SPLIT_BYTES, small, size);
      } else if (!expandable) {
        torchStats.increase(TorchStats.Kind.INACTIVE_SPLIT_BYTES, small, remaining.size);
        torchStats.increase(TorchStats.Kind.INACTIVE_SPLIT, small, 1);
      }
    } else if (alreadySplit && !expandable) {
      torchStats.decrease(TorchStats.Kind.INACTIVE_SPLIT_BYTES, small, block.size);
      torchStats.decrease(TorchStats.Kind.INACTIVE_SPLIT, small, 1);
    }
    block.allocated = true;
    block.requestedSize = orig;
    block.handle = newHandle(block);
    torchStats.increase(TorchStats.Kind.ALLOCATION, small, 1);
    torchStats.increase(TorchStats.Kind.ALLOCATED_BYTES, small, block.size);
    torchStats.increase(TorchStats.Kind.ACTIVE, small, 1);
    torchStats.increase(TorchStats.Kind.ACTIVE_BYTES, small, block.size);
    torchStats.increase(TorchStats.Kind.REQUESTED_BYTES, small, orig);
    stats.onAlloc(orig, block.size);
    if (block.size >= maxSplitSize) {
      torchStats.oversizeAllocation(true);
    }
    segmentChanged(block.segment);
    return block;
  }

  // ---------------------------------------------------------------- free

  @Override
  public void free(long handle) {
    Block b = checked(handle);
    stats.addModelledNanos(latency.freeBaseNanos());
    releaseHandle(b);
    b.allocated = false;
    boolean small = b.segment.pool.small;
    torchStats.decrease(TorchStats.Kind.ALLOCATION, small, 1);
    torchStats.decrease(TorchStats.Kind.ALLOCATED_BYTES, small, b.size);
    stats.onFree(b.requestedSize, b.size);
    if (b.size >= maxSplitSize) {
      torchStats.oversizeAllocation(false);
    }
    freeBlock(b);
  }

  /** free_block: merge with prev, then next, insert into the pool, update the statistics. */
  private void freeBlock(Block block) {
    long originalSize = block.size;
    long requested = block.requestedSize;
    BlockPool pool = block.segment.pool;
    long netBlocks = 0;
    long netBytes = 0;
    Block prev = block.prev;
    Block next = block.next;
    long subsumed = tryMergeBlocks(block, prev, pool);
    if (subsumed > 0) {
      netBlocks--;
      netBytes -= subsumed;
    }
    subsumed = tryMergeBlocks(block, next, pool);
    if (subsumed > 0) {
      netBlocks--;
      netBytes -= subsumed;
    }
    pool.insert(block);
    if (block.isSplit()) {
      netBlocks++;
      netBytes += block.size;
    }
    boolean small = pool.small;
    if (!block.expandable()) {
      torchStats.change(TorchStats.Kind.INACTIVE_SPLIT, small, netBlocks);
      torchStats.change(TorchStats.Kind.INACTIVE_SPLIT_BYTES, small, netBytes);
    }
    torchStats.decrease(TorchStats.Kind.ACTIVE, small, 1);
    torchStats.decrease(TorchStats.Kind.ACTIVE_BYTES, small, originalSize);
    torchStats.decrease(TorchStats.Kind.REQUESTED_BYTES, small, requested);
    segmentChanged(block.segment);
  }

  /** try_merge_blocks: {@code dst} absorbs {@code src} if that is free with the same mapped state. */
  private static long tryMergeBlocks(Block dst, Block src, BlockPool pool) {
    if (src == null || src.allocated || dst.mapped != src.mapped) {
      return 0;
    }
    if (dst.prev == src) {
      dst.address = src.address;
      dst.prev = src.prev;
      if (dst.prev != null) {
        dst.prev.next = dst;
      } else {
        dst.segment.head = dst;
      }
    } else {
      dst.next = src.next;
      if (dst.next != null) {
        dst.next.prev = dst;
      }
    }
    long subsumed = src.size;
    dst.size += subsumed;
    if (src.mapped) {
      pool.remove(src);
    } else {
      pool.unmapped.remove(src);
    }
    return subsumed;
  }

  // ---------------------------------------------------------------- giving memory back

  /** release_available_cached_blocks. */
  private boolean releaseAvailableCachedBlocks(BlockPool pool, long stream, long size) {
    if (maxSplitSize == TorchAllocConf.UNLIMITED) {
      return false;
    }
    long target = Math.max(size, maxSplitSize);
    Block it = pool.blocks.ceiling(key(stream, target));
    if (it == null || it.stream != stream || it.expandable()) {
      Block cur = it == null ? (pool.blocks.isEmpty() ? null : pool.blocks.last()) : pool.blocks.lower(it);
      if (cur == null) {
        return false;
      }
      long released = 0;
      while (released < target && cur.size >= maxSplitSize && cur.stream == stream) {
        Block before = pool.blocks.lower(cur);
        if (!cur.expandable()) {
          released += cur.size;
          releaseBlock(cur);
        }
        if (before == null) {
          break;
        }
        cur = before;
      }
      return released >= target;
    }
    releaseBlock(it);
    return true;
  }

  /** empty_cache / release_cached_blocks (unmap_block for expandable segments). */
  @Override
  public void emptyCache() {
    releaseCachedBlocks();
  }

  private void releaseCachedBlocks() {
    torchStats.numSyncAllStreams++;
    releaseBlocks(largePool);
    releaseBlocks(smallPool);
  }

  /**
   * Walks the pool's free blocks in pool order: a classic block that is not split is released at
   * once; every expandable block has its whole pages unmapped afterwards, in the same order, and its
   * segment is released if nothing of it stays mapped.
   *
   * <p>Note [Releasing whole segments]: on a full device nearly every request runs the retry ladder
   * to its end, and the walk visited every free block of the pool although it acts on few of them:
   * split classic blocks are skipped, and an expandable block without a whole page has nothing to
   * unmap (and cannot be a whole segment, whose size is whole pages). The pool therefore keeps the
   * blocks the walk acts on: its whole free classic segments ({@link BlockPool#wholeSegments},
   * updated with {@link Segment#releasable}) and the expandable blocks with a whole page ({@link
   * BlockPool#unmappable}). Releasing the first in pool order and then unmapping the second in pool
   * order does what the walk did, in the same order, since the walk released classic segments on the
   * way and unmapped only after it, and unmapping one free block never changes another.
   */
  private void releaseBlocks(BlockPool pool) {
    releaseWholeSegments(pool);
    if (pool.unmappable.isEmpty()) {
      return;
    }
    for (Block b : pool.unmappable.toArray(new Block[0])) {
      unmapBlock(b);
      if (b.prev == null && b.next == null) {
        releaseExpandableSegment(b);
      }
    }
  }

  /** Releases the pool's whole free classic segments in pool order (Note [Releasing whole segments]). */
  private void releaseWholeSegments(BlockPool pool) {
    if (pool.wholeSegments.isEmpty()) {
      return;
    }
    Block[] heads = new Block[pool.wholeSegments.size()];
    int n = 0;
    for (Segment seg : pool.wholeSegments) {
      heads[n++] = seg.head;
    }
    Arrays.sort(heads, pool.blocks.comparator());
    for (Block b : heads) {
      releaseBlock(b);
    }
  }

  /** release_block: cudaFree of a whole classic segment held as one free block. */
  private void releaseBlock(Block b) {
    Segment seg = b.segment;
    if (b.isSplit() || seg.expandable || b.allocated) {
      throw new InvariantViolation(NAME, "release of " + b + ", which is not a whole free classic segment");
    }
    BlockPool pool = seg.pool;
    torchStats.numDeviceFree++;
    listener.segmentFree(b.address, b.size, b.stream);
    driver.free(b.address, b.size);
    stats.addModelledNanos(latency.deviceFreeNanos());
    stats.unreserve(b.size);
    torchStats.decrease(TorchStats.Kind.SEGMENT, pool.small, 1);
    torchStats.decrease(TorchStats.Kind.RESERVED_BYTES, pool.small, b.size);
    if (b.size >= maxSplitSize) {
      torchStats.oversizeSegment(false);
    }
    pool.remove(b);
    removeSegment(seg);
  }

  /** garbage_collect_cached_blocks. */
  private void garbageCollectCachedBlocks() {
    long gcThreshold = (long) (conf.garbageCollectionThreshold() * (double) allowedMemoryMaximum);
    if (totalAllocatedMemory() <= gcThreshold) {
      return;
    }
    long target = totalAllocatedMemory() - gcThreshold;
    long reclaimed = 0;
    long totalAge = 0;
    long freeable = 0;
    for (Block b : largePool.blocks) {
      if (!b.isSplit()) {
        totalAge += largePool.getFreeBlocksCallCount - b.gcCountBase;
        freeable++;
      }
    }
    if (freeable == 0) {
      return;
    }
    boolean freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      double ageThreshold = (double) totalAge / freeable;
      freed = false;
      for (Block b : largePool.blocks.toArray(new Block[0])) {
        long age = largePool.getFreeBlocksCallCount - b.gcCountBase;
        if (!b.isSplit() && !b.expandable() && (double) age >= ageThreshold) {
          freed = true;
          reclaimed += b.size;
          totalAge -= age;
          freeable--;
          releaseBlock(b);
        }
      }
    }
  }

  // ---------------------------------------------------------------- expandable segments

  static boolean allocatable(Block b) {
    return b != null && !b.allocated;
  }

  /** find_expandable_block, the place try_allocate_expandable_block grows at. */
  private Block findExpandableBlock(BlockPool pool, long stream, long size) {
    Block k = searchKey;
    k.stream = stream;
    k.address = Long.MIN_VALUE;
    for (Block u = pool.unmapped.ceiling(k); u != null && u.stream == stream; u = pool.unmapped.higher(u)) {
      Block c = allocatable(u.prev) ? u.prev : u;
      long bytes = 0;
      for (Block r = c; bytes < size && allocatable(r); r = r.next) {
        bytes += r.size;
      }
      if (bytes >= size) {
        return c;
      }
    }
    long page = pool.small ? SMALL_BUFFER_BYTES : conf.largeSegmentSizeBytes();
    // Cannot overflow: the device is at most 1 EiB (checked at construction), and rounding up to a
    // page gives the page itself or less than twice the reservation.
    long reservation = ceilTo(Math.addExact(deviceTotalBytes, deviceTotalBytes / 8), page);
    long base = driver.reserve(reservation, page, stream);
    Segment seg = new Segment(base, reservation, stream, pool, true, page, nextSerial++);
    putSegment(seg);
    Block c = new Block(seg, base, reservation);
    c.mapped = false;
    seg.head = c;
    pool.unmapped.add(c);
    segmentChanged(seg);
    return c;
  }

  /** map_block: maps whole pages at the start of an unmapped block. */
  private boolean mapBlock(Block toMap, long size) {
    Segment seg = toMap.segment;
    BlockPool pool = seg.pool;
    long mappedBytes = ceilTo(size, seg.pageBytes);
    long start = toMap.address;
    if (!driver.map(start, mappedBytes, toMap.stream)) {
      return false;
    }
    stats.addModelledNanos(latency.deviceAllocNanos());
    pool.unmapped.remove(toMap);
    toMap.mapped = true;
    if (mappedBytes < toMap.size) {
      Block remaining = new Block(seg, start + mappedBytes, toMap.size - mappedBytes);
      remaining.mapped = false;
      remaining.splice(toMap, toMap.next);
      pool.unmapped.add(remaining);
      toMap.size = mappedBytes;
    }
    tryMergeBlocks(toMap, toMap.prev, pool);
    tryMergeBlocks(toMap, toMap.next, pool);
    pool.insert(toMap);
    stats.reserve(mappedBytes);
    torchStats.increase(TorchStats.Kind.RESERVED_BYTES, pool.small, mappedBytes);
    torchStats.numDeviceAlloc++;
    listener.segmentMap(start, mappedBytes, toMap.stream);
    segmentChanged(seg);
    return true;
  }

  /** try_allocate_expandable_block; the result is in no pool. */
  private Block tryAllocateExpandableBlock(BlockPool pool, long stream, long size) {
    Block candidate = findExpandableBlock(pool, stream, size);
    if (!candidate.mapped && !mapBlock(candidate, Math.min(candidate.size, size))) {
      return null;
    }
    while (candidate.size < size) {
      long remaining = size - candidate.size;
      Block next = candidate.next;
      if (!mapBlock(next, Math.min(remaining, next.size))) {
        return null;
      }
      candidate = next;
    }
    pool.remove(candidate);
    return candidate;
  }

  /** unmap_block: unmaps every page lying entirely inside a free mapped block. */
  private void unmapBlock(Block block) {
    Segment seg = block.segment;
    BlockPool pool = seg.pool;
    long page = seg.pageBytes;
    long begin = seg.address + ceilTo(block.address - seg.address, page);
    long end = seg.address + (block.end() - seg.address) / page * page;
    if (begin >= end) {
      return;
    }
    long unmappedBytes = end - begin;
    driver.unmap(begin, unmappedBytes);
    stats.addModelledNanos(latency.deviceFreeNanos());
    pool.remove(block);
    long before = begin - block.address;
    if (before > 0) {
      Block beforeFree = new Block(seg, block.address, before);
      beforeFree.splice(block.prev, block);
      pool.insert(beforeFree);
    }
    long after = block.size - (before + unmappedBytes);
    if (after > 0) {
      Block afterFree = new Block(seg, end, after);
      afterFree.splice(block, block.next);
      pool.insert(afterFree);
    }
    block.address = begin;
    block.size = unmappedBytes;
    block.mapped = false;
    tryMergeBlocks(block, block.prev, pool);
    tryMergeBlocks(block, block.next, pool);
    pool.unmapped.add(block);
    stats.unreserve(unmappedBytes);
    torchStats.decrease(TorchStats.Kind.RESERVED_BYTES, pool.small, unmappedBytes);
    torchStats.numDeviceFree++;
    listener.segmentUnmap(begin, unmappedBytes, block.stream);
    segmentChanged(seg);
  }

  private void releaseExpandableSegment(Block block) {
    Segment seg = block.segment;
    if (block.mapped || block.size != seg.size) {
      throw new InvariantViolation(NAME, "release of expandable segment at 0x" + Long.toHexString(seg.address) + " that is still mapped");
    }
    seg.pool.unmapped.remove(block);
    removeSegment(seg);
    driver.releaseReservation(seg.address, seg.size);
  }

  // ---------------------------------------------------------------- releasable segments

  /**
   * Returns whether a segment is held as one whole free block, so that {@code
   * release_cached_blocks} could give it back.
   */
  static boolean isReleasable(Segment seg) {
    return !seg.head.isSplit() && !seg.head.allocated;
  }

  /** Returns whether a releasable segment starts at {@code addressBytes}, by looking at its blocks. */
  boolean releasableAt(long addressBytes) {
    Segment seg = segments.get(addressBytes);
    return seg != null && isReleasable(seg);
  }

  /** Enters a segment in the address map; one it replaces stops counting as releasable. */
  void putSegment(Segment seg) {
    Segment replaced = segments.put(seg.address, seg);
    if (replaced != null) {
      forgetReleasable(replaced);
    }
  }

  /** Takes a segment out of the address map. */
  private void removeSegment(Segment seg) {
    segments.remove(seg.address);
    forgetReleasable(seg);
  }

  private void forgetReleasable(Segment seg) {
    if (seg.releasable) {
      setReleasable(seg, false);
    }
  }

  private void setReleasable(Segment seg, boolean releasable) {
    seg.releasable = releasable;
    releasableBytes += releasable ? seg.size : -seg.size;
    if (!seg.expandable) {
      if (releasable) {
        seg.pool.wholeSegments.add(seg);
      } else {
        seg.pool.wholeSegments.remove(seg);
      }
    }
    driver.markReleasable(seg.address, releasable);
  }

  /**
   * Re-reads whether a segment is releasable after its blocks changed (an allocation, a split, a
   * merge, a page mapped or unmapped, a new segment) and tells the driver when that flips.
   *
   * <p>Note [Releasable segments]: {@link #largestFreeBytes()} needs the bytes of all releasable
   * segments and the driver's largest {@code cudaMalloc} once they are freed. Both were walks over
   * every segment, run after every event of a replay; they are now kept as each segment changes
   * ({@link #releasableBytes}, the driver's {@link ReleasableRuns}). Every place that changes a
   * segment's first block or whether it is allocated calls this method before the operation
   * returns, and {@link #checkInvariants()} compares both with the walks.
   */
  void segmentChanged(Segment seg) {
    boolean releasable = isReleasable(seg);
    if (releasable != seg.releasable) {
      setReleasable(seg, releasable);
    }
  }

  // ---------------------------------------------------------------- handles

  int newHandle(Block b) {
    int h;
    if (freeHandleCount > 0) {
      h = freeHandles[--freeHandleCount];
    } else {
      h = handleHigh++;
      if (h == byHandle.length) {
        byHandle = Arrays.copyOf(byHandle, h * 2);
      }
    }
    byHandle[h] = b;
    return h;
  }

  private void releaseHandle(Block b) {
    int h = b.handle;
    byHandle[h] = null;
    b.handle = -1;
    if (freeHandleCount == freeHandles.length) {
      freeHandles = Arrays.copyOf(freeHandles, freeHandleCount * 2);
    }
    freeHandles[freeHandleCount++] = h;
  }

  private Block checked(long handle) {
    if (handle < 0 || handle >= handleHigh || byHandle[(int) handle] == null) {
      throw new AllocatorMisuseException(NAME + ": handle " + handle + " is not a live allocation (double free?)");
    }
    return byHandle[(int) handle];
  }

  void noteStream(long stream) {
    for (int i = 0; i < streamCount; i++) {
      if (streamsSeen[i] == stream) {
        return;
      }
    }
    if (streamCount == streamsSeen.length) {
      streamsSeen = Arrays.copyOf(streamsSeen, streamCount * 2);
    }
    streamsSeen[streamCount++] = stream;
  }

  // ---------------------------------------------------------------- hooks for snapshot replay

  /**
   * Installs a classic segment that existed before the model started, with its blocks (which must
   * tile it, no two adjacent free); returns the handles of its blocks in order, -1 for free ones.
   * Used to rebuild the state at the start of a recording ({@code kvsim.torch.RecordingStart});
   * {@link SnapshotRestore} does the work.
   */
  @Override
  public long[] restoreSegment(SegmentLayout layout) {
    return snapshots.restoreSegment(layout);
  }

  /**
   * Installs an expandable segment that existed before the model started: a reservation of {@code
   * sizeBytes} at {@code addressBytes} whose mapped runs (snapshot "segments" with {@code
   * is_expandable}) are given; everything else is unmapped. Returns the handles as {@link
   * #restoreSegment} does, over the runs' blocks in order.
   */
  public long[] restoreExpandableSegment(long addressBytes, long sizeBytes, long stream, boolean small, List<SegmentLayout> runs) {
    return snapshots.restoreExpandableSegment(addressBytes, sizeBytes, stream, small, runs);
  }

  /**
   * Frees the classic segment at {@code addressBytes} as a recorded {@code segment_free} says;
   * returns false (changing nothing) when the model has no whole free segment there.
   */
  @Override
  public boolean releaseSegmentAt(long addressBytes) {
    Segment seg = segments.get(addressBytes);
    if (seg == null || seg.expandable || seg.head.isSplit() || seg.head.allocated) {
      return false;
    }
    releaseBlock(seg.head);
    return true;
  }


  /**
   * Returns the block starting at {@code addressBytes} as {address, size, allocated (1/0), start of
   * the next block, its size, whether it is free (1/0)}, the last three -1 when there is no next
   * block; null when no block starts there.
   */
  @Override
  public long[] blockAt(long addressBytes) {
    return snapshots.blockAt(addressBytes);
  }

  /** Returns the start address of the segment holding {@code addressBytes}, or -1. */
  @Override
  public long segmentAddressOf(long addressBytes) {
    return snapshots.segmentAddressOf(addressBytes);
  }

  /** Describes the segment holding {@code addressBytes} and its blocks in plain words, or null. */
  @Override
  public String describeSegmentAt(long addressBytes) {
    return snapshots.describeSegmentAt(addressBytes);
  }

  // ---------------------------------------------------------------- gauges (FreeSpaceAnalysis)

  @Override
  public long freeBytes() {
    return freeSpace.freeBytes();
  }

  /**
   * Returns the largest size L such that every request of up to L bytes on the default stream would
   * succeed now (Note [Largest free request] on {@link FreeSpaceAnalysis}).
   */
  @Override
  public long largestFreeBytes() {
    return freeSpace.largestFreeBytes();
  }

  /**
   * Returns {@link #largestFreeBytes()} computed from walks over every segment instead of the
   * structures kept as segments change (Note [Releasable segments]); the reference for checks.
   */
  long largestFreeBytesByWalk() {
    return freeSpace.largestFreeBytesByWalk();
  }


  @Override
  public LatencyModel latency() {
    return latency;
  }

  @Override
  public Extents extentsOf(long handle) {
    Block b = checked(handle);
    return Extents.single(b.address, b.size);
  }

  @Override
  public Map<String, Long> extraMetrics() {
    Map<String, Long> out = new LinkedHashMap<>(torchStats.asMap());
    if (driver instanceof RegionDriver rd) {
      out.put("driver_contiguity_refusals", rd.contiguityRefusals());
    }
    return out;
  }

  @Override
  public List<SegmentLayout> layout() {
    return snapshots.layout();
  }


  // ---------------------------------------------------------------- invariants

  /** Checks the blocks, pools, statistics and gauges against each other ({@link CachingInvariantChecker}). */
  @Override
  public void checkInvariants() {
    new CachingInvariantChecker(this).check();
  }
}

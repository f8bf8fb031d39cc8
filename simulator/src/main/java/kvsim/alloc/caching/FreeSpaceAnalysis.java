package kvsim.alloc.caching;

import static kvsim.alloc.caching.TorchCachingModel.MIN_LARGE_ALLOC_BYTES;
import static kvsim.alloc.caching.TorchCachingModel.SMALL_BUFFER_BYTES;
import static kvsim.alloc.caching.TorchCachingModel.SMALL_SIZE_BYTES;

/**
 * The caching allocator's free-space gauges: free bytes, and the largest request that would
 * succeed now, derived from PyTorch's own rules ({@code get_free_block}, {@code alloc_block}, {@code
 * get_allocation_size}, {@code round_size} and the retry ladder of {@code malloc} in {@code
 * c10/cuda/CUDACachingAllocator.cpp} @eb42ad6). PyTorch has no such function; this analysis asks the
 * model's structures ({@link CachingAllocator}'s pools, segments and driver) what those functions
 * would answer, and changes nothing.
 */
final class FreeSpaceAnalysis {
  private final CachingAllocator model;
  /** The last question to {@link #maxRequestWithSegmentUpTo} (-1: none yet) and its answer. */
  private long segmentUpToBytes = -1;
  private long segmentUpToRequest;

  FreeSpaceAnalysis(CachingAllocator model) {
    this.model = model;
  }

  private long driverHeadroom() {
    long free = Math.max(0, model.driver.freeBytes());
    return model.setFraction ? Math.min(free, Math.max(0, model.allowedMemoryMaximum - model.totalAllocatedMemory())) : free;
  }

  /** Free bytes: cached blocks not allocated, plus what the driver can still give (Note [Device size]). */
  long freeBytes() {
    return model.totalAllocatedMemory() - model.stats.allocatedBytes() + driverHeadroom();
  }

  /**
   * Returns the largest size L such that every request of up to L bytes on the default stream would
   * succeed now (get_free_block and alloc_block decide "succeed": a cached best fit, or new memory
   * after the retry ladder has released every whole free segment).
   *
   * <p>Note [Largest free request]: PyTorch's segment sizes make success non-monotone in the request
   * size: with 16 MiB of contiguous device memory left, a 16 MiB request succeeds (own-size
   * segment) while a 2 MiB one fails (it needs a 20 MiB segment). Reporting 16 MiB would call that
   * 2 MiB refusal "fragmentation below the largest free size"; this gauge therefore reports the
   * prefix of request sizes that all succeed, which is the conservative reading of "the largest
   * request that would succeed" and keeps {@code 1 − largest / free} meaningful. Oversize cached
   * blocks are not counted, and for expandable segments pages the ladder could unmap are not
   * counted either.
   *
   * <p>Note [Unmapped reach]: with expandable segments a request can also grow a free block into the
   * unmapped range after it, so every unmapped range of stream 0 is visited: the free block before it
   * plus the pages the device can still map there. Unlike the classic branch this visit is not kept
   * incrementally, for three reasons. The set is bounded by the number of blocks, not by the length
   * of a run (on the 2 M-event churn trace on 80 GiB: 81 ranges on average, 224 at most). Ranges
   * other than a reservation's tail appear only when the retry ladder unmaps pages, that is on a
   * device so full that cache misses are common, and every miss walks the same set in {@code
   * find_expandable_block}, as PyTorch does. And when the device cannot map a single
   * page and no {@code max_split_size} is set the visit is skipped: each range then adds only the
   * free block before it, a stream-0 block of the large pool and so no larger than the largest one,
   * which is already counted; on that trace this holds for 93 % of the events. Profiled there, this
   * gauge takes under a tenth of the replay's time and {@code find_expandable_block} about 40 %.
   */
  long largestFreeBytes() {
    return largestFreeBytes(false);
  }

  /**
   * Returns {@link #largestFreeBytes()} computed from walks over every segment instead of the
   * structures kept as segments change (Note [Releasable segments]); the reference for checks.
   */
  long largestFreeBytesByWalk() {
    return largestFreeBytes(true);
  }

  private long largestFreeBytes(boolean walk) {
    long smallMax = largestCached(model.smallPool, Long.MAX_VALUE);
    long largeMax = largestCached(model.largePool, model.maxSplitSize);
    if (model.conf.expandableSegments()) {
      long headroom = driverHeadroom();
      if (headroom < SMALL_BUFFER_BYTES) {
        long smallPrefix = maxRequestRoundingTo(smallMax, SMALL_SIZE_BYTES);
        if (smallPrefix < SMALL_SIZE_BYTES) {
          return smallPrefix;
        }
      }
      long page = model.conf.largeSegmentSizeBytes();
      long growable = headroom / page * page;
      long reach = Math.max(largeMax, growable);
      if (walk || growable > 0 || model.maxSplitSize != TorchAllocConf.UNLIMITED) {
        // Note [Unmapped reach]
        for (Block u : model.largePool.unmapped) {
          if (u.stream == 0) {
            long before = model.allocatable(u.prev) && u.prev.mapped ? u.prev.size : 0;
            reach = Math.max(reach, before + Math.min(u.size, growable));
          }
        }
      }
      return Math.max(SMALL_SIZE_BYTES, maxRequestRoundingTo(reach, Long.MAX_VALUE));
    }
    long releasable = walk ? walkReleasableBytes() : model.releasableBytes;
    long c = walk ? model.driver.largestMallocBytes(model::releasableAt) : model.driver.largestMallocBytes();
    if (model.setFraction) {
      c = Math.min(c, Math.max(0, model.allowedMemoryMaximum - model.totalAllocatedMemory() + releasable));
    }
    if (c < SMALL_BUFFER_BYTES) {
      long smallPrefix = maxRequestRoundingTo(smallMax, SMALL_SIZE_BYTES);
      if (smallPrefix < SMALL_SIZE_BYTES) {
        return smallPrefix;
      }
    }
    long cached = largeMax > SMALL_SIZE_BYTES ? maxRequestRoundingTo(largeMax, Long.MAX_VALUE) : SMALL_SIZE_BYTES;
    long fromDriver = maxRequestWithSegmentUpTo(c);
    if (c >= model.conf.largeSegmentSizeBytes()) {
      return Math.max(cached, fromDriver);
    }
    // Requests just above 1 MiB need a large segment the driver cannot give: only the cache serves
    // them, and the driver's own-size segments count only if the cache reaches 10 MiB.
    if (fromDriver >= MIN_LARGE_ALLOC_BYTES && model.roundSize(cached + 1) >= MIN_LARGE_ALLOC_BYTES) {
      return Math.max(cached, fromDriver);
    }
    return cached;
  }

  /** Returns the bytes of all releasable segments, by walking every segment. */
  private long walkReleasableBytes() {
    long releasable = 0;
    for (Segment s : model.segments.values()) {
      if (model.isReleasable(s)) {
        releasable += s.size;
      }
    }
    return releasable;
  }

  /** Largest free block of stream 0 in a pool with a size below {@code below}, 0 if none. */
  private long largestCached(BlockPool pool, long below) {
    Block k = model.key(0, below == Long.MAX_VALUE ? Long.MAX_VALUE : below - 1);
    k.address = Long.MAX_VALUE;
    Block b = pool.blocks.floor(k);
    return b != null && b.stream == 0 ? b.size : 0;
  }

  /** The largest request whose rounded size is at most {@code bytes} (and at most {@code cap}). */
  private long maxRequestRoundingTo(long bytes, long cap) {
    long hi = Math.min(bytes, cap);
    if (hi <= 0) {
      return 0;
    }
    if (model.roundSize(hi) <= bytes) {
      return hi;
    }
    long lo = 0; // model.roundSize(lo) <= bytes holds for lo = 0 by convention
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      if (model.roundSize(mid) <= bytes) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * The largest request of at least 10 MiB whose own-size segment fits in {@code bytes}, 0 if none.
   * The last answer is remembered: the driver's largest {@code cudaMalloc} changes far less often
   * than the gauge is read, and each answer is a binary search of some 35 steps.
   */
  private long maxRequestWithSegmentUpTo(long bytes) {
    if (bytes != segmentUpToBytes) {
      segmentUpToRequest = searchRequestWithSegmentUpTo(bytes);
      segmentUpToBytes = bytes;
    }
    return segmentUpToRequest;
  }

  private long searchRequestWithSegmentUpTo(long bytes) {
    if (model.allocationSize(model.roundSize(MIN_LARGE_ALLOC_BYTES)) > bytes) {
      return 0;
    }
    long lo = MIN_LARGE_ALLOC_BYTES;
    long hi = bytes + 1;
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      if (model.allocationSize(model.roundSize(mid)) <= bytes) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
}

package kvsim.alloc.caching;

import kvsim.alloc.Allocator;
import kvsim.alloc.SegmentLayout;

/**
 * PyTorch's CUDA caching allocator as snapshot replay and recording see it: the {@link Allocator}
 * operations plus PyTorch's rounding, statistics and {@code empty_cache}, and the hooks that
 * install and inspect the segments of a recording (rebuilt by the snapshot replay's {@code
 * RecordingStart}). {@code kvsim.registry.AllocatorRegistry#torchCaching} builds one; code outside
 * this package and the registry uses this interface, never the model class.
 *
 * <p>It also holds PyTorch's size constants (the {@code k...} constants of {@code
 * c10/cuda/CUDACachingAllocator.cpp} at pytorch/pytorch @eb42ad6, unchanged since PR #17120 of
 * 2019) and the model's registry name, so that readers of snapshots can use them without naming
 * the model class.
 */
public interface TorchCachingModel extends Allocator {
  /** Registry name. */
  String NAME = "pytorch-caching";
  /** kMinBlockSize: every block is a multiple of 512 B. */
  long MIN_BLOCK_BYTES = 512;
  /** kSmallSize: rounded sizes up to 1 MiB go to the small pool. */
  long SMALL_SIZE_BYTES = 1L << 20;
  /** kSmallBuffer: small segments and small expandable pages are 2 MiB. */
  long SMALL_BUFFER_BYTES = 2L << 20;
  /** kMinLargeAlloc: rounded sizes from 10 MiB get a segment of their own size. */
  long MIN_LARGE_ALLOC_BYTES = 10L << 20;
  /** kRoundLarge: large segments are multiples of 2 MiB. */
  long ROUND_LARGE_BYTES = 2L << 20;
  /**
   * Requests of 1 EiB and more fail at once (PyTorch's {@code malloc} raises OOM). The bound also
   * keeps every size the model computes (rounded sizes, segment sizes, 1.125 × device reservations)
   * far from {@code Long.MAX_VALUE}, which is why the device may not exceed it either.
   */
  long MAX_REQUEST_BYTES = 1L << 60;
  /** The label of the default tie-break, a constant so that command-line options can quote it. */
  String DEFAULT_TIE_BREAK_LABEL = "address";
  /** The free-block tie-break of every PyTorch release up to at least 2.11, the model's default. */
  TieBreak DEFAULT_TIE_BREAK = TieBreak.of(DEFAULT_TIE_BREAK_LABEL);

  /** Returns the options in force. */
  TorchAllocConf conf();

  /** Returns the device size used for the memory fraction and expandable reservations. */
  long deviceTotalBytes();

  /** Returns PyTorch's statistics ({@code torch.cuda.memory_stats()}). */
  TorchStats torchStats();

  /** Returns PyTorch's round_size of a request below {@link #MAX_REQUEST_BYTES}. */
  long roundSize(long sizeBytes);

  /** Runs empty_cache (PyTorch's release_cached_blocks, unmap_block for expandable segments). */
  void emptyCache();

  /**
   * Installs a classic segment that existed before the model started, with its blocks; returns the
   * handles of its blocks in order, -1 for free ones.
   */
  long[] restoreSegment(SegmentLayout layout);

  /** Frees the whole free classic segment at {@code addressBytes}; returns false (changing nothing) if there is none. */
  boolean releaseSegmentAt(long addressBytes);

  /**
   * Returns the block starting at {@code addressBytes} as {address, size, allocated (1/0), start of
   * the next block, its size, whether it is free (1/0)}, the last three -1 when there is no next
   * block; null when no block starts there.
   */
  long[] blockAt(long addressBytes);

  /** Returns the start address of the segment holding {@code addressBytes}, or -1. */
  long segmentAddressOf(long addressBytes);

  /** Describes the segment holding {@code addressBytes} and its blocks in plain words, or null. */
  String describeSegmentAt(long addressBytes);
}

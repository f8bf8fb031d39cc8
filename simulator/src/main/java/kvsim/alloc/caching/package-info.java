/**
 * The {@code pytorch-caching} family: PyTorch's CUDA caching allocator, after {@code
 * c10/cuda/CUDACachingAllocator.cpp} of pytorch/pytorch as read at @eb42ad6 (the 2.2/2.3 era),
 * with the later changes each class names.
 *
 * <ul>
 *   <li>{@link kvsim.alloc.caching.CachingAllocator}: the model's policy (malloc, free, retry
 *       ladder, expandable segments, statistics) and its hooks for snapshot replay. Outside this
 *       package and the registry it is a {@link kvsim.alloc.caching.TorchCachingModel}, which also
 *       holds PyTorch's size constants. Beside it, reading its state: {@code SnapshotRestore}
 *       (segments restored from a snapshot, the replay's block lookups, the layout), {@code
 *       FreeSpaceAnalysis} (the free-space gauges) and {@code CachingInvariantChecker}.
 *   <li>{@link kvsim.alloc.caching.TorchAllocConf}: options in {@code PYTORCH_CUDA_ALLOC_CONF}
 *       syntax; {@link kvsim.alloc.caching.TieBreak}: the free-block order by PyTorch version.
 *   <li>{@link kvsim.alloc.caching.TorchStats}: {@code torch.cuda.memory_stats()} names.
 *   <li>{@link kvsim.alloc.caching.DeviceDriver}: what the allocator asks of the CUDA driver;
 *       {@link kvsim.alloc.caching.RegionDriver} models a kvsim region (its {@link
 *       kvsim.alloc.caching.ReleasableRuns} keep the largest {@code cudaMalloc} possible once the
 *       cached whole segments are freed), {@link kvsim.alloc.caching.ReplayDriver} hands out a
 *       recording's addresses (a {@link kvsim.alloc.caching.RecordedDriver} outside this
 *       package).
 * </ul>
 *
 * <p>Glossary (PyTorch's words): a <b>segment</b> is one {@code cudaMalloc} (or one expandable
 * reservation); a <b>block</b> is a piece of a segment, allocated or free; a <b>pool</b> holds the
 * free blocks of the small (≤ 1 MiB) or large requests; <b>requested</b> size is what the caller
 * asked for, <b>rounded</b> size what the block holds for it, <b>allocation size</b> the size of a
 * new segment.
 */
package kvsim.alloc.caching;

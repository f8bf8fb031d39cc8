/**
 * The {@code paged} family: vLLM's KV block manager, v1 as at vLLM commit ec5ef0a ({@code
 * vllm/v1/core/}) and v0 as at commit 1fb9c1b ({@code vllm/core/}); {@link kvsim.alloc.paged.BlockManager}
 * and its two subclasses name the files and functions.
 *
 * <ul>
 *   <li>{@link kvsim.alloc.paged.PagedAllocator}: the L1 model, byte requests served as pages.
 *   <li>{@code BlockPool}: blocks, reference counts, the free queue (v1) or free deque and LRU
 *       evictor (v0), the hash index.
 *   <li>{@code BlockManager}: what both managers share (requests, block tables, prefix lookup,
 *       {@code allocate_slots}, release, preemption, invariants), token for token and block id for
 *       block id; {@link kvsim.alloc.paged.V1KvCacheManager} is v1's {@code KVCacheManager} and
 *       {@link kvsim.alloc.paged.V0BlockManager} v0's {@code BlockSpaceManagerV2} (watermark,
 *       deduplication, fork, copy-on-write, swapping). {@code BlockManager.of} builds the one a
 *       configuration's mode names; outside this package it is a {@link
 *       kvsim.alloc.paged.KvBlockManager}, built by the registry.
 * </ul>
 *
 * <p>Vocabulary: a <b>block</b> here is vLLM's block, which the rest of kvsim calls a <b>page</b>:
 * {@code block_size} tokens of KV cache. The <b>null block</b> is v1's reserved block 0.
 */
package kvsim.alloc.paged;

package kvsim.alloc.paged;

import java.util.List;

/**
 * vLLM v1's KV cache manager ({@code KVCacheManager} of {@code vllm/v1/core/kv_cache_manager.py} at
 * commit ec5ef0a, over one full-attention group, with {@code BlockPool} of {@code
 * vllm/v1/core/block_pool.py} and the free queue and block hashes of {@code
 * vllm/v1/core/kv_cache_utils.py}): what it shares with v0 is in {@link BlockManager}; this class
 * adds v1's null block and free queue (through its pool), tail-first release, and no watermark,
 * deduplication, fork or swapping, which v1 does not have.
 *
 * <p>Rules:
 *
 * <ul>
 *   <li>Block 0 is the null block; the free queue starts as {@code [1 … N−1]} ({@code BlockPool}'s
 *       constructor).
 *   <li>Allocation pops from the head of the free queue and evicts a popped cached block then and
 *       only then ({@code BlockPool.get_new_blocks}); {@link #free} appends a table's blocks that
 *       reach zero references at the tail, last block first ({@code KVCacheManager.free}, {@code
 *       BlockPool.free_blocks}).
 *   <li>Block hashes are chained over (parent hash, token ids, extra keys: LoRA name, cache salt on
 *       block 0), computed for every full block when tokens are added (the hash chain of {@code
 *       kv_cache_utils.py}, {@link BlockHasher}); caller-supplied hash ids replace them where given.
 *   <li>{@link #lookup} walks the hashes from block 0, stops at the first miss and never hits the
 *       last token: at most {@code floor((num_tokens − 1) / B)} blocks; it counts prefix-cache
 *       statistics on every call, preempted requests apart ({@code
 *       KVCacheManager.get_computed_blocks}). It is allowed only for a
 *       request with nothing computed, as in vLLM's scheduler.
 *   <li>{@link #allocateSlots} counts blocks as {@code KVCacheManager.allocate_slots} does: a running request needs {@code
 *       ceil(slots/B) − len(table)}; a new or resumed one needs {@code ceil(slots/B) − hits −
 *       len(table)} plus its hit blocks that sit in the free queue. If that exceeds the free
 *       blocks it returns false and changes nothing. Otherwise it touches the hits, appends them,
 *       pops the new blocks and caches the blocks that are now full up to {@code min(computed,
 *       num_tokens)} ({@code allocate_slots}, through {@code BlockPool.cache_full_blocks}): at
 *       scheduling time, never lookahead slots.
 *   <li>Blocks with equal hashes are all kept; a lookup returns the first inserted ({@code BlockPool}
 *       does not deduplicate, so block tables stay append-only).
 *   <li>{@link #preempt} frees like {@link #free}, sets the computed tokens to zero and counts a
 *       preemption ({@code Scheduler._preempt_request}); the request then hits whichever of its blocks survived.
 *   <li>{@link #resetPrefixCache} succeeds only when every usable block is free ({@code
 *       reset_prefix_cache}).
 * </ul>
 */
public final class V1KvCacheManager extends BlockManager {
  /** Builds an empty manager. */
  V1KvCacheManager(BlockManagerConfig config) {
    super(config, BlockPool.Kind.V1);
  }

  /** Returns the host blocks configured: v1 never swaps, so all of them stay free. */
  @Override
  public int numFreeHostBlocks() {
    return config.numHostBlocks();
  }

  @Override
  public long swappedOutBytes() {
    return 0;
  }

  @Override
  public long swappedInBytes() {
    return 0;
  }

  /** v1's scheduler admits on free blocks alone ({@code allocate_slots}): no watermark. */
  @Override
  boolean admissible(PagedRequest r) {
    return true;
  }

  // Note [No copy-on-write in v1]: vLLM v1's KVCacheManager.allocate_slots
  // (vllm/v1/core/kv_cache_manager.py) never copies a block (there is no fork, and beams and n > 1
  // are separate requests), and it never needs to: only full, computed blocks are cached, so only
  // they can be another request's prefix hit and shared, while a request writes from its first
  // block not wholly computed on. Its blocks to be written are therefore its own, and allocation
  // skips looking up their reference counts (one likely cache miss per scheduled request per step;
  // JMH ServingBenchmark 745 -> 725 ms an hour); checkInvariants checks that they are unshared.
  @Override
  boolean copiesOnWrite() {
    return false;
  }

  /** v1 keeps every block with an equal hash ({@code BlockPool} does not deduplicate). */
  @Override
  boolean replacedByCached(IntList table, int i, int b, long hi, long lo) {
    return false;
  }

  /** Frees the table tail first ({@code KVCacheManager.free}, {@code BlockPool.free_blocks}). */
  @Override
  void releaseTable(PagedRequest r) {
    IntList table = r.table;
    pool.freeBlocks(table.raw(), 0, table.size(), true);
    table.clear();
  }

  @Override
  void releaseSwapped(PagedRequest r) {
    throw new IllegalStateException(r + " is swapped out, which v1 never does");
  }

  // ---------------------------------------------------------------------------------------------
  // v0's operations, which v1 does not have

  @Override
  public PagedRequest fork(PagedRequest parent, String childId) {
    beginOp();
    throw needsV0("fork");
  }

  @Override
  public boolean swapOut(PagedRequest r) {
    return swapOut(List.of(r));
  }

  @Override
  public boolean swapOut(List<PagedRequest> group) {
    beginOp();
    throw needsV0("swap_out");
  }

  @Override
  public boolean swapIn(PagedRequest r) {
    return swapIn(List.of(r));
  }

  @Override
  public boolean swapIn(List<PagedRequest> group) {
    beginOp();
    throw needsV0("swap_in");
  }

  private static BlockOpException needsV0(String op) {
    return new BlockOpException("op", op + " needs mode v0 (vLLM v0's block manager); v1 has no " + op);
  }

  // ---------------------------------------------------------------------------------------------
  // Invariants: v1 holds no host blocks

  @Override
  void beginHostCheck() {}

  @Override
  void checkHostTable(PagedRequest r, String who, int stamp) {
    fail(who + " is swapped out, which v1 never does");
  }

  @Override
  void endHostCheck() {}
}

package kvsim.alloc.paged;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.InvariantViolation;

/**
 * vLLM's KV-cache block manager, request by request and block id for block id: v1's {@code
 * KVCacheManager} over one full-attention group, with v0's watermark, free lists, LRU evictor,
 * fork, copy-on-write and swapping as a per-run mode.
 *
 * <p>Sources. v1: vLLM at commit ec5ef0a, {@code vllm/v1/core/kv_cache_manager.py} ({@code
 * KVCacheManager}), {@code vllm/v1/core/block_pool.py} ({@code BlockPool}), {@code
 * vllm/v1/core/kv_cache_utils.py} ({@code FreeKVCacheBlockQueue}, block hashes) and {@code
 * vllm/v1/core/sched/scheduler.py} ({@code Scheduler}). v0: vLLM at commit 1fb9c1b (between
 * v0.6.2 and v0.6.3), {@code vllm/core/block_manager_v2.py} ({@code BlockSpaceManagerV2}), {@code
 * vllm/core/block/prefix_caching_block.py}, {@code vllm/core/evictor_v2.py} and {@code
 * vllm/core/scheduler.py}. The rules below name the functions of those files they follow.
 *
 * <p>Rules (v1, the default):
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
 *
 * <p>Rules (v0, {@link BlockManagerConfig.Mode#V0}), after {@code BlockSpaceManagerV2}:
 *
 * <ul>
 *   <li>No null block; hashless free blocks in a deque (LIFO by default, or FIFO), cached free
 *       blocks in the LRU evictor, fresh blocks used before any eviction ({@code prefix_caching_block.py}'s allocator,
 *       {@code evictor_v2.LRUEvictor}).
 *   <li>{@link #admit} and {@link #swapIn} first apply the watermark: NEVER if {@code N − required
 *       < watermark_blocks}, OK if {@code free − required ≥ watermark_blocks}, LATER otherwise, with
 *       {@code required} the prompt's blocks ignoring hits ({@code BlockSpaceManagerV2.can_allocate},
 *       {@code can_swap_in}). Decode growth has no
 *       watermark: it needs new blocks plus copies ≤ free.
 *   <li>A block that becomes full while another block already holds its hash is replaced by that
 *       block in the table and freed (deduplication when {@code prefix_caching_block.py} promotes a
 *       full block).
 *   <li>{@link #free} releases the table head first; a released cached block enters the evictor
 *       stamped with the current operation's clock.
 *   <li>{@link #fork} copies the parent's table and adds a reference to every block; writing a
 *       token into a block that another table also holds first copies it to a new block and drops
 *       one reference of the old one (copy-on-write: {@code fork} and {@code
 *       cow_block_if_not_appendable}). Only a partly filled block is ever
 *       written, so only such blocks are copied.
 *   <li>{@link #swapOut} moves a running request's blocks to the host pool, one host block per
 *       block, and frees them; {@link #swapIn} brings them back, re-using cached blocks by hash
 *       and copying the rest ({@code Scheduler._schedule_default}'s swap-out and swap-in, with the
 *       manager's {@code can_swap_out} and {@code can_swap_in}).
 * </ul>
 *
 * <p>Simplifications against v0: one hash function and one caching moment (at scheduling, as in
 * v1's {@code allocate_slots}) for both modes; the v1 lookup rule (last token never hits) also in v0; fork
 * and copy-on-write act on single requests, swapping on a request or a sequence group (the
 * group's distinct blocks, shared ones mapped once).
 *
 * <p>Misuse (an unknown request, a lookup of a running one, zero new tokens) throws {@link
 * BlockOpException} before anything changes; lack of memory is a {@code false} result. Each
 * operation records its details in {@link #log()}.
 */
public final class BlockManager implements KvBlockManager {
  private static final IntList NO_HITS = new IntList(1);

  private final BlockManagerConfig config;
  private final int blockSize;
  private final boolean caching;
  private final boolean v0;
  private final BlockPool pool;
  private final BlockHasher hasher;
  private final PrefixCacheStats stats = new PrefixCacheStats();
  private final OpLog log = new OpLog();
  private final IntDeque hostFree;
  /** References to each host block (index: host block id − N): the swapped tables that hold it. */
  private final int[] hostRefs;
  private final Map<String, PagedRequest> requests = new LinkedHashMap<>();
  private long epoch;
  private long clock;
  private long preemptions;
  private long swappedOutBytes;
  private long swappedInBytes;

  /** Builds an empty manager. */
  public BlockManager(BlockManagerConfig config) {
    this.config = config;
    this.blockSize = config.blockSize();
    this.caching = config.enableCaching();
    this.hasher = new BlockHasher(config.hash());
    this.v0 = config.mode() == BlockManagerConfig.Mode.V0;
    BlockPool.Kind kind =
        !v0
            ? BlockPool.Kind.V1
            : config.freeOrder() == BlockManagerConfig.FreeOrder.LIFO ? BlockPool.Kind.V0_LIFO : BlockPool.Kind.V0_FIFO;
    this.pool = new BlockPool("paged", config.numBlocks(), caching, kind);
    this.hostFree = new IntDeque(config.numHostBlocks());
    this.hostRefs = new int[config.numHostBlocks()];
    for (int h = 0; h < config.numHostBlocks(); h++) {
      hostFree.addLast(config.numBlocks() + h);
    }
  }

  @Override
  public void listen(BlockListener l) {
    pool.listen(l);
  }

  /** Returns the settings. */
  @Override
  public BlockManagerConfig config() {
    return config;
  }

  /** Returns what the last operation did. */
  @Override
  public OpLog log() {
    return log;
  }

  /** Returns the prefix-cache statistics so far. */
  @Override
  public PrefixCacheStats stats() {
    return stats;
  }

  /** Returns the free blocks: the free queue's length in v1 (null block excluded). */
  @Override
  public int numFreeBlocks() {
    return pool.numFreeBlocks();
  }

  /** Returns the blocks that hold a hash. */
  @Override
  public int numCachedBlocks() {
    return pool.numCachedBlocks();
  }

  /** Returns the blocks that can ever be handed out (N − 1 in v1, N in v0). */
  public int usableBlocks() {
    return pool.usableBlocks();
  }

  /** Returns the free blocks in the order allocation would take them (head of the queue first). */
  @Override
  public int[] freeQueue() {
    return pool.freeOrder();
  }

  /** Returns a block's reference count. */
  @Override
  public int refCnt(int block) {
    return pool.refCnt(block);
  }

  /** Returns the free host blocks (v0 swap space). */
  @Override
  public int numFreeHostBlocks() {
    return hostFree.size();
  }

  /** Returns the cached blocks evicted so far. */
  public long evictionCount() {
    return pool.evictionCount();
  }

  /** Returns the preemptions so far. */
  public long preemptionCount() {
    return preemptions;
  }

  /** Returns the bytes copied device to host by swap-outs so far. */
  public long swappedOutBytes() {
    return swappedOutBytes;
  }

  /** Returns the bytes copied host to device by swap-ins so far. */
  public long swappedInBytes() {
    return swappedInBytes;
  }

  /** Returns the live (unfinished) request of this id, or null. */
  @Override
  public PagedRequest request(String id) {
    return requests.get(id);
  }

  /** Returns the live requests in the order they were added. */
  @Override
  public Collection<PagedRequest> requests() {
    return Collections.unmodifiableCollection(requests.values());
  }

  /** Returns every cached block, by block id. */
  @Override
  public List<CachedBlock> cachedBlocks() {
    List<CachedBlock> out = new ArrayList<>();
    for (int b = 0; b < pool.numBlocks(); b++) {
      if (pool.hasHash(b)) {
        out.add(
            new CachedBlock(
                b, BlockHasher.hexPrefix(pool.hashHi(b), pool.hashLo(b), 16), pool.refCnt(b), pool.hashedTokens(b)));
      }
    }
    return out;
  }

  /** Returns the first 16 hex digits of block {@code i}'s hash of a request. */
  public String blockHashPrefix(PagedRequest r, int i) {
    return BlockHasher.hexPrefix(r.hashHi(i), r.hashLo(i), 16);
  }

  private void beginOp() {
    log.reset();
    pool.setNow(++clock);
  }

  private PagedRequest live(PagedRequest r, String field) {
    // A request this manager made and has not finished is the one its table holds under that id.
    if (r == null || r.status == PagedRequest.Status.FINISHED || r.owner != this) {
      throw new BlockOpException(field, (r == null ? "request" : r + " is") + " unknown or finished");
    }
    return r;
  }

  private void notSwapped(PagedRequest r, String op) {
    if (r.status == PagedRequest.Status.SWAPPED) {
      throw new BlockOpException("req", op + ": " + r + " is swapped out; swap it in first");
    }
  }

  private void requireV0(String op) {
    if (!v0) {
      throw new BlockOpException("op", op + " needs mode v0 (vLLM v0's block manager); v1 has no " + op);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Requests and tokens

  /** Adds a waiting request with a prompt and optional extra keys (either may be null). */
  public PagedRequest addRequest(String id, int[] prompt, String loraName, String cacheSalt) {
    return addRequest(id, prompt, loraName, cacheSalt, null);
  }

  /**
   * Adds a waiting request; {@code hashIds}, when not null, supplies the hashes of the prompt's
   * first full blocks (Mooncake-style ids; ids for a partial last block are ignored).
   */
  @Override
  public PagedRequest addRequest(String id, int[] prompt, String loraName, String cacheSalt, long[] hashIds) {
    beginOp();
    if (id == null || id.isEmpty()) {
      throw new BlockOpException("req", "a request needs a non-empty id");
    }
    if (requests.containsKey(id)) {
      throw new BlockOpException("req", "request " + id + " already exists");
    }
    if (prompt.length == 0) {
      throw new BlockOpException("prompt", "the prompt of request " + id + " is empty");
    }
    if (prompt.length > config.maxModelLen()) {
      throw new BlockOpException(
          "prompt", "the prompt of request " + id + " has " + prompt.length + " tokens, more than max_model_len " + config.maxModelLen());
    }
    if (hashIds != null && hashIds.length > (prompt.length + blockSize - 1) / blockSize) {
      throw new BlockOpException(
          "hash_ids", hashIds.length + " hash ids for a prompt of " + (prompt.length + blockSize - 1) / blockSize + " blocks");
    }
    long[] supplied = null;
    if (hashIds != null) {
      supplied = java.util.Arrays.copyOf(hashIds, Math.min(hashIds.length, prompt.length / blockSize));
    }
    PagedRequest r = new PagedRequest(this, id, prompt, loraName, cacheSalt, supplied);
    if (caching) {
      hashNewBlocks(r);
    }
    requests.put(id, r);
    return r;
  }

  private void hashNewBlocks(PagedRequest r) {
    int full = r.numTokens() / blockSize;
    if (full <= r.numHashes) {
      return;
    }
    r.ensureHashCapacity(full);
    int[] tokens = r.tokens.raw();
    for (int i = r.numHashes; i < full; i++) {
      if (i < r.suppliedHashIds.length) {
        r.hashes[2 * i] = r.suppliedHashIds[i];
        r.hashes[2 * i + 1] = BlockHasher.HASH_ID_LO;
        continue;
      }
      long parentHi = i == 0 ? BlockHasher.NONE_HI : r.hashes[2 * i - 2];
      long parentLo = i == 0 ? BlockHasher.NONE_LO : r.hashes[2 * i - 1];
      hasher.hashBlock(parentHi, parentLo, tokens, i * blockSize, blockSize, r.lora, i == 0 ? r.salt : null, r.hashes, 2 * i);
    }
    r.numHashes = full;
  }

  /** Appends sampled tokens to a request (hashing every block they fill). */
  @Override
  public void appendTokens(PagedRequest r, int[] tokens) {
    beginOp();
    live(r, "req");
    notSwapped(r, "append");
    if ((long) r.numTokens() + tokens.length > config.maxModelLen()) {
      throw new BlockOpException(
          "tokens", r + " would reach " + ((long) r.numTokens() + tokens.length) + " tokens, more than max_model_len " + config.maxModelLen());
    }
    for (int t : tokens) {
      appendInternal(r, t);
    }
  }

  private void appendInternal(PagedRequest r, int token) {
    r.tokens.add(token);
    epoch++;
    if (caching && r.numTokens() % blockSize == 0) {
      hashNewBlocks(r);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Lookup and allocation

  /**
   * Looks up the longest cached prefix of a waiting request ({@code get_computed_blocks}), remembers the hit blocks
   * for the next {@link #allocateSlots}, counts statistics and returns the number of hit blocks.
   */
  @Override
  public int lookup(PagedRequest r) {
    beginOp();
    int hits = lookupInternal(r);
    log.hitBlocks.addAll(r.pendingHits);
    return hits;
  }

  private int lookupInternal(PagedRequest r) {
    live(r, "req");
    notSwapped(r, "lookup");
    if (r.status == PagedRequest.Status.RUNNING) {
      throw new BlockOpException(
          "req", "lookup: " + r + " is running (" + r.numComputedTokens + " tokens computed); vLLM's scheduler looks up only waiting requests (KVCacheManager.get_computed_blocks, vllm/v1/core/kv_cache_manager.py)");
    }
    r.pendingHits.clear();
    r.pendingEpoch = epoch;
    if (!caching) {
      return 0;
    }
    int maxBlocks = Math.min((r.numTokens() - 1) / blockSize, r.numHashes);
    long[] h = r.hashes;
    for (int i = 0; i < maxBlocks; i++) {
      int b = pool.lookup(h[2 * i], h[2 * i + 1]);
      if (b < 0) {
        break;
      }
      r.pendingHits.add(b);
    }
    stats.record(r.numTokens(), r.pendingHits.size() * blockSize, r.numPreemptions > 0);
    return r.pendingHits.size();
  }

  /**
   * vLLM's {@code KVCacheManager.allocate_slots} with the hits of the request's last {@link #lookup}:
   * returns false and changes nothing when the free blocks do not suffice; otherwise advances the
   * computed tokens by hits plus {@code numNewTokens}.
   */
  @Override
  public boolean allocateSlots(PagedRequest r, int numNewTokens, int numLookaheadTokens) {
    beginOp();
    return allocateInternal(r, numNewTokens, numLookaheadTokens, true);
  }

  private boolean allocateInternal(PagedRequest r, int numNewTokens, int numLookaheadTokens, boolean useHits) {
    live(r, "req");
    notSwapped(r, "allocate");
    if (numNewTokens <= 0) {
      throw new BlockOpException("num_new_tokens", "must be positive: allocate_slots rejects zero new tokens (KVCacheManager.allocate_slots, vllm/v1/core/kv_cache_manager.py)");
    }
    if (numLookaheadTokens < 0) {
      throw new BlockOpException("lookahead", "must not be negative");
    }
    IntList hits = useHits ? r.pendingHits : NO_HITS;
    if (hits.size() > 0 && r.pendingEpoch != epoch) {
      throw new BlockOpException(
          "req", "the hits of " + r + "'s last lookup are stale (blocks or tokens changed since); look up again");
    }
    int hitTokens = hits.size() * blockSize;
    long uncomputed = (long) r.numTokens() - r.numComputedTokens - hitTokens;
    if (numNewTokens > uncomputed) {
      throw new BlockOpException(
          "num_new_tokens", numNewTokens + " new tokens exceed the " + uncomputed + " tokens of " + r + " not yet computed or hit");
    }
    log.hitBlocks.addAll(hits);
    long local = (long) r.numComputedTokens + hitTokens;
    long total = Math.min(local, config.maxModelLen());
    long slots = Math.min(total + numNewTokens + numLookaheadTokens, config.maxModelLen());
    int required = (int) ((slots + blockSize - 1) / blockSize);
    IntList table = r.table;
    int tableLen = table.size();
    boolean running = r.numCachedBlocks >= 0;

    int firstWritten = (int) (local / blockSize);
    int lastWritten = (int) Math.min((local + numNewTokens - 1) / blockSize, tableLen - 1);
    int copies = 0;
    for (int j = firstWritten; j <= lastWritten; j++) {
      if (pool.refCnt(table.get(j)) > 1) {
        copies++;
      }
    }
    int need;
    if (running) {
      need = Math.max(required - tableLen, 0) + copies;
    } else {
      int evictableHits = 0;
      for (int i = 0; i < hits.size(); i++) {
        if (pool.refCnt(hits.get(i)) == 0) {
          evictableHits++;
        }
      }
      need = Math.max(required - hits.size() - tableLen, 0) + evictableHits + copies;
    }
    if (need > pool.numFreeBlocks()) {
      return false;
    }

    epoch++;
    for (int i = 0; i < hits.size(); i++) {
      int b = hits.get(i);
      pool.touch(b);
      table.add(b);
    }
    if (!running) {
      r.numCachedBlocks = hits.size();
    }
    r.status = PagedRequest.Status.RUNNING;
    if (copies > 0) {
      for (int j = firstWritten; j <= lastWritten; j++) {
        int old = table.get(j);
        if (pool.refCnt(old) > 1) {
          int fresh = pool.popBlock(log.evicted);
          pool.freeBlock(old);
          table.set(j, fresh);
          log.copies.add(old);
          log.copies.add(fresh);
          log.newBlocks.add(fresh);
        }
      }
    }
    for (int n = required - table.size(); n > 0; n--) {
      int b = pool.popBlock(log.evicted);
      table.add(b);
      log.newBlocks.add(b);
    }
    r.numComputedTokens += hitTokens + numNewTokens;
    r.pendingHits.clear();
    if (caching) {
      cacheFullBlocks(r, Math.min(r.numComputedTokens, r.numTokens()));
    }
    return true;
  }

  private void cacheFullBlocks(PagedRequest r, int numTokens) {
    int numFull = numTokens / blockSize;
    int from = r.numCachedBlocks;
    if (from >= numFull) {
      return;
    }
    IntList table = r.table;
    long[] h = r.hashes;
    for (int i = from; i < numFull; i++) {
      int b = table.get(i);
      long hi = h[2 * i];
      long lo = h[2 * i + 1];
      if (v0) {
        int existing = pool.lookup(hi, lo);
        if (existing >= 0 && existing != b) {
          pool.touch(existing);
          table.set(i, existing);
          pool.freeBlock(b);
          log.dedups.add(b);
          log.dedups.add(existing);
          continue;
        }
      }
      pool.cacheBlock(b, hi, lo, (i + 1) * blockSize);
      log.newlyCached.add(b);
    }
    r.numCachedBlocks = numFull;
  }

  private OpLog.Admission admission(int requiredBlocks) {
    int wm = config.watermarkBlocks();
    if (pool.usableBlocks() - requiredBlocks < wm) {
      return OpLog.Admission.NEVER;
    }
    if (pool.numFreeBlocks() - requiredBlocks >= wm) {
      return OpLog.Admission.OK;
    }
    return OpLog.Admission.LATER;
  }

  @Override
  public int blocksToAppend(PagedRequest r, int numNewTokens) {
    live(r, "req");
    if (r.status != PagedRequest.Status.RUNNING || numNewTokens <= 0) {
      throw new BlockOpException("req", "blocks_to_append: " + r + " is not running or asks for no tokens");
    }
    long local = r.numComputedTokens;
    long slots = Math.min(local + numNewTokens, config.maxModelLen());
    int required = (int) ((slots + blockSize - 1) / blockSize);
    IntList table = r.table;
    int firstWritten = (int) (local / blockSize);
    int lastWritten = (int) Math.min((local + numNewTokens - 1) / blockSize, table.size() - 1);
    int copies = 0;
    for (int j = firstWritten; j <= lastWritten; j++) {
      if (pool.refCnt(table.get(j)) > 1) {
        copies++;
      }
    }
    return Math.max(required - table.size(), 0) + copies;
  }

  /**
   * The scheduler's waiting path ({@code Scheduler.schedule}): in v0 the watermark test first
   * ({@code can_allocate}); then
   * lookup and {@code allocate_slots} for every token not hit. Returns whether it was admitted.
   */
  @Override
  public boolean admit(PagedRequest r) {
    beginOp();
    live(r, "req");
    notSwapped(r, "admit");
    if (r.status == PagedRequest.Status.RUNNING) {
      throw new BlockOpException("req", "admit: " + r + " is already running");
    }
    if (v0) {
      int required = (r.numTokens() + blockSize - 1) / blockSize;
      log.admission = admission(required);
      if (log.admission != OpLog.Admission.OK) {
        return false;
      }
    }
    int hits = lookupInternal(r);
    return allocateInternal(r, r.numTokens() - hits * blockSize, 0, true);
  }

  /**
   * One decode step of a request: allocate slots for its uncomputed tokens (if any, without prefix
   * hits), then append the sampled {@code token}. Returns false, changing nothing, when the
   * allocation fails.
   */
  @Override
  public boolean decode(PagedRequest r, int token) {
    beginOp();
    live(r, "req");
    notSwapped(r, "decode");
    if (r.numTokens() + 1L > config.maxModelLen()) {
      throw new BlockOpException("token", r + " would exceed max_model_len " + config.maxModelLen());
    }
    int uncomputed = r.numTokens() - r.numComputedTokens;
    if (uncomputed > 0 && !allocateInternal(r, uncomputed, 0, false)) {
      return false;
    }
    appendInternal(r, token);
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Release

  /** Finishes a request: frees its blocks (v1 tail first, v0 head first) and forgets it. */
  @Override
  public void free(PagedRequest r) {
    beginOp();
    live(r, "req");
    if (r.status == PagedRequest.Status.SWAPPED) {
      releaseHostBlocks(r);
    } else {
      releaseTable(r);
    }
    r.numCachedBlocks = -1;
    r.pendingHits.clear();
    r.status = PagedRequest.Status.FINISHED;
    requests.remove(r.id());
    epoch++;
  }

  private void releaseTable(PagedRequest r) {
    IntList table = r.table;
    pool.freeBlocks(table.raw(), 0, table.size(), !v0);
    table.clear();
  }

  private void releaseHostBlocks(PagedRequest r) {
    for (int i = 0; i < r.hostTable.size(); i++) {
      releaseHostBlock(r.hostTable.get(i));
    }
    r.hostTable.clear();
  }

  private void releaseHostBlock(int h) {
    if (--hostRefs[h - config.numBlocks()] > 0) {
      return;
    }
    if (config.freeOrder() == BlockManagerConfig.FreeOrder.LIFO) {
      hostFree.addFirst(h);
    } else {
      hostFree.addLast(h);
    }
  }

  /**
   * Preempts a running request by recompute ({@code Scheduler._preempt_request}): frees its blocks as {@link #free} does,
   * sets its computed tokens to zero and counts the preemption; it waits to be admitted again.
   */
  @Override
  public void preempt(PagedRequest r) {
    beginOp();
    live(r, "req");
    if (r.status != PagedRequest.Status.RUNNING) {
      throw new BlockOpException("req", "preempt: " + r + " is not running (" + r.status.name().toLowerCase(java.util.Locale.ROOT) + ")");
    }
    releaseTable(r);
    r.numComputedTokens = 0;
    r.numCachedBlocks = -1;
    r.numPreemptions++;
    r.pendingHits.clear();
    r.status = PagedRequest.Status.WAITING;
    preemptions++;
    epoch++;
  }

  /** Clears the prefix cache if no usable block is referenced ({@code reset_prefix_cache}); returns whether it did. */
  @Override
  public boolean resetPrefixCache() {
    beginOp();
    boolean ok = pool.resetPrefixCache();
    if (ok) {
      epoch++;
    }
    return ok;
  }

  // ---------------------------------------------------------------------------------------------
  // v0: fork and swap

  /**
   * Forks a running request (v0's {@code fork}): the child gets the parent's tokens, computed tokens and a
   * copy of its block table, and every block gains a reference. Nothing is allocated. v0 only.
   */
  @Override
  public PagedRequest fork(PagedRequest parent, String childId) {
    beginOp();
    requireV0("fork");
    live(parent, "parent");
    if (parent.status != PagedRequest.Status.RUNNING) {
      throw new BlockOpException("parent", "fork: " + parent + " is not running");
    }
    if (childId == null || childId.isEmpty() || requests.containsKey(childId)) {
      throw new BlockOpException("child", "fork: child id '" + childId + "' is empty or already exists");
    }
    PagedRequest child = new PagedRequest(this, childId, parent.tokens(), parent.loraName, parent.cacheSalt, parent.suppliedHashIds);
    child.ensureHashCapacity(parent.numHashes);
    System.arraycopy(parent.hashes, 0, child.hashes, 0, 2 * parent.numHashes);
    child.numHashes = parent.numHashes;
    child.numComputedTokens = parent.numComputedTokens;
    child.numCachedBlocks = parent.numCachedBlocks;
    child.status = PagedRequest.Status.RUNNING;
    for (int i = 0; i < parent.table.size(); i++) {
      int b = parent.table.get(i);
      pool.touch(b);
      child.table.add(b);
    }
    requests.put(childId, child);
    epoch++;
    return child;
  }

  /**
   * Swaps a running request out (v0's swap-out): {@link #swapOut(List)} of a group of one. Returns
   * false, changing nothing, when the host pool lacks free blocks. v0 only.
   */
  @Override
  public boolean swapOut(PagedRequest r) {
    return swapOut(List.of(r));
  }

  /**
   * Swaps a sequence group out (v0 {@code Scheduler}'s swap-out, {@code can_swap_out}): each distinct block of the requests' tables gets
   * exactly one host block (a block that forked requests share is mapped, and its bytes moved,
   * once; the host block counts one reference per table), the blocks are freed (each table head
   * first, in the order given) and the requests wait swapped. Returns false, changing nothing, when
   * the host pool lacks free blocks for the distinct blocks. v0 only.
   */
  @Override
  public boolean swapOut(List<PagedRequest> group) {
    beginOp();
    requireV0("swap_out");
    for (PagedRequest r : group) {
      live(r, "req");
      if (r.status != PagedRequest.Status.RUNNING) {
        throw new BlockOpException("req", "swap_out: " + r + " is not running");
      }
    }
    Map<Integer, Integer> hostOf = new LinkedHashMap<>();
    for (PagedRequest r : group) {
      for (int i = 0; i < r.table.size(); i++) {
        hostOf.putIfAbsent(r.table.get(i), -1);
      }
    }
    if (hostOf.size() > hostFree.size()) {
      return false;
    }
    for (Map.Entry<Integer, Integer> e : hostOf.entrySet()) {
      int h = hostFree.pollFirst();
      e.setValue(h);
      log.mapping.add(e.getKey());
      log.mapping.add(h);
    }
    log.bytesMoved = hostOf.size() * config.blockBytes();
    swappedOutBytes += log.bytesMoved;
    for (PagedRequest r : group) {
      for (int i = 0; i < r.table.size(); i++) {
        int h = hostOf.get(r.table.get(i));
        r.hostTable.add(h);
        hostRefs[h - config.numBlocks()]++;
      }
      releaseTable(r);
      r.pendingHits.clear();
      r.status = PagedRequest.Status.SWAPPED;
    }
    epoch++;
    return true;
  }

  /**
   * Swaps a request back in (v0's swap-in): {@link #swapIn(List)} of a group of one. Returns false,
   * changing nothing, when the watermark says later or never. v0 only.
   */
  @Override
  public boolean swapIn(PagedRequest r) {
    return swapIn(List.of(r));
  }

  /**
   * Swaps a sequence group back in (v0 {@code Scheduler}'s swap-in, {@code can_swap_in}): the watermark test on its distinct host blocks,
   * then each distinct host block becomes one device block that every table holding it shares
   * again: a cached full block is looked up by hash and re-used, the others are popped and copied
   * from the host. Returns false, changing nothing, when the watermark says later or never. v0
   * only.
   */
  @Override
  public boolean swapIn(List<PagedRequest> group) {
    beginOp();
    requireV0("swap_in");
    for (PagedRequest r : group) {
      live(r, "req");
      if (r.status != PagedRequest.Status.SWAPPED) {
        throw new BlockOpException("req", "swap_in: " + r + " is not swapped out");
      }
    }
    // Each distinct host block, with the first (request, position) that holds it.
    Map<Integer, int[]> firstHolder = new LinkedHashMap<>();
    for (int k = 0; k < group.size(); k++) {
      PagedRequest r = group.get(k);
      for (int j = 0; j < r.hostTable.size(); j++) {
        firstHolder.putIfAbsent(r.hostTable.get(j), new int[] {k, j});
      }
    }
    int n = firstHolder.size();
    log.admission = admission(n);
    if (log.admission != OpLog.Admission.OK) {
      return false;
    }
    int[] hosts = new int[n];
    int[] hitAt = new int[n];
    int need = 0;
    int d = 0;
    for (Map.Entry<Integer, int[]> e : firstHolder.entrySet()) {
      hosts[d] = e.getKey();
      PagedRequest r = group.get(e.getValue()[0]);
      int j = e.getValue()[1];
      hitAt[d] = caching && j < r.numCachedBlocks ? pool.lookup(r.hashHi(j), r.hashLo(j)) : -1;
      if (hitAt[d] < 0 || pool.refCnt(hitAt[d]) == 0) {
        need++;
      }
      d++;
    }
    if (need > pool.numFreeBlocks()) {
      log.admission = OpLog.Admission.LATER;
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (hitAt[i] >= 0) {
        pool.touch(hitAt[i]);
        log.hitBlocks.add(hitAt[i]);
      }
    }
    Map<Integer, Integer> deviceOf = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      int b = hitAt[i];
      if (b < 0) {
        b = pool.popBlock(log.evicted);
        log.newBlocks.add(b);
        log.mapping.add(hosts[i]);
        log.mapping.add(b);
        log.bytesMoved += config.blockBytes();
        int[] at = firstHolder.get(hosts[i]);
        PagedRequest r = group.get(at[0]);
        int j = at[1];
        if (caching && j < r.numCachedBlocks) {
          pool.cacheBlock(b, r.hashHi(j), r.hashLo(j), (j + 1) * blockSize);
          log.newlyCached.add(b);
        }
      }
      deviceOf.put(hosts[i], b);
    }
    swappedInBytes += log.bytesMoved;
    // The first table to hold a block takes the reference its pop or hit gave; each further one adds one.
    java.util.Set<Integer> referenced = new java.util.HashSet<>();
    for (PagedRequest r : group) {
      for (int j = 0; j < r.hostTable.size(); j++) {
        int b = deviceOf.get(r.hostTable.get(j));
        if (!referenced.add(b)) {
          pool.touch(b);
        }
        r.table.add(b);
      }
      releaseHostBlocks(r);
      r.status = PagedRequest.Status.RUNNING;
    }
    epoch++;
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Invariants

  /**
   * Checks the whole manager: per request, its state, hashes and table; reference counts equal the
   * number of tables holding each block; every block is free or referenced, never both; the hash
   * index agrees with the block hashes; the free queue is a proper list; host blocks balance.
   * Throws {@link InvariantViolation}.
   */
  @Override
  public void checkInvariants() {
    int n = pool.numBlocks();
    int[] expected = new int[n];
    int[] seenIn = new int[n];
    int hosts = config.numHostBlocks();
    boolean[] hostUsed = new boolean[hosts];
    int[] hostSeenIn = new int[hosts];
    int[] hostRefCount = new int[hosts];
    int hostUsedCount = 0;
    int stamp = 0;
    for (PagedRequest r : requests.values()) {
      stamp++;
      String who = r.toString();
      if (r.status == PagedRequest.Status.FINISHED) {
        fail(who + " is finished but still listed");
      }
      int expectedHashes = caching ? r.numTokens() / blockSize : 0;
      if (r.numHashes != expectedHashes) {
        fail(who + " has " + r.numHashes + " block hashes, expected " + expectedHashes);
      }
      if (r.numTokens() > config.maxModelLen()) {
        fail(who + " is longer than max_model_len");
      }
      switch (r.status) {
        case WAITING -> {
          if (r.table.size() != 0 || r.numComputedTokens != 0 || r.numCachedBlocks != -1 || r.hostTable.size() != 0) {
            fail(who + " is waiting but holds blocks or computed tokens");
          }
        }
        case SWAPPED -> {
          if (r.table.size() != 0 || r.hostTable.size() < ceil(r.numComputedTokens)) {
            fail(who + " is swapped but its tables do not match");
          }
          for (int i = 0; i < r.hostTable.size(); i++) {
            int h = r.hostTable.get(i) - n;
            if (h < 0 || h >= hosts || hostSeenIn[h] == stamp) {
              fail(who + " holds host block " + r.hostTable.get(i) + " outside the host pool or twice");
            }
            hostSeenIn[h] = stamp;
            if (hostRefCount[h]++ == 0) {
              hostUsed[h] = true;
              hostUsedCount++;
            }
          }
        }
        case RUNNING -> {
          if (r.numComputedTokens < 1 || r.numComputedTokens > r.numTokens()) {
            fail(who + " is running with " + r.numComputedTokens + " of " + r.numTokens() + " tokens computed");
          }
          if (r.table.size() < ceil(r.numComputedTokens)) {
            fail(who + " has " + r.table.size() + " blocks for " + r.numComputedTokens + " computed tokens");
          }
          int expectedCached = caching ? r.numComputedTokens / blockSize : 0;
          if (r.numCachedBlocks != expectedCached) {
            fail(who + " counts " + r.numCachedBlocks + " cached blocks, expected " + expectedCached);
          }
          if (r.hostTable.size() != 0) {
            fail(who + " is running but holds host blocks");
          }
          for (int i = 0; i < r.table.size(); i++) {
            int b = r.table.get(i);
            if (b < 0 || b >= n || b == pool.nullBlock()) {
              fail(who + " holds block " + b);
            }
            if (seenIn[b] == stamp) {
              fail(who + " holds block " + b + " twice");
            }
            seenIn[b] = stamp;
            expected[b]++;
            if (i < r.numCachedBlocks
                && (!pool.hasHash(b) || pool.hashHi(b) != r.hashHi(i) || pool.hashLo(b) != r.hashLo(i))) {
              fail(who + " block " + i + " (id " + b + ") does not hold the request's hash for that position");
            }
          }
        }
        default -> fail(who + " has status " + r.status);
      }
    }
    pool.checkInvariants(expected);
    for (int h = 0; h < hosts; h++) {
      if (hostRefCount[h] != hostRefs[h]) {
        fail("host block " + (n + h) + " has " + hostRefs[h] + " references, held by " + hostRefCount[h] + " swapped tables");
      }
    }
    if (hostUsedCount + hostFree.size() != hosts) {
      fail("host blocks do not balance: " + hostUsedCount + " used + " + hostFree.size() + " free != " + hosts);
    }
    for (int i = 0; i < hostFree.size(); i++) {
      int h = hostFree.get(i) - n;
      if (h < 0 || h >= hosts || hostUsed[h]) {
        fail("host block " + hostFree.get(i) + " is free and used, twice free, or outside the pool");
      }
      hostUsed[h] = true;
    }
  }

  private int ceil(int tokens) {
    return (tokens + blockSize - 1) / blockSize;
  }

  private static void fail(String problem) {
    throw new InvariantViolation("paged", problem);
  }
}

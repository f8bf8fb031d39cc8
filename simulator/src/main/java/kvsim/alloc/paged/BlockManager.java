package kvsim.alloc.paged;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.InvariantViolation;

/**
 * What vLLM's two KV-cache block managers share, request by request and block id for block id:
 * requests and their tokens, block hashes, the prefix lookup, {@code allocate_slots}, release,
 * preemption, the prefix-cache reset and the invariant checker, over one {@link BlockPool}. The two
 * managers are {@link V1KvCacheManager} (v1's {@code KVCacheManager}, the default) and {@link
 * V0BlockManager} (v0's {@code BlockSpaceManagerV2}); each class comment gives its rules, and {@link
 * #of} builds the one a {@link BlockManagerConfig}'s mode names.
 *
 * <p>Sources. v1: vLLM at commit ec5ef0a, {@code vllm/v1/core/kv_cache_manager.py} ({@code
 * KVCacheManager}), {@code vllm/v1/core/block_pool.py} ({@code BlockPool}), {@code
 * vllm/v1/core/kv_cache_utils.py} ({@code FreeKVCacheBlockQueue}, block hashes) and {@code
 * vllm/v1/core/sched/scheduler.py} ({@code Scheduler}). v0: vLLM at commit 1fb9c1b (between
 * v0.6.2 and v0.6.3), {@code vllm/core/block_manager_v2.py} ({@code BlockSpaceManagerV2}), {@code
 * vllm/core/block/prefix_caching_block.py}, {@code vllm/core/evictor_v2.py} and {@code
 * vllm/core/scheduler.py}. The rules of the subclasses name the functions of those files they
 * follow; the shared rules are v1's (the lookup, {@code allocate_slots}' block count and caching
 * moment, preemption), which v0 follows too (Simplifications on {@link V0BlockManager}).
 *
 * <p>Misuse (an unknown request, a lookup of a running one, zero new tokens) throws {@link
 * BlockOpException} before anything changes; lack of memory is a {@code false} result. Each
 * operation records its details in {@link #log()}.
 */
public abstract sealed class BlockManager implements KvBlockManager permits V1KvCacheManager, V0BlockManager {
  private static final IntList NO_HITS = new IntList(1);

  // Package-private for the two managers: the state they share.
  final BlockManagerConfig config;
  final int blockSize;
  final boolean caching;
  final BlockPool pool;
  private final BlockHasher hasher;
  private final PrefixCacheStats stats = new PrefixCacheStats();
  final OpLog log = new OpLog();
  final Map<String, PagedRequest> requests = new LinkedHashMap<>();
  /** Bumped whenever blocks or tokens change: the hits of an older lookup are stale. */
  long epoch;
  private long clock;
  private long preemptions;

  /** Builds an empty manager over a block pool of the given kind. */
  BlockManager(BlockManagerConfig config, BlockPool.Kind kind) {
    this.config = config;
    this.blockSize = config.blockSize();
    this.caching = config.enableCaching();
    this.hasher = new BlockHasher(config.hash());
    this.pool = new BlockPool("paged", config.numBlocks(), caching, kind);
  }

  /** Builds the manager a configuration's mode names: {@link V1KvCacheManager} or {@link V0BlockManager}. */
  public static BlockManager of(BlockManagerConfig config) {
    return config.mode() == BlockManagerConfig.Mode.V0 ? new V0BlockManager(config) : new V1KvCacheManager(config);
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

  @Override
  public void recordBlockLists(boolean on) {
    log.setBlockLists(on);
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
  public abstract int numFreeHostBlocks();

  /** Returns the cached blocks evicted so far. */
  public long evictionCount() {
    return pool.evictionCount();
  }

  /** Returns the preemptions so far. */
  public long preemptionCount() {
    return preemptions;
  }

  /** Returns the bytes copied device to host by swap-outs so far (v0 only; 0 in v1). */
  public abstract long swappedOutBytes();

  /** Returns the bytes copied host to device by swap-ins so far (v0 only; 0 in v1). */
  public abstract long swappedInBytes();

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

  /** Whether allocateSlots takes its short way where it can (Note [Slots within the table]); off only in the reference test. */
  private boolean slotsFastPath = true;

  /** Turns allocateSlots' short way on or off (the reference test compares both). */
  void slotsFastPath(boolean on) {
    slotsFastPath = on;
  }

  final void beginOp() {
    log.reset();
    pool.setNow(++clock);
  }

  final PagedRequest live(PagedRequest r, String field) {
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
    return add(id, java.util.Arrays.copyOf(prompt, prompt.length + 16), prompt.length, loraName, cacheSalt, hashIds);
  }

  @Override
  public PagedRequest addRequest(String id, int[] buffer, int promptLength, long[] hashIds) {
    if (promptLength < 0 || promptLength > buffer.length) {
      throw new IllegalArgumentException("a prompt of " + promptLength + " tokens in a buffer of " + buffer.length);
    }
    return add(id, buffer, promptLength, null, null, hashIds);
  }

  @Override
  public PromptHasher promptHasher() {
    return new PromptHasher(config);
  }

  @Override
  public PagedRequest addRequest(String id, PromptHasher.Prepared prompt) {
    if (prompt.config != config) {
      throw new IllegalArgumentException("a prompt prepared by another manager's prompt hasher");
    }
    return add(id, prompt.buffer, prompt.promptLength, null, null, prompt.supplied, prompt);
  }

  private PagedRequest add(String id, int[] buffer, int promptLength, String loraName, String cacheSalt, long[] hashIds) {
    return add(id, buffer, promptLength, loraName, cacheSalt, hashIds, null);
  }

  /** Adds a request; with {@code prepared}, its prompt's hashes are adopted from it, not computed (Note [Prompts hashed ahead]). */
  private PagedRequest add(String id, int[] buffer, int promptLength, String loraName, String cacheSalt, long[] hashIds, PromptHasher.Prepared prepared) {
    beginOp();
    if (id == null || id.isEmpty()) {
      throw new BlockOpException("req", "a request needs a non-empty id");
    }
    if (requests.containsKey(id)) {
      throw new BlockOpException("req", "request " + id + " already exists");
    }
    if (promptLength == 0) {
      throw new BlockOpException("prompt", "the prompt of request " + id + " is empty");
    }
    if (promptLength > config.maxModelLen()) {
      throw new BlockOpException(
          "prompt", "the prompt of request " + id + " has " + promptLength + " tokens, more than max_model_len " + config.maxModelLen());
    }
    if (tooManyHashIds(hashIds, promptLength, blockSize)) {
      throw new BlockOpException(
          "hash_ids", hashIds.length + " hash ids for a prompt of " + (promptLength + blockSize - 1) / blockSize + " blocks");
    }
    PagedRequest r;
    if (prepared != null) {
      r = new PagedRequest(this, id, buffer, promptLength, null, null, prepared.supplied, prepared.hashes, prepared.numHashes);
      r.hashedAhead = prepared.hashedAhead;
      r.expectedTokens = prepared.expectedTokens;
      r.expectedFrom = promptLength;
      r.expectedFirst = prepared.expectedFirst;
      r.expectedBase = prepared.expectedBase;
    } else {
      r = new PagedRequest(this, id, buffer, promptLength, loraName, cacheSalt, suppliedIds(hashIds, promptLength, blockSize), blockSize);
      if (caching) {
        hashNewBlocks(r);
      }
    }
    requests.put(id, r);
    return r;
  }

  /** Hashes the request's full blocks not hashed yet, taking those hashed ahead from the tokens since appended (Note [Output hashed ahead] on PromptHasher). */
  private void hashNewBlocks(PagedRequest r) {
    int full = r.numTokens() / blockSize;
    if (full <= r.numHashes) {
      return;
    }
    r.ensureHashCapacity(full);
    int from = Math.max(r.numHashes, Math.min(r.hashedAhead, full));
    if (from < full) {
      hashBlocks(hasher, blockSize, r.tokens.raw(), r.suppliedHashIds, r.lora, r.salt, r.hashes, from, full);
    }
    r.numHashes = full;
  }

  /** Whether {@code hashIds} (null: none) name more blocks than a prompt of {@code promptLength} tokens has. */
  static boolean tooManyHashIds(long[] hashIds, int promptLength, int blockSize) {
    return hashIds != null && hashIds.length > (promptLength + blockSize - 1) / blockSize;
  }

  /** The request's own copy of {@code hashIds} (null: none), those of the prompt's full blocks only. */
  static long[] suppliedIds(long[] hashIds, int promptLength, int blockSize) {
    return hashIds == null ? null : java.util.Arrays.copyOf(hashIds, Math.min(hashIds.length, promptLength / blockSize));
  }

  /**
   * Fills {@code hashes} with the hashes of blocks {@code from} to {@code to - 1} of {@code tokens},
   * those of the blocks before {@code from} already there: a supplied hash id where there is one,
   * else the chained hash of the block's tokens under its parent's (the LoRA name in every block's
   * extra keys, the cache salt in the first block's). The one rule of a request's block hashes, for
   * the manager and for a {@link PromptHasher}.
   */
  static void hashBlocks(BlockHasher hasher, int blockSize, int[] tokens, long[] supplied, byte[] lora, byte[] salt, long[] hashes, int from, int to) {
    for (int i = from; i < to; i++) {
      if (i < supplied.length) {
        hashes[2 * i] = supplied[i];
        hashes[2 * i + 1] = BlockHasher.HASH_ID_LO;
        continue;
      }
      long parentHi = i == 0 ? BlockHasher.NONE_HI : hashes[2 * i - 2];
      long parentLo = i == 0 ? BlockHasher.NONE_LO : hashes[2 * i - 1];
      hasher.hashBlock(parentHi, parentLo, tokens, i * blockSize, blockSize, lora, i == 0 ? salt : null, hashes, 2 * i);
    }
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
    r.append(token);
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
    log.listHits(r.pendingHits);
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
    if (slotsFastPath && fitsItsBlocks(r, numNewTokens, numLookaheadTokens)) {
      // Note [Slots within the table]
      epoch++;
      r.numComputedTokens += numNewTokens;
      if (caching) {
        cacheFullBlocks(r, r.numComputedTokens);
      }
      return true;
    }
    return allocateInternal(r, numNewTokens, numLookaheadTokens, true);
  }

  // Note [Slots within the table]: in a serving run almost every allocate_slots is a running
  // request's next decode token, which lands in a block its table already holds (15 of every 16
  // with blocks of 16 tokens). allocateInternal reaches the same end the long way: need 0, no hits,
  // no new block, no copy. fitsItsBlocks admits exactly the calls that would take that way and
  // throw nothing (a running request of this manager with no pending hits, its new tokens within
  // its uncomputed ones, max_model_len and the table's slots, no lookahead, a manager that never
  // copies on write), and allocateSlots then does only what allocateInternal would change: the
  // epoch, the computed tokens and the blocks they fill. BlockManagerProperties runs its random v1
  // scripts both ways against the reference model.

  /** Whether {@code allocateSlots(r, numNewTokens, numLookaheadTokens)} only advances {@code r} within its blocks (Note [Slots within the table]). */
  boolean fitsItsBlocks(PagedRequest r, int numNewTokens, int numLookaheadTokens) {
    if (r == null || r.owner != this || r.status != PagedRequest.Status.RUNNING || r.numCachedBlocks < 0
        || numNewTokens <= 0 || numLookaheadTokens != 0 || r.pendingHits.size() > 0 || copiesOnWrite()) {
      return false;
    }
    long slots = (long) r.numComputedTokens + numNewTokens;
    return slots <= r.numTokens() && slots <= config.maxModelLen() && slots <= (long) r.table.size() * blockSize;
  }

  // Note [Quiet decode steps]: between two block boundaries, a running request's decode step, an
  // allocate_slots of one token within its table followed by the append of the token sampled,
  // moves only counts here: its computed tokens, its tokens and the epoch; no block is taken or
  // filled (cached). Its append may complete a block, whose hash is then computed: a pure
  // function of the request's tokens, read only when the block is cached or the request looked
  // up, neither of which can happen before the request's next step that is not quiet. A serving
  // scheduler may take such steps without this manager (kvsim.serving's Note [Quiet decode steps]
  // on QueueScheduler) and bring the request up to date before anything else reads or changes it:
  // quietDecodeSteps says how many steps in a row qualify, catchUpQuietly applies them at once and
  // hashes the blocks they completed. The operation clock, which stamps blocks' access times, then
  // counts fewer operations; only an LRU evictor (v0's) reads those, so a manager with one answers 0.

  /**
   * Returns how many decode steps in a row {@code r} can take from now that move only counts (Note
   * [Quiet decode steps]): each computes one token within its table, filling no block, and
   * appends one, within {@code max_model_len}. 0 unless {@code r} runs with exactly one token to
   * compute, no pending hits, under a manager that never copies on write and whose pool reads no
   * access times.
   */
  @Override
  public int quietDecodeSteps(PagedRequest r) {
    if (r.owner != this || r.status != PagedRequest.Status.RUNNING || r.numCachedBlocks < 0 || r.pendingHits.size() > 0 || copiesOnWrite()
        || pool.readsAccessTimes()) {
      return 0;
    }
    long computed = r.numComputedTokens;
    long tokens = r.numTokens();
    if (tokens != computed + 1) {
      return 0;
    }
    long capacity = (long) r.table.size() * blockSize;
    long filled = (computed / blockSize + 1) * blockSize; // the computed tokens that fill the block being written
    long steps = Math.min(capacity - computed, filled - computed - 1);
    steps = Math.min(steps, config.maxModelLen() - tokens);
    return (int) Math.max(0, steps);
  }

  /**
   * Brings {@code r} up to {@code computedTokens} computed tokens and appends {@code count} tokens of
   * {@code tokens}, hashing the blocks they complete: the outcome of quiet decode steps taken
   * without this manager (Note [Quiet decode steps]).
   *
   * @throws IllegalStateException when the steps were not quiet: they would fill or take a block,
   *     or the counts do not advance together
   */
  @Override
  public void catchUpQuietly(PagedRequest r, int computedTokens, int[] tokens, int count) {
    int steps = computedTokens - r.numComputedTokens;
    if (steps <= 0 || count != steps || steps > quietDecodeSteps(r)) {
      throw new IllegalStateException(r + ": " + steps + " computed and " + count + " appended tokens are not quiet decode steps");
    }
    epoch++;
    r.numComputedTokens = computedTokens;
    for (int k = 0; k < count; k++) {
      r.append(tokens[k]);
    }
    if (caching) {
      hashNewBlocks(r);
    }
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
    log.listHits(hits);
    long local = (long) r.numComputedTokens + hitTokens;
    long total = Math.min(local, config.maxModelLen());
    long slots = Math.min(total + numNewTokens + numLookaheadTokens, config.maxModelLen());
    int required = (int) ((slots + blockSize - 1) / blockSize);
    IntList table = r.table;
    int tableLen = table.size();
    boolean running = r.numCachedBlocks >= 0;

    // the blocks this step writes, each copied first if shared; none are shared without copy-on-write
    boolean cow = copiesOnWrite();
    int firstWritten = cow ? (int) (local / blockSize) : 0;
    int lastWritten = cow ? (int) Math.min((local + numNewTokens - 1) / blockSize, tableLen - 1) : -1;
    int copies = cow ? sharedBlocks(table, firstWritten, lastWritten) : 0;
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
          int fresh = pool.popBlock(log.evictedList());
          pool.freeBlock(old);
          table.set(j, fresh);
          log.copied(old, fresh);
          log.listNew(fresh);
        }
      }
    }
    for (int n = required - table.size(); n > 0; n--) {
      int b = pool.popBlock(log.evictedList());
      table.add(b);
      log.listNew(b);
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
      if (replacedByCached(table, i, b, hi, lo)) {
        continue;
      }
      pool.cacheBlock(b, hi, lo, (i + 1) * blockSize);
      log.listNewlyCached(b);
    }
    r.numCachedBlocks = numFull;
  }

  /**
   * Called as full block {@code b} at position {@code i} of {@code table} is about to be cached
   * under hash ({@code hi}, {@code lo}): returns true when the manager put an already cached block
   * with that hash in its place instead (v0's deduplication), false to cache {@code b}.
   */
  abstract boolean replacedByCached(IntList table, int i, int b, long hi, long lo);

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
    return Math.max(required - table.size(), 0) + sharedBlocks(table, firstWritten, lastWritten);
  }

  /**
   * Returns how many of {@code table}'s blocks {@code first..last} (those about to be written) are
   * shared, each of which a write copies first; none where the manager never copies on write.
   */
  private int sharedBlocks(IntList table, int first, int last) {
    if (!copiesOnWrite()) {
      return 0; // Note [No copy-on-write in v1] on V1KvCacheManager
    }
    int shared = 0;
    for (int j = first; j <= last; j++) {
      if (pool.refCnt(table.get(j)) > 1) {
        shared++;
      }
    }
    return shared;
  }

  /**
   * Whether a block about to be written may be shared and is then copied first (v0's fork and beam
   * search); false where no such block can exist (v1, Note [No copy-on-write in v1] on
   * V1KvCacheManager), which {@link #checkInvariants} then checks.
   */
  abstract boolean copiesOnWrite();

  /** A read-only count for the full-prompt admission gate ({@code can_fit_full_sequence}); see the interface. */
  @Override
  public int blocksForFullSequence(PagedRequest r) {
    live(r, "req");
    notSwapped(r, "can_fit_full_sequence");
    if (r.status == PagedRequest.Status.RUNNING) {
      throw new BlockOpException("req", "can_fit_full_sequence: " + r + " is running; vLLM's scheduler asks it only for waiting requests");
    }
    IntList hits = r.pendingHits;
    if (hits.size() > 0 && r.pendingEpoch != epoch) {
      throw new BlockOpException("req", "the hits of " + r + "'s last lookup are stale (blocks or tokens changed since); look up again");
    }
    long full = Math.min((long) r.numTokens(), config.maxModelLen());
    int required = (int) ((full + blockSize - 1) / blockSize);
    int evictableHits = 0;
    for (int i = 0; i < hits.size(); i++) {
      if (pool.refCnt(hits.get(i)) == 0) {
        evictableHits++;
      }
    }
    return Math.max(required - hits.size() - r.table.size(), 0) + evictableHits;
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
    if (!admissible(r)) {
      return false;
    }
    int hits = lookupInternal(r);
    return allocateInternal(r, r.numTokens() - hits * blockSize, 0, true);
  }

  /** Whether a waiting request may be admitted before its lookup (v0's watermark; always in v1). */
  abstract boolean admissible(PagedRequest r);

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
      releaseSwapped(r);
    } else {
      releaseTable(r);
    }
    r.numCachedBlocks = -1;
    r.pendingHits.clear();
    r.status = PagedRequest.Status.FINISHED;
    requests.remove(r.id());
    epoch++;
  }

  /** Frees a table's blocks into the pool (v1 tail first, v0 head first) and empties it. */
  abstract void releaseTable(PagedRequest r);

  /** Frees the host blocks of a swapped request (v0; v1 never swaps). */
  abstract void releaseSwapped(PagedRequest r);

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
    beginHostCheck();
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
          checkHostTable(r, who, stamp);
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
    endHostCheck();
    if (!copiesOnWrite()) {
      // Note [No copy-on-write in v1] on V1KvCacheManager: the blocks a running request writes next,
      // from its first block not wholly computed on, are its own.
      for (PagedRequest r : requests.values()) {
        for (int i = r.numComputedTokens / blockSize; r.status == PagedRequest.Status.RUNNING && i < r.table.size(); i++) {
          if (pool.refCnt(r.table.get(i)) != 1) {
            fail(r + " block " + i + " (id " + r.table.get(i) + "), which its next tokens are written into, is shared (" + pool.refCnt(r.table.get(i))
                + " references)");
          }
        }
      }
    }
  }

  /** Starts the host-pool part of {@link #checkInvariants()} (v0's swap space). */
  abstract void beginHostCheck();

  /** Checks and counts the host table of swapped request {@code r} ({@code stamp}: its turn in the walk). */
  abstract void checkHostTable(PagedRequest r, String who, int stamp);

  /** Ends the host-pool check: references and free host blocks against the tables counted. */
  abstract void endHostCheck();

  final int ceil(int tokens) {
    return (tokens + blockSize - 1) / blockSize;
  }

  static void fail(String problem) {
    throw new InvariantViolation("paged", problem);
  }
}

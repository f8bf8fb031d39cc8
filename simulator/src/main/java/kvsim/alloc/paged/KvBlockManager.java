package kvsim.alloc.paged;

import java.util.Collection;
import java.util.List;

/**
 * vLLM's KV-cache block manager as a script drives it: requests, prefix lookup, slot allocation,
 * free, preemption, v0's fork and swapping, and the state a script prints. The rules are vLLM's: v1 at commit ec5ef0a ({@code
 * vllm/v1/core/kv_cache_manager.py} {@code KVCacheManager}, {@code vllm/v1/core/sched/scheduler.py}
 * {@code Scheduler}), v0 at commit 1fb9c1b ({@code vllm/core/block_manager_v2.py} {@code
 * BlockSpaceManagerV2}, {@code vllm/core/scheduler.py}); {@link V1KvCacheManager} and {@link V0BlockManager} cite them rule by
 * rule.
 * {@code kvsim.registry.AllocatorRegistry#blockManager} builds one; code outside this package and
 * the registry uses this interface, never the manager classes.
 *
 * <p>Misuse (an unknown request, a lookup of a running one, zero new tokens) throws {@link
 * BlockOpException} before anything changes; lack of memory is a {@code false} result. Each
 * operation records its details in {@link #log()}.
 */
public interface KvBlockManager {
  /**
   * One cached block.
   *
   * @param block block id
   * @param hashPrefix the first 16 hex digits of its hash
   * @param refCnt its reference count
   * @param hashedTokens tokens from the start of the sequence to the end of the block
   */
  record CachedBlock(int block, String hashPrefix, int refCnt, int hashedTokens) {}

  /** Returns the settings. */
  BlockManagerConfig config();

  /** Tells {@code l} of every block taken from and released to the pool from now on (null: nobody). */
  void listen(BlockListener l);

  /** Returns what the last operation did. */
  OpLog log();

  /**
   * Sets whether each operation lists its hit, new, evicted and newly cached blocks in {@link
   * #log()} (on from construction); off, those lists stay empty and asking for them throws
   * (Note [Block lists on demand] in {@link OpLog}).
   */
  void recordBlockLists(boolean on);

  /** Returns the prefix-cache statistics so far. */
  PrefixCacheStats stats();

  /** Returns the free blocks: the free queue's length in v1 (null block excluded). */
  int numFreeBlocks();

  /** Returns the blocks that hold a hash. */
  int numCachedBlocks();

  /** Returns the free blocks in the order allocation would take them (head of the queue first). */
  int[] freeQueue();

  /** Returns a block's reference count. */
  int refCnt(int block);

  /** Returns the free host blocks (v0 swap space). */
  int numFreeHostBlocks();

  /** Returns the live (unfinished) request of this id, or null. */
  PagedRequest request(String id);

  /** Returns the live requests in the order they were added. */
  Collection<PagedRequest> requests();

  /** Returns every cached block, by block id. */
  List<CachedBlock> cachedBlocks();

  /**
   * Adds a waiting request with a prompt and optional extra keys (either may be null); {@code
   * hashIds}, when not null, supplies the hashes of the prompt's first full blocks.
   */
  PagedRequest addRequest(String id, int[] prompt, String loraName, String cacheSalt, long[] hashIds);

  /**
   * Adds a waiting request without LoRA name or cache salt whose first {@code promptLength}
   * entries of {@code buffer} are its prompt; the request keeps {@code buffer} as its token
   * storage, so the caller must not touch it afterwards. The same request as {@link
   * #addRequest(String, int[], String, String, long[])} of those tokens (Note [Token storage
   * sized once] in {@link PagedRequest}).
   */
  PagedRequest addRequest(String id, int[] buffer, int promptLength, long[] hashIds);

  /** Returns a new prompt hasher of this manager's hash function and block size, for one other thread (Note [Prompts hashed ahead]). */
  PromptHasher promptHasher();

  /**
   * Adds a waiting request whose prompt {@link #promptHasher} prepared: the same request as {@link
   * #addRequest(String, int[], int, long[])} of its buffer, prompt length and hash ids, with the
   * prompt's hashes taken from {@code prompt} instead of computed.
   */
  PagedRequest addRequest(String id, PromptHasher.Prepared prompt);

  /** Appends sampled tokens to a request (hashing every block they fill). */
  void appendTokens(PagedRequest r, int[] tokens);

  /**
   * Returns how many decode steps in a row a running request can take that move only its counts, no
   * block taken or filled (Note [Quiet decode steps] on {@link BlockManager}).
   */
  int quietDecodeSteps(PagedRequest r);

  /**
   * Applies quiet decode steps taken without the manager: the request's computed tokens and {@code
   * count} appended tokens, with the hashes of the blocks they complete.
   */
  void catchUpQuietly(PagedRequest r, int computedTokens, int[] tokens, int count);

  /** Looks up the longest cached prefix of a waiting request and returns the number of hit blocks ({@code get_computed_blocks}). */
  int lookup(PagedRequest r);

  /** vLLM's {@code KVCacheManager.allocate_slots}; returns false and changes nothing when the free blocks do not suffice. */
  boolean allocateSlots(PagedRequest r, int numNewTokens, int numLookaheadTokens);

  /**
   * Returns the blocks {@link #allocateSlots} would take for {@code numNewTokens} more tokens of a
   * running request without hits: new blocks plus copy-on-write copies of shared blocks written
   * (vLLM V2's worst-case {@code can_append_slots} count). Changes nothing.
   */
  int blocksToAppend(PagedRequest r, int numNewTokens);

  /**
   * Returns the free blocks a waiting request's whole current sequence would take after the hits
   * of its last lookup (v1's {@code KVCacheManager.can_fit_full_sequence}, vLLM at commit
   * ec5ef0a): {@code ceil(min(num_tokens, max_model_len) / B)} less the hit blocks and the table,
   * plus the hit blocks that sit in the free queue; no lookahead. Changes nothing.
   */
  int blocksForFullSequence(PagedRequest r);

  /** The scheduler's waiting path (v1's {@code Scheduler.schedule}; v0's {@code can_allocate}); returns whether the request was admitted. */
  boolean admit(PagedRequest r);

  /** One decode step of a request; returns false, changing nothing, when the allocation fails. */
  boolean decode(PagedRequest r, int token);

  /** Finishes a request: frees its blocks and forgets it. */
  void free(PagedRequest r);

  /** Preempts a running request by recompute (v1's {@code Scheduler._preempt_request}). */
  void preempt(PagedRequest r);

  /** Clears the prefix cache if no usable block is referenced ({@code reset_prefix_cache}); returns whether it did. */
  boolean resetPrefixCache();

  /** Forks a running request (v0's {@code fork}); v0 only. */
  PagedRequest fork(PagedRequest parent, String childId);

  /** Swaps a running request out to the host pool (v0's swap-out); returns false when the host pool lacks blocks. v0 only. */
  boolean swapOut(PagedRequest r);

  /** Swaps a request back in (v0's swap-in, {@code can_swap_in}); returns false when the watermark says later or never. v0 only. */
  boolean swapIn(PagedRequest r);

  /**
   * Swaps a sequence group out (v0's swap-out, {@code can_swap_out}): one host block per distinct block of the group's tables,
   * so forked requests' shared blocks are moved once; returns false when the host pool lacks blocks.
   * v0 only.
   */
  boolean swapOut(List<PagedRequest> group);

  /**
   * Swaps a sequence group back in (v0's swap-in), its shared blocks shared again; returns false when
   * the watermark says later or never. v0 only.
   */
  boolean swapIn(List<PagedRequest> group);

  /** Checks the whole manager; throws {@link kvsim.alloc.InvariantViolation} when broken. */
  void checkInvariants();
}

package kvsim.alloc.paged;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * vLLM v0's block manager ({@code BlockSpaceManagerV2} of {@code vllm/core/block_manager_v2.py} at
 * commit 1fb9c1b, with {@code vllm/core/block/prefix_caching_block.py}, {@code
 * vllm/core/evictor_v2.py} and {@code vllm/core/scheduler.py}): what it shares with v1 is in {@link
 * BlockManager}; this class adds the watermark, free lists and LRU evictor of its pool, block
 * deduplication, fork, copy-on-write and swapping to a host pool.
 *
 * <p>Rules (v0, mode {@link BlockManagerConfig.Mode#V0}), after {@code BlockSpaceManagerV2}:
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
 */
public final class V0BlockManager extends BlockManager {
  private final IntDeque hostFree;
  /** References to each host block (index: host block id − N): the swapped tables that hold it. */
  private final int[] hostRefs;
  private long swappedOutBytes;
  private long swappedInBytes;
  /** The host-pool tally of a running {@link #checkInvariants()}; null between checks. */
  private HostTally tally;

  /** Builds an empty manager; the configuration's free order picks the free list's order. */
  V0BlockManager(BlockManagerConfig config) {
    super(config, config.freeOrder() == BlockManagerConfig.FreeOrder.LIFO ? BlockPool.Kind.V0_LIFO : BlockPool.Kind.V0_FIFO);
    this.hostFree = new IntDeque(config.numHostBlocks());
    this.hostRefs = new int[config.numHostBlocks()];
    for (int h = 0; h < config.numHostBlocks(); h++) {
      hostFree.addLast(config.numBlocks() + h);
    }
  }

  @Override
  public int numFreeHostBlocks() {
    return hostFree.size();
  }

  @Override
  public long swappedOutBytes() {
    return swappedOutBytes;
  }

  @Override
  public long swappedInBytes() {
    return swappedInBytes;
  }

  /** The watermark test ({@code can_allocate}) on the prompt's blocks, hits ignored. */
  /** v0 copies a shared block before writing into it (fork, beam search; {@code cow_block_if_not_appendable}). */
  @Override
  boolean copiesOnWrite() {
    return true;
  }

  @Override
  boolean admissible(PagedRequest r) {
    int required = (r.numTokens() + blockSize - 1) / blockSize;
    log.setAdmission(admission(required));
    return log.admission() == OpLog.Admission.OK;
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

  /**
   * Deduplication: a block that becomes full while another block already holds its hash is
   * replaced by that block in the table and freed.
   */
  @Override
  boolean replacedByCached(IntList table, int i, int b, long hi, long lo) {
    int existing = pool.lookup(hi, lo);
    if (existing >= 0 && existing != b) {
      pool.touch(existing);
      table.set(i, existing);
      pool.freeBlock(b);
      log.deduplicated(b, existing);
      return true;
    }
    return false;
  }

  /** Frees the table head first ({@code BlockSpaceManagerV2.free}). */
  @Override
  void releaseTable(PagedRequest r) {
    IntList table = r.table;
    pool.freeBlocks(table.raw(), 0, table.size(), false);
    table.clear();
  }

  @Override
  void releaseSwapped(PagedRequest r) {
    releaseHostBlocks(r);
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

  // ---------------------------------------------------------------------------------------------
  // Fork and swap

  /**
   * Forks a running request (v0's {@code fork}): the child gets the parent's tokens, computed tokens and a
   * copy of its block table, and every block gains a reference. Nothing is allocated.
   */
  @Override
  public PagedRequest fork(PagedRequest parent, String childId) {
    beginOp();
    live(parent, "parent");
    if (parent.status != PagedRequest.Status.RUNNING) {
      throw new BlockOpException("parent", "fork: " + parent + " is not running");
    }
    if (childId == null || childId.isEmpty() || requests.containsKey(childId)) {
      throw new BlockOpException("child", "fork: child id '" + childId + "' is empty or already exists");
    }
    PagedRequest child = new PagedRequest(this, childId, parent.tokens.raw().clone(), parent.numTokens(), parent.loraName, parent.cacheSalt,
        parent.suppliedHashIds.clone(), blockSize);
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
   * false, changing nothing, when the host pool lacks free blocks.
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
   * the host pool lacks free blocks for the distinct blocks.
   */
  @Override
  public boolean swapOut(List<PagedRequest> group) {
    beginOp();
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
      log.mapped(e.getKey(), h);
    }
    log.moved((long) hostOf.size() * config.blockBytes());
    swappedOutBytes += log.bytesMoved();
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
   * changing nothing, when the watermark says later or never.
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
   *
   */
  @Override
  public boolean swapIn(List<PagedRequest> group) {
    beginOp();
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
    log.setAdmission(admission(n));
    if (log.admission() != OpLog.Admission.OK) {
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
      log.setAdmission(OpLog.Admission.LATER);
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (hitAt[i] >= 0) {
        pool.touch(hitAt[i]);
        log.listHit(hitAt[i]);
      }
    }
    Map<Integer, Integer> deviceOf = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      int b = hitAt[i];
      if (b < 0) {
        b = pool.popBlock(log.evictedList());
        log.listNew(b);
        log.mapped(hosts[i], b);
        log.moved(config.blockBytes());
        int[] at = firstHolder.get(hosts[i]);
        PagedRequest r = group.get(at[0]);
        int j = at[1];
        if (caching && j < r.numCachedBlocks) {
          pool.cacheBlock(b, r.hashHi(j), r.hashLo(j), (j + 1) * blockSize);
          log.listNewlyCached(b);
        }
      }
      deviceOf.put(hosts[i], b);
    }
    swappedInBytes += log.bytesMoved();
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
  // Invariants of the host pool

  /** What the swapped tables hold of the host pool, counted during one check. */
  private static final class HostTally {
    final boolean[] used;
    final int[] seenIn;
    final int[] refCount;
    int usedCount;

    HostTally(int hosts) {
      used = new boolean[hosts];
      seenIn = new int[hosts];
      refCount = new int[hosts];
    }
  }

  @Override
  void beginHostCheck() {
    tally = new HostTally(config.numHostBlocks());
  }

  @Override
  void checkHostTable(PagedRequest r, String who, int stamp) {
    int n = pool.numBlocks();
    int hosts = config.numHostBlocks();
    for (int i = 0; i < r.hostTable.size(); i++) {
      int h = r.hostTable.get(i) - n;
      if (h < 0 || h >= hosts || tally.seenIn[h] == stamp) {
        fail(who + " holds host block " + r.hostTable.get(i) + " outside the host pool or twice");
      }
      tally.seenIn[h] = stamp;
      if (tally.refCount[h]++ == 0) {
        tally.used[h] = true;
        tally.usedCount++;
      }
    }
  }

  @Override
  void endHostCheck() {
    int n = pool.numBlocks();
    int hosts = config.numHostBlocks();
    boolean[] hostUsed = tally.used;
    int[] hostRefCount = tally.refCount;
    int hostUsedCount = tally.usedCount;
    tally = null;
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

}

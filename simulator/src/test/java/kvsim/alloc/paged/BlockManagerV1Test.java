package kvsim.alloc.paged;

import static kvsim.alloc.paged.ManagerDump.concat;
import static kvsim.alloc.paged.ManagerDump.range;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * One test per rule of vLLM v1's block manager (vLLM at commit ec5ef0a: {@code
 * vllm/v1/core/kv_cache_manager.py}, {@code block_pool.py}, {@code kv_cache_utils.py} and {@code
 * sched/scheduler.py}), block id for block id; sections are headed by the upstream function.
 */
class BlockManagerV1Test {

  private static BlockManager v1(int numBlocks, int blockSize) {
    return BlockManager.of(BlockManagerConfig.v1(numBlocks, blockSize, true));
  }

  private static PagedRequest admitted(BlockManager m, String id, int[] prompt) {
    PagedRequest r = m.addRequest(id, prompt, null, null);
    assertTrue(m.admit(r), "admit " + id);
    m.checkInvariants();
    return r;
  }

  private static int[] tail(int[] queue, int n) {
    return Arrays.copyOfRange(queue, queue.length - n, queue.length);
  }

  // BlockPool constructor: the null block ---------------------------------------------------------

  @Test
  void blockZeroIsTheNullBlockAndTheQueueStartsAtOne() {
    BlockManager m = v1(9, 4);
    assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, m.freeQueue());
    assertEquals(8, m.numFreeBlocks());
    assertEquals(8, m.usableBlocks());
    PagedRequest a = admitted(m, "A", range(0, 32));
    assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, a.blockTable(), "block 0 is never handed out");
    assertEquals(0, m.numFreeBlocks());
  }

  // FreeKVCacheBlockQueue, BlockPool.free_blocks --------------------------------------------------

  @Test
  void allocationPopsFromTheHeadInAscendingOrderAtTheStart() {
    BlockManager m = v1(9, 4);
    PagedRequest a = admitted(m, "A", range(0, 9));
    assertArrayEquals(new int[] {1, 2, 3}, a.blockTable());
    assertArrayEquals(new int[] {1, 2, 3}, m.log().newBlocks());
    assertArrayEquals(new int[] {4, 5, 6, 7, 8}, m.freeQueue());
  }

  @Test
  void freeAppendsTheTableTailFirstAndSharedBlocksOnlyWithTheirLastHolder() {
    BlockManager m = v1(16, 2);
    PagedRequest s = admitted(m, "S", concat(range(0, 4), new int[] {9})); // [1,2,3], blocks 1 and 2 cached
    admitted(m, "H", range(40, 42)); // [4]
    PagedRequest t = admitted(m, "T", concat(range(0, 4), range(10, 18))); // hits 1,2; pops 5..8
    assertArrayEquals(new int[] {1, 2, 5, 6, 7, 8}, t.blockTable());
    admitted(m, "U", concat(range(0, 2), range(30, 33))); // hits block 1 only
    m.free(s);
    m.checkInvariants();
    assertArrayEquals(new int[] {3}, tail(m.freeQueue(), 1), "only S's unshared block 3 is released");
    m.free(t);
    m.checkInvariants();
    assertArrayEquals(new int[] {3, 8, 7, 6, 5, 2}, tail(m.freeQueue(), 6), "released tail first: …,8,7,6,5,2");
    assertEquals(1, m.refCnt(1), "block 1 is still held by U");
  }

  @Test
  void aHitOnAFreeBlockRemovesItFromTheMiddleOfTheQueue() {
    BlockManager m = v1(9, 4);
    PagedRequest a = admitted(m, "A", range(0, 10)); // [1,2,3], 1 and 2 cached
    m.free(a); // queue 4..8,3,2,1
    assertArrayEquals(new int[] {4, 5, 6, 7, 8, 3, 2, 1}, m.freeQueue());
    PagedRequest b = m.addRequest("B", concat(range(0, 4), range(50, 53)), null, null);
    assertEquals(1, m.lookup(b));
    assertTrue(m.allocateSlots(b, 3, 0));
    assertArrayEquals(new int[] {1, 4}, b.blockTable());
    assertArrayEquals(new int[] {5, 6, 7, 8, 3, 2}, m.freeQueue(), "1 left from the tail, 4 from the head");
    m.checkInvariants();
  }

  @Test
  void blocksReleasedTogetherAreEvictedLongestPrefixFirst() {
    BlockManager m = v1(5, 2);
    PagedRequest a = admitted(m, "A", range(0, 7)); // [1,2,3,4], 1..3 cached
    m.free(a);
    assertArrayEquals(new int[] {4, 3, 2, 1}, m.freeQueue());
    admitted(m, "B", range(100, 104)); // pops 4 (uncached) and 3 (A's third block)
    assertArrayEquals(new int[] {3}, m.log().evicted(), "the deepest cached block goes first");
  }

  // BlockPool.get_new_blocks ----------------------------------------------------------------------

  @Test
  void aCachedBlockIsEvictedOnlyWhenTheAllocatorPopsIt() {
    BlockManager m = v1(5, 4);
    PagedRequest a = admitted(m, "A", range(0, 9)); // [1,2,3]; 1,2 cached
    m.free(a); // queue [4,3,2,1]
    assertEquals(2, m.numCachedBlocks(), "freeing keeps the hashes");
    PagedRequest b = admitted(m, "B", range(100, 106)); // pops 4, 3: no cached block popped
    assertArrayEquals(new int[] {}, m.log().evicted());
    assertEquals(3, m.numCachedBlocks(), "B's first block is cached, A's two still are");
    m.free(b); // queue [2,1,4,3]
    PagedRequest c = admitted(m, "C", range(200, 203)); // pops 2: evicts A's second block
    assertArrayEquals(new int[] {2}, m.log().evicted());
    assertArrayEquals(new int[] {2}, c.blockTable());
    PagedRequest d = m.addRequest("D", range(0, 9), null, null);
    assertEquals(1, m.lookup(d), "A's first block survives, the evicted second one no longer hits");
    assertEquals(1, m.evictionCount());
  }

  // hash_block_tokens: the hash chain -------------------------------------------------------------

  @Test
  void onlyFullBlocksAreHashedAndAppendsHashTheBlocksTheyFill() {
    BlockManager m = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 7), null, null);
    assertEquals(1, a.numBlockHashes());
    m.appendTokens(a, new int[] {7});
    assertEquals(2, a.numBlockHashes());
    m.appendTokens(a, new int[] {8, 9, 10});
    assertEquals(2, a.numBlockHashes());
    BlockManager off = BlockManager.of(BlockManagerConfig.v1(9, 4, false));
    assertEquals(0, off.addRequest("A", range(0, 8), null, null).numBlockHashes(), "no hashing with caching off");
  }

  @Test
  void theHashOfABlockChainsOverItsParent() {
    BlockManager m = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 8), null, null);
    PagedRequest b = m.addRequest("B", concat(range(50, 54), range(4, 8)), null, null);
    PagedRequest c = m.addRequest("C", range(0, 8), null, null);
    assertNotEquals(m.blockHashPrefix(a, 1), m.blockHashPrefix(b, 1), "same tokens, different parent");
    assertEquals(m.blockHashPrefix(a, 1), m.blockHashPrefix(c, 1), "same prefix, same hash");
  }

  @Test
  void theLoraNameKeysEveryBlockAndTheCacheSaltOnlyTheFirst() {
    BlockManager m = v1(9, 4);
    PagedRequest plain = m.addRequest("P", range(0, 8), null, null);
    PagedRequest lora = m.addRequest("L", range(0, 8), "adapter-1", null);
    PagedRequest salted = m.addRequest("S", range(0, 8), null, "tenant-7");
    assertNotEquals(m.blockHashPrefix(plain, 0), m.blockHashPrefix(lora, 0));
    assertNotEquals(m.blockHashPrefix(plain, 0), m.blockHashPrefix(salted, 0));
    assertNotEquals(m.blockHashPrefix(plain, 1), m.blockHashPrefix(salted, 1), "the salt reaches block 1 via the chain");
  }

  @Test
  void theCacheSaltIsolatesRequestsThatShareAPrompt() {
    BlockManager m = v1(17, 4);
    admitted(m, "A", range(0, 13));
    PagedRequest other = m.addRequest("B", range(0, 13), null, "tenant-b");
    assertEquals(0, m.lookup(other), "a different salt never hits");
    PagedRequest same = m.addRequest("C", range(0, 13), null, null);
    assertEquals(3, m.lookup(same), "the unsalted twin hits");
    admitted(m, "D", range(0, 13)).id();
    PagedRequest saltedTwin = m.addRequest("E", range(0, 13), null, "tenant-b");
    assertTrue(m.admit(other));
    assertEquals(3, m.lookup(saltedTwin), "the same salt hits");
  }

  @Test
  void callerSuppliedHashIdsAreTheBlockHashes() {
    BlockManager m = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 9), null, null, new long[] {11, 12, 13});
    assertTrue(m.admit(a));
    PagedRequest b = m.addRequest("B", range(500, 509), null, null, new long[] {11, 12});
    assertEquals(2, m.lookup(b), "same ids hit whatever the tokens");
    PagedRequest c = m.addRequest("C", range(0, 9), null, null, new long[] {11, 99});
    assertEquals(1, m.lookup(c));
    PagedRequest d = m.addRequest("D", range(0, 9), null, null);
    assertEquals(0, m.lookup(d), "token hashes never equal supplied ids");
  }

  // allocate_slots: when a block becomes cached ---------------------------------------------------

  @Test
  void aBlockIsCachedInTheStepThatSchedulesItsLastToken() {
    BlockManager m = v1(9, 4);
    PagedRequest a = admitted(m, "A", range(0, 10)); // computed 10, blocks 1,2 cached
    assertTrue(m.decode(a, 10)); // appends the prefill's sample: 11 tokens
    assertArrayEquals(new int[] {}, m.log().newlyCached());
    assertTrue(m.decode(a, 11)); // schedules token 11, appends → 12 tokens
    assertArrayEquals(new int[] {}, m.log().newlyCached());
    assertTrue(m.decode(a, 12)); // schedules the 12th token: third block cached now
    assertArrayEquals(new int[] {3}, m.log().newlyCached());
    PagedRequest b = m.addRequest("B", range(0, 13), null, null);
    assertEquals(3, m.lookup(b), "a request scheduled right after already hits it");
  }

  @Test
  void lookaheadSlotsAreAllocatedButNeverCached() {
    BlockManager m = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 6), null, null);
    assertTrue(m.allocateSlots(a, 6, 5)); // 11 slots: 3 blocks
    assertArrayEquals(new int[] {1, 2, 3}, a.blockTable());
    assertArrayEquals(new int[] {1}, m.log().newlyCached(), "only the block full of real tokens");
  }

  @Test
  void chunkedPrefillCachesOnlyTheBlocksItCompleted() {
    BlockManager m = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 12), null, null);
    assertTrue(m.allocateSlots(a, 6, 0));
    assertArrayEquals(new int[] {1}, m.log().newlyCached());
    assertEquals(6, a.numComputedTokens());
    assertTrue(m.allocateSlots(a, 6, 0));
    assertArrayEquals(new int[] {2, 3}, m.log().newlyCached());
    m.checkInvariants();
  }

  @Test
  void blocksWithTheSameHashAreBothKeptAndTheFirstInsertedHits() {
    BlockManager m = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 9), null, null);
    assertTrue(m.allocateSlots(a, 1, 0)); // A holds block 1, nothing cached yet
    PagedRequest b = admitted(m, "B", range(0, 9)); // no hit: B caches its own blocks 2, 3
    assertArrayEquals(new int[] {2, 3, 4}, b.blockTable());
    assertTrue(m.allocateSlots(a, 8, 0)); // A caches 1 and 5 under the same hashes
    assertArrayEquals(new int[] {1, 5}, m.log().newlyCached());
    assertEquals(4, m.numCachedBlocks(), "duplicates are both cached");
    m.checkInvariants();
    PagedRequest c = m.addRequest("C", range(0, 9), null, null);
    m.lookup(c);
    assertArrayEquals(new int[] {2, 3}, m.log().hitBlocks(), "the first inserted blocks hit");
    m.free(b); // queue [7,8,4,3,2]
    m.free(a); // queue [7,8,4,3,2,6,5,1]
    PagedRequest filler = admitted(m, "F", range(100, 116)); // pops 7,8,4,3: evicts B's second block
    assertArrayEquals(new int[] {3}, m.log().evicted());
    assertArrayEquals(new int[] {7, 8, 4, 3}, filler.blockTable());
    PagedRequest d = m.addRequest("D", range(0, 9), null, null);
    m.lookup(d);
    assertArrayEquals(new int[] {2, 5}, m.log().hitBlocks(), "A's duplicate takes over the evicted entry");
  }

  // KVCacheManager.get_computed_blocks ------------------------------------------------------------

  @Test
  void theLastTokenIsNeverAHitSoAFullyCachedPromptOfKBlocksHitsKMinusOne() {
    BlockManager m = v1(17, 4);
    admitted(m, "A", range(0, 16));
    PagedRequest b = m.addRequest("B", range(0, 16), null, null);
    assertEquals(3, m.lookup(b), "4 cached blocks, 16 tokens: 3 hits");
    PagedRequest c = m.addRequest("C", range(0, 17), null, null);
    assertEquals(4, m.lookup(c), "one more token: all 4 blocks hit");
    assertTrue(m.allocateSlots(b, 4, 0), "B recomputes its whole last block");
    assertEquals(16, b.numComputedTokens());
  }

  @Test
  void theLookupStopsAtTheFirstMiss() {
    BlockManager m = v1(9, 2);
    PagedRequest a = admitted(m, "A", range(0, 7)); // [1,2,3,4]: 1,2,3 cached
    m.free(a); // [5,6,7,8,4,3,2,1]
    admitted(m, "X", range(100, 109)); // pops 5,6,7,8,4: no evictions
    admitted(m, "Y", range(200, 201)); // pops 3: evicts A's third block
    assertArrayEquals(new int[] {3}, m.log().evicted());
    PagedRequest b = m.addRequest("B", range(0, 7), null, null);
    assertEquals(2, m.lookup(b));
    assertArrayEquals(new int[] {1, 2}, m.log().hitBlocks());
    PagedRequest c = m.addRequest("C", concat(new int[] {99, 98}, range(2, 7)), null, null);
    assertEquals(0, m.lookup(c), "a miss on block 0 hides the cached blocks after it");
  }

  @Test
  void statisticsCountEveryLookupAndKeepPreemptedRequestsApart() {
    BlockManager m = v1(5, 4);
    PagedRequest a = admitted(m, "A", range(0, 9)); // 1 request, 9 queries, 0 hits
    PagedRequest b = m.addRequest("B", range(0, 13), null, null);
    assertFalse(m.admit(b), "needs 4 − 2 = 2 new blocks, only 1 free"); // still counted
    assertEquals(2, m.stats().requests());
    assertEquals(22, m.stats().queries());
    assertEquals(8, m.stats().hits());
    m.preempt(a);
    assertTrue(m.admit(a));
    assertEquals(2, m.stats().requests());
    assertEquals(1, m.stats().preemptedRequests());
    assertEquals(9, m.stats().preemptedQueries());
    assertEquals(8, m.stats().preemptedHits());
  }

  @Test
  void withCachingOffThereAreNoHitsAndNoStatistics() {
    BlockManager m = BlockManager.of(BlockManagerConfig.v1(9, 4, false));
    PagedRequest a = admitted(m, "A", range(0, 9));
    m.free(a);
    PagedRequest b = m.addRequest("B", range(0, 9), null, null);
    assertEquals(0, m.lookup(b));
    assertEquals(0, m.stats().requests());
    assertEquals(0, m.numCachedBlocks());
  }

  // KVCacheManager.allocate_slots -----------------------------------------------------------------

  @Test
  void hitBlocksThatSitInTheFreeQueueCountAgainstFreeCapacity() {
    BlockManager m = v1(6, 4);
    PagedRequest a = admitted(m, "A", range(0, 9)); // [1,2,3]
    m.free(a); // queue [4,5,3,2,1], 5 free
    admitted(m, "X", range(100, 104)); // pops 4: 4 free [5,3,2,1]
    PagedRequest b = m.addRequest("B", concat(range(0, 8), range(50, 59)), null, null); // 17 tokens, 5 blocks
    assertEquals(2, m.lookup(b));
    String before = ManagerDump.of(m);
    assertFalse(m.allocateSlots(b, 9, 0), "3 new blocks + 2 free hits = 5 > 4 free, although 3 ≤ 4");
    assertEquals(before, ManagerDump.of(m));
    PagedRequest c = m.addRequest("C", concat(range(0, 8), range(60, 65)), null, null); // 13 tokens
    assertEquals(2, m.lookup(c));
    assertTrue(m.allocateSlots(c, 5, 0), "2 new + 2 free hits = 4 ≤ 4 free");
    assertEquals(0, m.numFreeBlocks());
    assertArrayEquals(new int[] {1, 2, 5, 3}, c.blockTable(), "hits first, then the head of the queue");
    assertArrayEquals(new int[] {}, m.log().evicted(), "A's third block was partial, never cached");
    m.checkInvariants();
  }

  @Test
  void aFailedAllocationChangesNothing() {
    BlockManager m = v1(5, 4);
    PagedRequest a = admitted(m, "A", range(0, 9));
    m.free(a);
    admitted(m, "X", range(100, 101));
    PagedRequest b = m.addRequest("B", range(0, 17), null, null);
    m.lookup(b);
    String before = ManagerDump.of(m);
    int[] hits = m.log().hitBlocks();
    assertFalse(m.allocateSlots(b, 17 - 4 * hits.length, 0));
    assertEquals(before, ManagerDump.of(m));
    assertEquals(0, b.numComputedTokens());
    m.checkInvariants();
    assertTrue(m.allocateSlots(b, 1, 0), "the same hits stay valid after a refusal: 1 new + 2 free hits ≤ 3 free");
    assertArrayEquals(new int[] {1, 2, 3}, b.blockTable());
  }

  @Test
  void aRunningRequestNeedsOnlyTheBlocksPastItsTable() {
    BlockManager m = v1(5, 4);
    PagedRequest a = admitted(m, "A", range(0, 8)); // [1,2]
    m.appendTokens(a, range(8, 13));
    assertTrue(m.allocateSlots(a, 5, 0)); // 13 slots: 4 blocks → 2 new
    assertArrayEquals(new int[] {3, 4}, m.log().newBlocks());
    assertEquals(0, m.numFreeBlocks());
    for (int t = 99; t < 103; t++) {
      assertTrue(m.decode(a, t), "tokens 14..16 fit the fourth block");
    }
    String before = ManagerDump.of(m);
    assertFalse(m.decode(a, 103), "the 17th token needs a fifth block and none is free");
    assertEquals(before, ManagerDump.of(m));
  }

  @Test
  void zeroNewTokensIsAnErrorThatChangesNothing() {
    BlockManager m = v1(5, 4);
    PagedRequest a = m.addRequest("A", range(0, 5), null, null);
    String before = ManagerDump.of(m);
    BlockOpException e = assertThrows(BlockOpException.class, () -> m.allocateSlots(a, 0, 0));
    assertEquals("num_new_tokens", e.field());
    assertEquals(before, ManagerDump.of(m));
  }

  @Test
  void aRequestIsRefusedByAnotherManagerAndOnceFinished() {
    BlockManager m = v1(9, 4);
    BlockManager other = v1(9, 4);
    PagedRequest a = m.addRequest("A", range(0, 5), null, null);
    other.addRequest("A", range(0, 5), null, null); // the same id in the other manager
    String before = ManagerDump.of(other);
    BlockOpException e = assertThrows(BlockOpException.class, () -> other.allocateSlots(a, 5, 0));
    assertEquals("req", e.field());
    assertTrue(e.getMessage().contains("unknown or finished"), e.getMessage());
    assertEquals(before, ManagerDump.of(other));
    assertTrue(m.allocateSlots(a, 5, 0));
    m.free(a);
    assertThrows(BlockOpException.class, () -> m.allocateSlots(a, 1, 0));
    PagedRequest again = m.addRequest("A", range(0, 5), null, null); // the id may come back as a new request
    assertThrows(BlockOpException.class, () -> m.appendTokens(a, range(5, 6)), "the finished object stays refused");
    assertTrue(m.allocateSlots(again, 5, 0));
  }

  @Test
  void slotsAreCappedAtMaxModelLen() {
    BlockManagerConfig c = new BlockManagerConfig(9, 4, true, BlockManagerConfig.Mode.V1, 0, BlockManagerConfig.FreeOrder.FIFO, 0, 10, 1);
    BlockManager m = BlockManager.of(c);
    PagedRequest a = m.addRequest("A", range(0, 8), null, null);
    assertTrue(m.allocateSlots(a, 8, 20));
    assertEquals(3, a.blockTable().length, "min(8 + 20, 10) = 10 slots: 3 blocks");
    assertThrows(BlockOpException.class, () -> m.appendTokens(a, range(8, 11)));
  }

  @Test
  void aLookupIsOnlyForWaitingRequestsAndGoesStaleWhenThePoolChanges() {
    BlockManager m = v1(9, 4);
    PagedRequest a = admitted(m, "A", range(0, 9));
    assertThrows(BlockOpException.class, () -> m.lookup(a));
    PagedRequest b = m.addRequest("B", range(0, 9), null, null);
    assertEquals(2, m.lookup(b));
    m.free(a);
    BlockOpException e = assertThrows(BlockOpException.class, () -> m.allocateSlots(b, 1, 0));
    assertEquals("req", e.field());
  }

  // reset_prefix_cache ----------------------------------------------------------------------------

  @Test
  void resetPrefixCacheSucceedsOnlyWhenEveryBlockIsFree() {
    BlockManager m = v1(9, 4);
    PagedRequest a = admitted(m, "A", range(0, 9));
    assertFalse(m.resetPrefixCache());
    assertEquals(2, m.numCachedBlocks());
    m.free(a);
    assertTrue(m.resetPrefixCache());
    assertEquals(0, m.numCachedBlocks());
    assertArrayEquals(new int[] {4, 5, 6, 7, 8, 3, 2, 1}, m.freeQueue(), "the queue order is kept");
    PagedRequest b = m.addRequest("B", range(0, 9), null, null);
    assertEquals(0, m.lookup(b));
    m.checkInvariants();
  }

  // Scheduler._preempt_request: preemption by recompute -------------------------------------------

  @Test
  void aPreemptedRequestResumesWithHitsOnItsOwnSurvivingBlocksIncludingGeneratedTokens() {
    BlockManager m = v1(9, 4);
    PagedRequest a = admitted(m, "A", range(0, 6)); // [1,2], block 1 cached
    m.decode(a, 6);
    m.decode(a, 7);
    m.decode(a, 8); // 9 tokens, 8 computed: block 2 cached (tokens 4..7)
    assertArrayEquals(new int[] {2}, m.log().newlyCached());
    m.preempt(a);
    assertEquals(0, a.numComputedTokens());
    assertEquals(1, a.numPreemptions());
    assertEquals(PagedRequest.Status.WAITING, a.status());
    assertArrayEquals(new int[] {3, 4, 5, 6, 7, 8, 2, 1}, m.freeQueue());
    assertTrue(m.admit(a));
    assertArrayEquals(new int[] {1, 2}, m.log().hitBlocks(), "both blocks, the second one full of generated tokens");
    assertArrayEquals(new int[] {1, 2, 3}, a.blockTable());
    assertEquals(9, a.numComputedTokens());
    assertThrows(BlockOpException.class, () -> m.preempt(m.addRequest("W", range(0, 3), null, null)));
  }

  // Token storage and block lists (Note [Token storage sized once], Note [Block lists on demand]) ----

  @Test
  void aRequestAddedFromABufferIsTheRequestOfItsPromptAndGrowsPastTheBuffer() {
    BlockManager plain = v1(12, 4);
    BlockManager buffered = v1(12, 4);
    int[] prompt = range(0, 9);
    int[] buffer = Arrays.copyOf(prompt, 11);
    buffer[9] = 77; // past the prompt: not a token
    buffer[10] = 78;
    PagedRequest a = plain.addRequest("A", prompt, null, null);
    PagedRequest b = buffered.addRequest("A", buffer, prompt.length, null);
    assertArrayEquals(prompt, b.tokens(), "only the prompt's entries are tokens");
    assertTrue(plain.admit(a));
    assertTrue(buffered.admit(b));
    for (int t = 100; t < 110; t++) { // the buffer holds 11 tokens: the last eight grow it
      assertTrue(plain.decode(a, t));
      assertTrue(buffered.decode(b, t));
    }
    assertArrayEquals(a.tokens(), b.tokens());
    assertArrayEquals(a.blockTable(), b.blockTable());
    assertEquals(a.numBlockHashes(), b.numBlockHashes());
    for (int i = 0; i < a.numBlockHashes(); i++) {
      assertEquals(plain.blockHashPrefix(a, i), buffered.blockHashPrefix(b, i), "hash of block " + i);
    }
    assertArrayEquals(plain.freeQueue(), buffered.freeQueue());
    buffered.checkInvariants();
    assertThrows(IllegalArgumentException.class, () -> buffered.addRequest("B", new int[4], 5, null));
  }

  @Test
  void withoutBlockListsAManagerTakesTheSameBlocksAndRefusesToListThem() {
    BlockManager listing = v1(10, 4);
    BlockManager quiet = v1(10, 4);
    quiet.recordBlockLists(false);
    for (BlockManager m : new BlockManager[] {listing, quiet}) {
      PagedRequest a = admitted(m, "A", range(0, 12));
      m.free(a);
      PagedRequest b = m.addRequest("B", concat(range(0, 8), range(40, 45)), null, null);
      assertEquals(2, m.lookup(b));
      assertTrue(m.allocateSlots(b, 5, 0));
      PagedRequest c = admitted(m, "C", range(60, 80));
      if (m == listing) {
        assertTrue(m.log().evicted().length > 0, "C evicts cached blocks of A");
      }
      assertTrue(m.decode(c, 5));
      m.checkInvariants();
    }
    assertArrayEquals(listing.freeQueue(), quiet.freeQueue());
    assertArrayEquals(listing.request("C").blockTable(), quiet.request("C").blockTable());
    assertEquals(listing.cachedBlocks(), quiet.cachedBlocks());
    assertEquals(listing.evictionCount(), quiet.evictionCount());
    assertEquals(0, quiet.log().numCopies());
    assertThrows(IllegalStateException.class, () -> quiet.log().newBlocks());
    assertThrows(IllegalStateException.class, () -> quiet.log().evicted());
    assertThrows(IllegalStateException.class, () -> quiet.log().hitBlocks());
    assertThrows(IllegalStateException.class, () -> quiet.log().newlyCached());
  }
}

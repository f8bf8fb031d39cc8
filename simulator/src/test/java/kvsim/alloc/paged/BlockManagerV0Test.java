package kvsim.alloc.paged;

import static kvsim.alloc.paged.ManagerDump.concat;
import static kvsim.alloc.paged.ManagerDump.range;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** One test per rule of vLLM v0's block manager ({@code BlockSpaceManagerV2} at vLLM commit 1fb9c1b), block id for block id. */
class BlockManagerV0Test {
  private static final long BLOCK_BYTES_4 = 4 * BlockManagerConfig.DEFAULT_BYTES_PER_TOKEN;

  private static BlockManager v0(int numBlocks, int blockSize, boolean caching, BlockManagerConfig.FreeOrder order, int hosts) {
    return BlockManager.of(
        new BlockManagerConfig(
            numBlocks,
            blockSize,
            caching,
            BlockManagerConfig.Mode.V0,
            BlockManagerConfig.DEFAULT_WATERMARK,
            order,
            hosts,
            BlockManagerConfig.UNLIMITED_MODEL_LEN,
            BlockManagerConfig.DEFAULT_BYTES_PER_TOKEN));
  }

  private static BlockManager v0(int numBlocks, int blockSize, boolean caching) {
    return v0(numBlocks, blockSize, caching, BlockManagerConfig.FreeOrder.LIFO, 4);
  }

  @Test
  void theModeOfTheConfigurationPicksTheManager() {
    assertInstanceOf(V0BlockManager.class, v0(8, 4, true));
    BlockManager v1 = BlockManager.of(BlockManagerConfig.v1(9, 4, true));
    assertInstanceOf(V1KvCacheManager.class, v1);
    PagedRequest r = v1.addRequest("a", range(0, 5), null, null);
    assertTrue(v1.admit(r));
    BlockOpException e = assertThrows(BlockOpException.class, () -> v1.fork(r, "b"));
    assertTrue(e.getMessage().contains("needs mode v0"), e.getMessage());
    assertThrows(BlockOpException.class, () -> v1.swapOut(r));
    assertThrows(BlockOpException.class, () -> v1.swapIn(r));
    assertEquals(0, v1.swappedOutBytes());
    v1.checkInvariants();
  }

  private static PagedRequest admitted(BlockManager m, String id, int[] prompt) {
    PagedRequest r = m.addRequest(id, prompt, null, null);
    assertTrue(m.admit(r), "admit " + id + ": " + m.log().admission());
    m.checkInvariants();
    return r;
  }

  private static int[] head(int[] queue, int n) {
    return Arrays.copyOf(queue, n);
  }

  // watermark: BlockSpaceManagerV2.can_allocate ---------------------------------------------------

  @Test
  void theWatermarkIsOnePercentOfTheBlocksAndGatesAdmissionThreeWays() {
    BlockManager m = v0(100, 4, true);
    assertEquals(1, m.config().watermarkBlocks());
    PagedRequest huge = m.addRequest("H", range(0, 400), null, null);
    assertFalse(m.admit(huge));
    assertEquals(OpLog.Admission.NEVER, m.log().admission(), "100 − 100 < 1: never");
    assertEquals(0, m.stats().requests(), "a refused admission does not look up");
    admitted(m, "X", range(1000, 1380)); // 95 blocks, 5 free
    PagedRequest five = m.addRequest("F", range(0, 20), null, null);
    String before = ManagerDump.of(m);
    assertFalse(m.admit(five));
    assertEquals(OpLog.Admission.LATER, m.log().admission(), "5 free − 5 < 1: later");
    assertEquals(before, ManagerDump.of(m));
    admitted(m, "Y", range(0, 16)); // 4 blocks: 5 − 4 ≥ 1
    assertEquals(OpLog.Admission.OK, m.log().admission());
    assertEquals(1, m.numFreeBlocks());
  }

  @Test
  void theWatermarkIgnoresPrefixHits() {
    BlockManager m = v0(100, 4, true);
    admitted(m, "X", range(1000, 1380)); // 95 blocks
    admitted(m, "Y", range(0, 16)); // 4 blocks, all cached; 1 free
    PagedRequest twin = m.addRequest("Z", range(0, 17), null, null);
    assertFalse(m.admit(twin), "the prompt's 5 blocks are counted although 4 would hit");
    assertEquals(OpLog.Admission.LATER, m.log().admission());
  }

  @Test
  void decodeGrowthIgnoresTheWatermark() {
    BlockManager m = v0(100, 4, true);
    admitted(m, "X", range(1000, 1380)); // 95 blocks
    PagedRequest y = admitted(m, "Y", range(0, 16)); // 4 blocks, 1 free
    assertTrue(m.decode(y, 16)); // appends the prefill's sample
    assertTrue(m.decode(y, 17), "token 17 takes the last free block, below the watermark");
    assertEquals(0, m.numFreeBlocks());
    assertFalse(m.decode(y, 18) && m.decode(y, 19) && m.decode(y, 20) && m.decode(y, 21));
  }

  @Test
  void swapInUsesTheWatermarkToo() {
    BlockManager m = v0(100, 4, false, BlockManagerConfig.FreeOrder.LIFO, 10);
    PagedRequest a = admitted(m, "A", range(0, 20)); // 5 blocks
    assertTrue(m.swapOut(a));
    admitted(m, "X", range(1000, 1380)); // 95 blocks: 5 free
    String before = ManagerDump.of(m);
    assertFalse(m.swapIn(a));
    assertEquals(OpLog.Admission.LATER, m.log().admission());
    assertEquals(before, ManagerDump.of(m));
  }

  // the v0 block allocators: free lists and the LRU evictor ---------------------------------------

  @Test
  void v0HasNoNullBlockAndTheLifoDequeReusesTheLastFreedBlockFirst() {
    BlockManager m = v0(8, 4, false);
    assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7}, m.freeQueue());
    PagedRequest a = admitted(m, "A", range(0, 8));
    assertArrayEquals(new int[] {0, 1}, a.blockTable());
    m.free(a); // head first, each to the front
    assertArrayEquals(new int[] {1, 0, 2, 3, 4, 5, 6, 7}, m.freeQueue());
    PagedRequest b = admitted(m, "B", range(50, 51));
    assertArrayEquals(new int[] {1}, b.blockTable());
  }

  @Test
  void theFifoDequeReusesTheLeastRecentlyFreedBlockFirst() {
    BlockManager m = v0(8, 4, false, BlockManagerConfig.FreeOrder.FIFO, 0);
    PagedRequest a = admitted(m, "A", range(0, 8));
    m.free(a);
    assertArrayEquals(new int[] {2, 3, 4, 5, 6, 7, 0, 1}, m.freeQueue());
  }

  @Test
  void aHashlessBlockIsUsedBeforeAnyCachedBlockIsEvicted() {
    BlockManager m = v0(4, 4, true);
    PagedRequest a = admitted(m, "A", range(0, 8)); // [0,1], both cached
    m.free(a);
    assertArrayEquals(new int[] {2, 3, 1, 0}, m.freeQueue(), "fresh blocks, then the evictor's order");
    admitted(m, "B", range(100, 101));
    admitted(m, "C", range(200, 201));
    assertArrayEquals(new int[] {}, m.log().evicted());
    admitted(m, "D", range(300, 301));
    assertArrayEquals(new int[] {1}, m.log().evicted(), "released together: the most hashed tokens go first");
  }

  @Test
  void theEvictorTakesTheLeastRecentlyAccessedBlock() {
    BlockManager m = v0(3, 4, true);
    PagedRequest a = admitted(m, "A", range(0, 4)); // [0]
    PagedRequest b = admitted(m, "B", range(10, 14)); // [1]
    PagedRequest c = admitted(m, "C", range(20, 24)); // [2]
    m.free(b);
    m.free(a);
    m.free(c);
    assertArrayEquals(new int[] {1, 0, 2}, m.freeQueue());
    admitted(m, "D", range(30, 31));
    assertArrayEquals(new int[] {1}, m.log().evicted());
    PagedRequest e = m.addRequest("E", range(0, 5), null, null);
    assertTrue(m.admit(e));
    assertArrayEquals(new int[] {0}, m.log().hitBlocks(), "a hit takes A's block out of the evictor");
    assertArrayEquals(new int[] {2}, m.log().evicted());
    m.checkInvariants();
  }

  @Test
  void aBlockThatFillsWithAnAlreadyCachedHashIsDeduplicated() {
    BlockManager m = v0(8, 4, true);
    admitted(m, "A", range(0, 8)); // [0,1], cached
    PagedRequest b = m.addRequest("B", range(0, 8), null, null);
    assertTrue(m.admit(b)); // hits 1 block (last token rule), pops 2 for block 1, which then dedups to 1
    assertArrayEquals(new int[] {0}, m.log().hitBlocks());
    assertArrayEquals(new int[] {2}, m.log().newBlocks());
    assertArrayEquals(new int[] {2, 1}, m.log().dedups());
    assertArrayEquals(new int[] {0, 1}, b.blockTable());
    assertEquals(2, m.refCnt(1));
    assertEquals(2, m.numCachedBlocks(), "no duplicate is cached in v0");
    assertEquals(2, m.freeQueue()[0], "the replaced block is back at the front");
    m.checkInvariants();
  }

  // fork and copy-on-write: fork, cow_block_if_not_appendable -------------------------------------

  @Test
  void forkCopiesTheTableAndAddsAReferenceToEveryBlockWithoutAllocating() {
    BlockManager m = v0(8, 4, true);
    PagedRequest p = admitted(m, "P", range(0, 6)); // [0,1]
    int free = m.numFreeBlocks();
    PagedRequest c = m.fork(p, "C");
    assertArrayEquals(p.blockTable(), c.blockTable());
    assertEquals(2, m.refCnt(0));
    assertEquals(2, m.refCnt(1));
    assertEquals(free, m.numFreeBlocks());
    assertEquals(p.numComputedTokens(), c.numComputedTokens());
    m.checkInvariants();
  }

  @Test
  void copyOnWriteCopiesOnlyTheSharedLastBlockAndTheSecondWriterWritesInPlace() {
    BlockManager m = v0(8, 4, true);
    PagedRequest p = admitted(m, "P", range(0, 6)); // [0,1]; block 1 holds 2 of 4 tokens
    PagedRequest c = m.fork(p, "C");
    assertTrue(m.decode(p, 6)); // the prefill's sample: no slot scheduled yet
    assertTrue(m.decode(p, 7)); // writes position 6 into shared block 1
    assertArrayEquals(new int[] {1, 2}, m.log().copies());
    assertArrayEquals(new int[] {0, 2}, p.blockTable());
    assertEquals(1, m.refCnt(1));
    assertEquals(2, m.refCnt(0), "the full block stays shared");
    assertTrue(m.decode(c, 9));
    assertTrue(m.decode(c, 10));
    assertArrayEquals(new int[] {}, m.log().copies(), "block 1 is C's alone now");
    assertArrayEquals(new int[] {0, 1}, c.blockTable());
    m.checkInvariants();
  }

  @Test
  void writingPastAFullSharedBlockCopiesNothing() {
    BlockManager m = v0(8, 4, true);
    PagedRequest p = admitted(m, "P", range(0, 8)); // [0,1], both full
    m.fork(p, "C");
    assertTrue(m.decode(p, 8));
    assertTrue(m.decode(p, 9));
    assertArrayEquals(new int[] {}, m.log().copies());
    assertArrayEquals(new int[] {2}, m.log().newBlocks());
    assertEquals(2, m.refCnt(0));
    assertEquals(2, m.refCnt(1));
  }

  @Test
  void copyOnWriteNeedsAFreeBlockAndFailsCleanlyWithoutOne() {
    BlockManager m = v0(3, 4, false);
    PagedRequest p = admitted(m, "P", range(0, 6)); // [0,1]
    m.fork(p, "C");
    admitted(m, "X", range(50, 51)); // [2]: none free
    m.decode(p, 6);
    String before = ManagerDump.of(m);
    assertFalse(m.decode(p, 7));
    assertEquals(before, ManagerDump.of(m));
  }

  @Test
  void forkAndSwapAreV0Only() {
    BlockManager m = BlockManager.of(BlockManagerConfig.v1(9, 4, true));
    PagedRequest p = admitted(m, "P", range(0, 6));
    assertEquals("op", assertThrows(BlockOpException.class, () -> m.fork(p, "C")).field());
    assertThrows(BlockOpException.class, () -> m.swapOut(p));
  }

  // preemption and swap: swap_out, swap_in --------------------------------------------------------

  @Test
  void aSwapRoundTripMovesEachBlockOnceAndReusesSurvivingCachedBlocks() {
    BlockManager m = v0(8, 4, true, BlockManagerConfig.FreeOrder.LIFO, 4);
    PagedRequest a = admitted(m, "A", range(0, 10)); // [0,1,2]; 0,1 cached
    assertTrue(m.swapOut(a));
    assertArrayEquals(new int[] {0, 8, 1, 9, 2, 10}, m.log().mapping());
    assertEquals(3 * BLOCK_BYTES_4, m.log().bytesMoved());
    assertEquals(PagedRequest.Status.SWAPPED, a.status());
    assertEquals(8, m.numFreeBlocks());
    assertEquals(1, m.numFreeHostBlocks());
    m.checkInvariants();
    assertTrue(m.swapIn(a));
    assertArrayEquals(new int[] {0, 1}, m.log().hitBlocks(), "cached full blocks are found by hash");
    assertArrayEquals(new int[] {10, 2}, m.log().mapping(), "only the partial block is copied");
    assertEquals(BLOCK_BYTES_4, m.log().bytesMoved());
    assertArrayEquals(new int[] {0, 1, 2}, a.blockTable());
    assertEquals(4, m.numFreeHostBlocks());
    assertEquals(10, a.numComputedTokens());
    assertTrue(m.decode(a, 10));
    m.checkInvariants();
  }

  @Test
  void aSwapInCopiesEveryBlockWhoseCachedCopyWasEvicted() {
    BlockManager m = v0(4, 4, true, BlockManagerConfig.FreeOrder.LIFO, 4);
    PagedRequest a = admitted(m, "A", range(0, 10)); // [0,1,2]
    assertTrue(m.swapOut(a));
    PagedRequest x = admitted(m, "X", range(100, 116)); // 4 blocks: evicts A's cached 0 and 1
    assertArrayEquals(new int[] {1, 0}, m.log().evicted());
    m.free(x);
    assertTrue(m.swapIn(a));
    assertArrayEquals(new int[] {}, m.log().hitBlocks());
    assertEquals(3 * BLOCK_BYTES_4, m.log().bytesMoved());
    assertEquals(2, m.log().newlyCached().length, "the copied full blocks are cached again");
    m.checkInvariants();
  }

  @Test
  void aSwapOutWithoutEnoughHostBlocksChangesNothing() {
    BlockManager m = v0(8, 4, true, BlockManagerConfig.FreeOrder.LIFO, 2);
    PagedRequest a = admitted(m, "A", range(0, 10)); // 3 blocks
    String before = ManagerDump.of(m);
    assertFalse(m.swapOut(a));
    assertEquals(before, ManagerDump.of(m));
    assertEquals(PagedRequest.Status.RUNNING, a.status());
  }

  @Test
  void aSwappedRequestCanBeFreedAndReturnsItsHostBlocks() {
    BlockManager m = v0(8, 4, true, BlockManagerConfig.FreeOrder.LIFO, 4);
    PagedRequest a = admitted(m, "A", concat(range(0, 4), range(7, 9)));
    assertTrue(m.swapOut(a));
    assertThrows(BlockOpException.class, () -> m.decode(a, 3));
    m.free(a);
    assertEquals(4, m.numFreeHostBlocks());
    assertEquals(8, head(m.freeQueue(), 8).length);
    m.checkInvariants();
  }
}

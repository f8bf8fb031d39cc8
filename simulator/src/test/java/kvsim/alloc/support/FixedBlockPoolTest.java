package kvsim.alloc.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.SegmentLayout;
import org.junit.jupiter.api.Test;

/** The fixed-block mechanism: LIFO order, chains, accounting and its own invariant check. */
class FixedBlockPoolTest {

  @Test
  void blocksComeOffTheStackLowestAddressFirstAndGoBackInChainOrder() {
    FixedBlockPool pool = new FixedBlockPool(1000, 100, 8);
    int a = pool.take(3, 250);
    assertEquals(0, a);
    assertEquals(Extents.single(1000, 300), pool.extentsOf(a), "blocks 0, 1, 2 merged into one extent");
    int b = pool.take(1, 1);
    assertEquals(3, b);
    assertEquals(3, pool.release(a)); // pushes 0, 1, 2: block 2 ends on top
    int c = pool.take(2, 150);
    assertEquals(2, c);
    Extents.Builder expected = new Extents.Builder(2).add(1200, 100).add(1100, 100);
    assertEquals(expected.build(), pool.extentsOf(c), "chain order 2 then 1, not merged backwards");
    assertEquals(3, pool.allocatedBlocks());
    assertEquals(151, pool.requestedBytes());
    assertEquals(2, pool.liveAllocations());
    assertEquals(5, pool.freeBlocks());
    pool.checkInvariants("pool");
  }

  @Test
  void onlyHeadsOfLiveAllocationsCanBeReleased() {
    FixedBlockPool pool = new FixedBlockPool(0, 10, 4);
    int head = pool.take(2, 15);
    assertTrue(pool.isHead(head));
    assertFalse(pool.isHead(1), "a member block is not a head");
    assertFalse(pool.isHead(-1));
    assertFalse(pool.isHead(4));
    assertThrows(IllegalArgumentException.class, () -> pool.release(1));
    pool.release(head);
    assertThrows(IllegalArgumentException.class, () -> pool.release(head));
    assertThrows(IllegalArgumentException.class, () -> pool.take(5, 1));
    assertThrows(IllegalArgumentException.class, () -> pool.take(0, 1));
  }

  @Test
  void blockCountForRejectsMoreBlocksThanArraysHold() {
    assertEquals(40_960, FixedBlockPool.blockCountFor(80L << 30, 2L << 20));
    assertEquals(0, FixedBlockPool.blockCountFor(100, 101));
    assertThrows(IllegalArgumentException.class, () -> FixedBlockPool.blockCountFor(80L << 30, 1));
    assertThrows(IllegalArgumentException.class, () -> FixedBlockPool.blockCountFor(100, 0));
  }

  @Test
  void aPoolWhoseLastBlockEndsPastLongMaxValueIsRejected() {
    long block = 1L << 40;
    FixedBlockPool top = new FixedBlockPool(Long.MAX_VALUE - 4 * block, block, 4);
    assertEquals(Long.MAX_VALUE, top.endBytes());
    assertEquals(Long.MAX_VALUE - block, top.addressOf(3));
    assertThrows(IllegalArgumentException.class, () -> new FixedBlockPool(Long.MAX_VALUE - 4 * block + 1, block, 4));
    assertThrows(IllegalArgumentException.class, () -> new FixedBlockPool(0, Long.MAX_VALUE / 2, 3));
  }

  @Test
  void theLayoutSpreadsRequestedBytesOverTheChainInOrder() {
    FixedBlockPool pool = new FixedBlockPool(0, 10, 4);
    pool.take(3, 25);
    List<SegmentLayout.Block> blocks = new ArrayList<>();
    pool.appendLayout(blocks);
    assertEquals(4, blocks.size());
    assertEquals(List.of(10L, 10L, 5L, 0L), blocks.stream().map(SegmentLayout.Block::requestedBytes).toList());
    assertEquals(SegmentLayout.State.INACTIVE, blocks.get(3).state());
  }

  @Test
  void aBlockBothFreeAndAllocatedIsAnInvariantViolation() throws ReflectiveOperationException {
    FixedBlockPool pool = new FixedBlockPool(0, 10, 4);
    pool.take(1, 10); // block 0
    Field stack = FixedBlockPool.class.getDeclaredField("freeStack");
    stack.setAccessible(true);
    ((int[]) stack.get(pool))[0] = 0; // the bottom of the stack now names block 0 too
    InvariantViolation e = assertThrows(InvariantViolation.class, () -> pool.checkInvariants("pool"));
    assertTrue(e.getMessage().contains("block 0"), e.getMessage());
  }
}

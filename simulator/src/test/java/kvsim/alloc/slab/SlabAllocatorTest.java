package kvsim.alloc.slab;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;

/** The slab model's rules as its class comment states them. */
class SlabAllocatorTest {
  static final long MiB = Bytes.MiB;

  private static AllocOutcome.Allocated served(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.Allocated.class, outcome);
  }

  @Test
  void theLowestBlockIsHandedOutFirstAndAFreedBlockIsReusedFirst() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 64 * MiB, 16 * MiB), 2 * MiB);
    AllocOutcome.Allocated a = served(slab.allocate(AllocRequest.of(MiB, Tag.ACTIVATION)));
    AllocOutcome.Allocated b = served(slab.allocate(AllocRequest.of(MiB, Tag.ACTIVATION)));
    assertEquals(Extents.single(64 * MiB, 2 * MiB), a.extents());
    assertEquals(Extents.single(66 * MiB, 2 * MiB), b.extents());
    slab.free(a.handle());
    assertEquals(a.extents(), served(slab.allocate(AllocRequest.of(1, Tag.KV))).extents());
  }

  @Test
  void aSplittableRequestTakesCeilSizeOverBlockBlocksAndReturnsThemLastBlockOnTop() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 0, 16 * MiB), 2 * MiB);
    AllocOutcome.Allocated kv = served(slab.allocate(AllocRequest.of(5 * MiB, Tag.KV)));
    assertEquals(6 * MiB, kv.allocatedBytes());
    assertEquals(Extents.single(0, 6 * MiB), kv.extents());
    assertEquals(5 * MiB, slab.stats().requestedBytes());
    slab.free(kv.handle());
    // Blocks 0, 1, 2 were pushed in that order, so block 2 comes back first.
    assertEquals(Extents.single(4 * MiB, 2 * MiB), served(slab.allocate(AllocRequest.of(1, Tag.KV))).extents());
    slab.checkInvariants();
  }

  @Test
  void anUnsplittableRequestLargerThanABlockIsTooLarge() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 0, 16 * MiB), 2 * MiB);
    AllocOutcome.OutOfMemory oom =
        assertInstanceOf(AllocOutcome.OutOfMemory.class, slab.allocate(AllocRequest.of(2 * MiB + 1, Tag.ACTIVATION)));
    assertEquals(OomReason.TOO_LARGE, oom.reason());
    assertEquals(16 * MiB, oom.freeBytes());
  }

  @Test
  void tooFewFreeBlocksIsNoMemoryEvenForAnAbsurdSize() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 0, 16 * MiB), 2 * MiB);
    for (long size : new long[] {16 * MiB + 1, Long.MAX_VALUE}) {
      AllocOutcome.OutOfMemory oom =
          assertInstanceOf(AllocOutcome.OutOfMemory.class, slab.allocate(AllocRequest.of(size, Tag.KV)));
      assertEquals(OomReason.NO_MEMORY, oom.reason());
    }
    assertEquals(0, slab.stats().liveAllocations());
  }

  @Test
  void aDoubleFreeIsMisuse() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 0, 16 * MiB), 2 * MiB);
    AllocOutcome.Allocated a = served(slab.allocate(AllocRequest.of(3 * MiB, Tag.KV)));
    slab.free(a.handle());
    assertThrows(AllocatorMisuseException.class, () -> slab.free(a.handle()));
    assertThrows(AllocatorMisuseException.class, () -> slab.free(1), "a member block is no handle");
  }

  @Test
  void theTailShorterThanABlockIsAFreeBlockOfTheLayoutButNeverHandedOut() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 0, 5 * MiB), 2 * MiB);
    assertEquals(4 * MiB, slab.freeBytes());
    List<SegmentLayout.Block> blocks = slab.layout().get(0).blocks();
    assertEquals(3, blocks.size());
    assertEquals(new SegmentLayout.Block(4 * MiB, MiB, 0, SegmentLayout.State.INACTIVE), blocks.get(2));
  }

  @Test
  void latencyIsTwentyNanosecondsPerCallPlusTenPerBlock() {
    SlabAllocator slab = new SlabAllocator(new Region("kv", 0, 16 * MiB), 2 * MiB);
    AllocOutcome.Allocated a = served(slab.allocate(AllocRequest.of(5 * MiB, Tag.KV)));
    assertEquals(20 + 3 * 10, slab.stats().modelledNanos());
    slab.free(a.handle());
    assertEquals(2 * (20 + 3 * 10), slab.stats().modelledNanos());
  }
}

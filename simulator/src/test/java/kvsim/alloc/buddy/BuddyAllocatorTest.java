package kvsim.alloc.buddy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.testing.CheckedAllocator;
import org.junit.jupiter.api.Test;

/**
 * The buddy allocator's rules as its class comment states them, on small regions counted in
 * blocks of {@link #B} (1 KiB) from an unaligned base, with the invariants checked after every event.
 */
class BuddyAllocatorTest {
  static final long B = Bytes.KiB;
  static final long BASE = 3 * B + 5;

  private static Region blocks(long count) {
    return new Region("kv", BASE, count * B);
  }

  private static AllocOutcome.Allocated served(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.Allocated.class, outcome);
  }

  private static AllocOutcome.OutOfMemory refused(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.OutOfMemory.class, outcome);
  }

  private static AllocRequest bytes(long size) {
    return AllocRequest.of(size, Tag.KV);
  }

  /** Returns the address of block {@code i} of the region. */
  private static long at(long i) {
    return BASE + i * B;
  }

  /** Returns the free blocks of the layout as {address in blocks, size in blocks} pairs. */
  private static List<List<Long>> freeBlocks(BuddyAllocator buddy) {
    return buddy.layout().get(0).blocks().stream()
        .filter(b -> b.state() == SegmentLayout.State.INACTIVE && b.sizeBytes() % B == 0)
        .map(b -> List.of((b.addressBytes() - BASE) / B, b.sizeBytes() / B))
        .toList();
  }

  private static CheckedAllocator checked(BuddyAllocator buddy, Region region) {
    return new CheckedAllocator(buddy, region);
  }

  @Test
  void aRequestIsRoundedUpToAPowerOfTwoOfAtLeastTheMinimumBlock() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(64), B);
    CheckedAllocator model = checked(buddy, blocks(64));
    assertEquals(B, served(model.allocate(bytes(1))).allocatedBytes());
    assertEquals(B, served(model.allocate(bytes(B))).allocatedBytes());
    assertEquals(2 * B, served(model.allocate(bytes(B + 1))).allocatedBytes());
    assertEquals(8 * B, served(model.allocate(bytes(5 * B))).allocatedBytes());
    assertEquals(8 * B, served(model.allocate(bytes(8 * B))).allocatedBytes());
    assertEquals(1 + B + (B + 1) + 5 * B + 8 * B, buddy.stats().requestedBytes());
    assertEquals(B + B + 2 * B + 8 * B + 8 * B, buddy.stats().allocatedBytes());
  }

  @Test
  void aSplitHalvesTheBlockDownToTheRequestAndLeavesEachUpperHalfFree() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(16), B);
    CheckedAllocator model = checked(buddy, blocks(16));
    assertEquals(Extents.single(at(0), B), served(model.allocate(bytes(100))).extents());
    assertEquals(List.of(List.of(1L, 1L), List.of(2L, 2L), List.of(4L, 4L), List.of(8L, 8L)), freeBlocks(buddy));
    assertEquals(4L, buddy.extraMetrics().get("splits"));
    assertEquals(30 + 4 * 20, buddy.stats().modelledNanos(), "30 ns plus 20 ns per split");
  }

  @Test
  void theSmallestFreeBlockThatFitsIsTakenBeforeALargerOneAtALowerAddress() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(16), B);
    CheckedAllocator model = checked(buddy, blocks(16));
    served(model.allocate(bytes(B))); // free: [1] [2,2] [4,4] [8,8]
    assertEquals(Extents.single(at(4), 4 * B), served(model.allocate(bytes(3 * B))).extents(), "the 4-block, not a split of the 8");
    assertEquals(Extents.single(at(2), 2 * B), served(model.allocate(bytes(2 * B))).extents());
    assertEquals(Extents.single(at(1), B), served(model.allocate(bytes(B))).extents());
    assertEquals(List.of(List.of(8L, 8L)), freeBlocks(buddy));
  }

  @Test
  void amongFreeBlocksOfOneOrderTheLowestAddressWins() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(16), B);
    CheckedAllocator model = checked(buddy, blocks(16));
    long[] h = new long[16];
    for (int i = 0; i < 16; i++) {
      h[i] = served(model.allocate(bytes(B))).handle();
    }
    model.free(h[13]);
    model.free(h[6]);
    model.free(h[9]);
    assertEquals(Extents.single(at(6), B), served(model.allocate(bytes(B))).extents());
    assertEquals(Extents.single(at(9), B), served(model.allocate(bytes(B))).extents());
    assertEquals(Extents.single(at(13), B), served(model.allocate(bytes(B))).extents());
  }

  @Test
  void aFreeMergesWithItsBuddyAllTheWayUpWhenEveryBuddyIsFree() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(16), B);
    CheckedAllocator model = checked(buddy, blocks(16));
    long a = served(model.allocate(bytes(B))).handle();
    long b = served(model.allocate(bytes(B))).handle(); // block 1, a's buddy
    long c = served(model.allocate(bytes(2 * B))).handle(); // blocks 2-3
    model.free(a);
    assertEquals(0L, buddy.extraMetrics().get("merges"), "a's buddy b is live");
    assertEquals(List.of(List.of(0L, 1L), List.of(4L, 4L), List.of(8L, 8L)), freeBlocks(buddy));
    long nanos = buddy.stats().modelledNanos();
    model.free(b);
    assertEquals(1L, buddy.extraMetrics().get("merges"), "merged with a; the 2-block buddy c is live");
    assertEquals(30 + 20, buddy.stats().modelledNanos() - nanos);
    model.free(c);
    assertEquals(List.of(List.of(0L, 16L)), freeBlocks(buddy), "merged with [0,2), then [4,8), then [8,16)");
    assertEquals(4L, buddy.extraMetrics().get("merges"));
    assertEquals(16 * B, buddy.largestFreeBytes());
  }

  @Test
  void aFreeBlockDoesNotMergeWithANeighbourThatIsNotItsBuddy() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(8), B);
    CheckedAllocator model = checked(buddy, blocks(8));
    long[] h = new long[8];
    for (int i = 0; i < 8; i++) {
      h[i] = served(model.allocate(bytes(B))).handle();
    }
    model.free(h[1]);
    model.free(h[2]); // adjacent to 1, but 1's buddy is 0 and 2's is 3
    assertEquals(List.of(List.of(1L, 1L), List.of(2L, 1L)), freeBlocks(buddy));
    assertEquals(B, buddy.largestFreeBytes());
    assertEquals(
        new AllocOutcome.OutOfMemory(OomReason.FRAGMENTATION, 2 * B, 2 * B, B),
        refused(model.allocate(bytes(2 * B))),
        "two free blocks side by side, but not buddies");
  }

  @Test
  void aRegionThatIsNotAPowerOfTwoIsCoveredByTopLevelBlocksLargestFirst() {
    Region region = new Region("kv", BASE, 13 * B + 700); // 8 + 4 + 1 blocks, then a 700 B tail
    BuddyAllocator buddy = new BuddyAllocator(region, B);
    CheckedAllocator model = checked(buddy, region);
    assertEquals(List.of(List.of(0L, 8L), List.of(8L, 4L), List.of(12L, 1L)), freeBlocks(buddy));
    assertEquals(8 * B, buddy.largestTopBlockBytes());
    assertEquals(13 * B, buddy.freeBytes(), "the tail is not free memory");
    List<SegmentLayout.Block> layout = buddy.layout().get(0).blocks();
    assertEquals(new SegmentLayout.Block(at(13), 700, 0, SegmentLayout.State.INACTIVE), layout.get(layout.size() - 1));
    // Fill every block, then free them all: the top-level blocks come back, never merged with each other.
    for (int i = 0; i < 13; i++) {
      served(model.allocate(bytes(B)));
    }
    assertEquals(OomReason.NO_MEMORY, refused(model.allocate(bytes(1))).reason());
    model.freeAll();
    assertEquals(List.of(List.of(0L, 8L), List.of(8L, 4L), List.of(12L, 1L)), freeBlocks(buddy));
    assertEquals(3L, buddy.extraMetrics().get("free_blocks"));
  }

  @Test
  void aRoundedSizeAboveTheLargestTopLevelBlockIsTooLargeWhateverIsFree() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(13), B);
    CheckedAllocator model = checked(buddy, blocks(13));
    AllocOutcome.OutOfMemory oom = refused(model.allocate(bytes(8 * B + 1)));
    assertEquals(new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, 8 * B + 1, 13 * B, 8 * B), oom, "13 blocks free, but no 16-block");
    for (long size : new long[] {13 * B, Long.MAX_VALUE, Long.MAX_VALUE - 1, 1L << 62, (1L << 62) + 1}) {
      assertEquals(OomReason.TOO_LARGE, refused(model.allocate(bytes(size))).reason(), size + " B");
    }
    assertEquals(8 * B, served(model.allocate(bytes(8 * B))).allocatedBytes());
  }

  @Test
  void aRequestThatNoFreeBlockHoldsIsFragmentationWhenTheFreeBytesWouldAndNoMemoryOtherwise() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(8), B);
    CheckedAllocator model = checked(buddy, blocks(8));
    long[] h = new long[8];
    for (int i = 0; i < 8; i++) {
      h[i] = served(model.allocate(bytes(B))).handle();
    }
    for (int i = 0; i < 8; i += 2) {
      model.free(h[i]);
    }
    assertEquals(4 * B, buddy.freeBytes());
    assertEquals(OomReason.FRAGMENTATION, refused(model.allocate(bytes(3 * B))).reason(), "4 blocks free, none a 4-block");
    assertEquals(OomReason.FRAGMENTATION, refused(model.allocate(bytes(B + 1))).reason());
    assertEquals(OomReason.NO_MEMORY, refused(model.allocate(bytes(4 * B + 1))).reason(), "rounds to 8 blocks, 4 free");
    model.freeAll();
    assertEquals(List.of(List.of(0L, 8L)), freeBlocks(buddy));
  }

  @Test
  void aRegionSmallerThanTheMinimumBlockRefusesEverythingAsTooLarge() {
    Region region = new Region("kv", BASE, B - 1);
    BuddyAllocator buddy = new BuddyAllocator(region, B);
    CheckedAllocator model = checked(buddy, region);
    assertEquals(0, buddy.freeBytes());
    assertEquals(0, buddy.largestFreeBytes());
    assertEquals(OomReason.TOO_LARGE, refused(model.allocate(bytes(1))).reason());
    assertEquals(List.of(new SegmentLayout.Block(BASE, B - 1, 0, SegmentLayout.State.INACTIVE)), buddy.layout().get(0).blocks());
  }

  @Test
  void theMinimumBlockOptionMustBeAPowerOfTwoAndDefaultsToTwoMebibytes() {
    Region region = new Region("kv", 0, Bytes.GiB);
    AllocatorContext defaults = new AllocatorContext("buddy", region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of());
    BuddyAllocator buddy = new BuddyAllocator(defaults);
    assertEquals(BuddyAllocator.DEFAULT_MIN_BLOCK_BYTES, buddy.minBlockBytes());
    assertEquals(2 * Bytes.MiB, BuddyAllocator.DEFAULT_MIN_BLOCK_BYTES);
    assertEquals(2 * Bytes.MiB, served(buddy.allocate(bytes(1))).allocatedBytes());
    assertEquals(2 * Bytes.MiB, defaults.effectiveOptions().get("min-block"));
    AllocatorContext small = new AllocatorContext("buddy", region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("min-block", "64KiB"));
    assertEquals(64 * Bytes.KiB, new BuddyAllocator(small).minBlockBytes());
    for (String bad : new String[] {"3MiB", "0", "1000"}) {
      AllocatorContext context =
          new AllocatorContext("buddy", region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("min-block", bad));
      InputException e = assertThrows(InputException.class, () -> new BuddyAllocator(context), bad);
      assertTrue(e.getMessage().contains("min-block"), e.getMessage());
    }
    assertThrows(IllegalArgumentException.class, () -> new BuddyAllocator(region, 3 * Bytes.MiB));
  }

  @Test
  void aRegionOfMoreMinimumBlocksThanTheBitmapsAllowIsBadInput() {
    Region huge = new Region("kv", 0, (BuddyAllocator.MAX_UNITS + 1) * 4096);
    AllocatorContext context =
        new AllocatorContext("buddy", huge, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("min-block", "4KiB"));
    InputException e = assertThrows(InputException.class, () -> new BuddyAllocator(context));
    assertTrue(e.getMessage().contains("larger min-block"), e.getMessage());
    assertEquals(1L << 40, new BuddyAllocator(huge, 1L << 40).largestTopBlockBytes());
  }

  @Test
  void aStaleHandleIsRejectedEvenAfterItsSlotIsReused() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(8), B);
    long first = served(buddy.allocate(bytes(100))).handle();
    buddy.free(first);
    long second = served(buddy.allocate(bytes(100))).handle();
    assertNotEquals(first, second);
    assertThrows(AllocatorMisuseException.class, () -> buddy.free(first));
    assertThrows(AllocatorMisuseException.class, () -> buddy.extentsOf(first));
    assertEquals(1, buddy.stats().liveAllocations());
    buddy.free(second);
    assertThrows(AllocatorMisuseException.class, () -> buddy.free(12345));
    buddy.checkInvariants();
  }

  @Test
  void randomChurnOnAnEightyGibibyteRegionKeepsEveryInvariant() {
    Region region = new Region("all", 0, 80 * Bytes.GiB);
    BuddyAllocator buddy = new BuddyAllocator(region, 2 * Bytes.MiB);
    CheckedAllocator model = checked(buddy, region);
    SplittableRandom random = new SplittableRandom(3);
    for (int op = 0; op < 3_000; op++) {
      if (model.liveHandles().isEmpty() || random.nextInt(100) < 60) {
        model.allocate(bytes(1 + random.nextLong(256 * Bytes.MiB)));
      } else {
        model.freeAt(random.nextInt(model.liveHandles().size()));
      }
    }
    assertTrue(model.refusals() > 0 && model.allocations() > 1_000, model.refusals() + " refused");
    model.freeAll();
    assertEquals(List.of(64 * Bytes.GiB, 16 * Bytes.GiB), buddy.layout().get(0).blocks().stream().map(SegmentLayout.Block::sizeBytes).toList());
  }

  @Test
  void twoFreeBuddiesLeftApartAreAnInvariantViolation() throws ReflectiveOperationException {
    BuddyAllocator buddy = new BuddyAllocator(blocks(8), B);
    long a = served(buddy.allocate(bytes(B))).handle();
    served(buddy.allocate(bytes(B)));
    buddy.free(a);
    buddy.checkInvariants();
    Field field = BuddyAllocator.class.getDeclaredField("freeByOrder");
    field.setAccessible(true);
    BlockBitmap[] free = (BlockBitmap[]) field.get(buddy);
    free[0].clear(0);
    free[1].set(0); // blocks 0-1 now free as a pair although block 1 is live
    assertThrows(InvariantViolation.class, buddy::checkInvariants);
    free[1].clear(0);
    free[0].set(0);
    free[0].set(1); // block 1 free beside its free buddy 0, and live as well
    InvariantViolation e = assertThrows(InvariantViolation.class, buddy::checkInvariants);
    assertTrue(e.getMessage().contains("not merged"), e.getMessage());
  }

  @Test
  void aCorruptedByteCounterIsAnInvariantViolation() {
    BuddyAllocator buddy = new BuddyAllocator(blocks(8), B);
    served(buddy.allocate(bytes(100)));
    buddy.stats().onAlloc(0, B); // allocated bytes 2 B, the allocations hold B
    assertThrows(InvariantViolation.class, buddy::checkInvariants);
  }
}

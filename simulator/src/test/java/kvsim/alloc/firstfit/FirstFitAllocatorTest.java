package kvsim.alloc.firstfit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.Extents;
import kvsim.alloc.InvariantViolation;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.support.AllocationSlots;
import kvsim.alloc.support.ExtentArena;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;

/** First fit's rules as its class comment states them. */
class FirstFitAllocatorTest {
  static final Region REGION = new Region("kv", 4096, Bytes.MiB);

  private static AllocOutcome.Allocated served(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.Allocated.class, outcome);
  }

  private static AllocOutcome.OutOfMemory refused(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.OutOfMemory.class, outcome);
  }

  private static AllocRequest bytes(long size) {
    return AllocRequest.of(size, Tag.ACTIVATION);
  }

  @Test
  void anAllocationTakesTheLowPartOfTheLowestExtentThatFits() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    AllocOutcome.Allocated a = served(ff.allocate(bytes(1000)));
    AllocOutcome.Allocated b = served(ff.allocate(bytes(512)));
    AllocOutcome.Allocated c = served(ff.allocate(bytes(4096)));
    assertEquals(Extents.single(4096, 1024), a.extents());
    assertEquals(Extents.single(5120, 512), b.extents());
    assertEquals(Extents.single(5632, 4096), c.extents());
    ff.free(a.handle()); // a 1024 B hole at 4096
    assertEquals(Extents.single(5632 + 4096, 2048), served(ff.allocate(bytes(2048))).extents(), "too big for the hole");
    assertEquals(Extents.single(4096, 512), served(ff.allocate(bytes(300))).extents(), "the hole's low half");
    assertEquals(Extents.single(4608, 512), served(ff.allocate(bytes(512))).extents(), "the hole's high half");
    ff.checkInvariants();
  }

  @Test
  void aFreeMergesWithBothNeighbours() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    long[] handles = new long[4];
    for (int i = 0; i < 4; i++) {
      handles[i] = served(ff.allocate(bytes(8192))).handle();
    }
    ff.free(handles[0]);
    ff.free(handles[2]);
    assertEquals(3L, ff.extraMetrics().get("free_extents"), "two holes and the rest of the region");
    ff.free(handles[1]);
    assertEquals(2L, ff.extraMetrics().get("free_extents"), "the three first pieces merged");
    assertEquals(Extents.single(4096, 3 * 8192), served(ff.allocate(bytes(3 * 8192))).extents());
    ff.free(handles[3]);
    ff.checkInvariants();
  }

  @Test
  void requestsAreRoundedUpToTheAlignmentOption() {
    AllocatorContext context =
        new AllocatorContext(
            "first-fit", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("alignment", "4KiB"));
    FirstFitAllocator ff = new FirstFitAllocator(context);
    assertEquals(4096, ff.alignmentBytes());
    AllocOutcome.Allocated a = served(ff.allocate(bytes(1)));
    assertEquals(4096, a.allocatedBytes());
    assertEquals(1, ff.stats().requestedBytes());
    assertEquals(4096, ff.stats().allocatedBytes());
    assertEquals(Extents.single(8192, 4096), served(ff.allocate(bytes(4096))).extents());
    assertEquals("4096", context.effectiveOptions().get("alignment").toString());
  }

  @Test
  void theDefaultAlignmentIs512Bytes() {
    FirstFitAllocator ff =
        new FirstFitAllocator(
            new AllocatorContext("first-fit", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of()));
    assertEquals(512, served(ff.allocate(bytes(1))).allocatedBytes());
  }

  @Test
  void aNonPositiveAlignmentIsBadInput() {
    assertThrows(
        InputException.class,
        () ->
            new FirstFitAllocator(
                new AllocatorContext(
                    "first-fit", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("alignment", "0"))));
  }

  @Test
  void scatteredFreeBytesThatCouldHoldTheRequestMakeAFragmentationRefusal() {
    FirstFitAllocator ff = new FirstFitAllocator(new Region("kv", 0, 8192), 512);
    long[] handles = new long[16];
    for (int i = 0; i < 16; i++) {
      handles[i] = served(ff.allocate(bytes(512))).handle();
    }
    for (int i = 0; i < 16; i += 2) {
      ff.free(handles[i]);
    }
    assertEquals(4096, ff.freeBytes());
    assertEquals(512, ff.largestFreeBytes());
    AllocOutcome.OutOfMemory frag = refused(ff.allocate(bytes(1024)));
    assertEquals(new AllocOutcome.OutOfMemory(OomReason.FRAGMENTATION, 1024, 4096, 512), frag);
    assertEquals(OomReason.NO_MEMORY, refused(ff.allocate(bytes(4097))).reason());
  }

  @Test
  void aRequestWhoseRoundedSizeExceedsTheFreeBytesIsNoMemory() {
    // 1000 B region, 512 B alignment: after one allocation 488 B are free but no 512 B piece.
    FirstFitAllocator ff = new FirstFitAllocator(new Region("kv", 0, 1000), 512);
    served(ff.allocate(bytes(1)));
    assertEquals(488, ff.freeBytes());
    assertEquals(0, ff.largestFreeBytes(), "the tail holds no aligned request");
    AllocOutcome.OutOfMemory oom = refused(ff.allocate(bytes(400)));
    assertEquals(OomReason.NO_MEMORY, oom.reason());
    assertEquals(400, oom.requestedBytes());
  }

  @Test
  void anAbsurdRequestIsRefusedNotThrown() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    assertEquals(OomReason.NO_MEMORY, refused(ff.allocate(bytes(Long.MAX_VALUE))).reason());
    assertEquals(OomReason.NO_MEMORY, refused(ff.allocate(bytes(REGION.sizeBytes() + 1))).reason());
    assertEquals(REGION.sizeBytes(), served(ff.allocate(bytes(REGION.sizeBytes()))).allocatedBytes());
  }

  @Test
  void anAlignmentTheRegionCannotBeRoundedToIsRejectedAtConstruction() {
    // The whole region rounded up to the alignment must be a long; allocate() then never wraps.
    Region big = new Region("kv", 0, 1L << 62);
    assertEquals(1L << 62, new FirstFitAllocator(big, 1L << 62).alignmentBytes());
    assertThrows(IllegalArgumentException.class, () -> new FirstFitAllocator(new Region("kv", 0, (1L << 62) + 1), 1L << 62));
    FirstFitAllocator huge = new FirstFitAllocator(REGION, Long.MAX_VALUE);
    assertEquals(OomReason.NO_MEMORY, refused(huge.allocate(bytes(1))).reason(), "rounds to Long.MAX_VALUE B");
    huge.checkInvariants();
    FirstFitAllocator odd = new FirstFitAllocator(REGION, (1L << 62) + 1);
    assertEquals(OomReason.NO_MEMORY, refused(odd.allocate(bytes(REGION.sizeBytes()))).reason());
  }

  @Test
  void aStaleHandleIsRejectedEvenAfterItsSlotIsReused() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    long first = served(ff.allocate(bytes(100))).handle();
    ff.free(first);
    long second = served(ff.allocate(bytes(100))).handle();
    assertNotEquals(first, second);
    assertThrows(AllocatorMisuseException.class, () -> ff.free(first));
    assertThrows(AllocatorMisuseException.class, () -> ff.extentsOf(first));
    assertEquals(1, ff.stats().liveAllocations());
    ff.free(second);
    assertThrows(AllocatorMisuseException.class, () -> ff.free(12345));
  }

  @Test
  void latencyIsFiftyNanosecondsPlusTenPerTreeLevel() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    long a = served(ff.allocate(bytes(100))).handle();
    assertEquals(50 + 10, ff.stats().modelledNanos(), "one free extent: the search visits one level");
    ff.free(a);
    assertEquals(2 * (50 + 10), ff.stats().modelledNanos(), "the neighbour search visits the one remaining extent");
  }

  @Test
  void theLayoutIsOneSegmentTiledByFreeAndAllocatedBlocks() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    long a = served(ff.allocate(bytes(1000))).handle();
    served(ff.allocate(bytes(2000)));
    ff.free(a);
    List<SegmentLayout> layout = ff.layout();
    assertEquals(1, layout.size());
    assertEquals(
        List.of(
            new SegmentLayout.Block(4096, 1024, 0, SegmentLayout.State.INACTIVE),
            new SegmentLayout.Block(5120, 2048, 2000, SegmentLayout.State.ACTIVE_ALLOCATED),
            new SegmentLayout.Block(7168, REGION.endBytes() - 7168, 0, SegmentLayout.State.INACTIVE)),
        layout.get(0).blocks());
  }

  @Test
  void tenThousandLiveAllocationsOnAnEightyGibibyteRegionStayConsistent() {
    FirstFitAllocator ff = new FirstFitAllocator(new Region("all", 0, 80 * Bytes.GiB), 512);
    long[] handles = new long[10_000];
    for (int i = 0; i < handles.length; i++) {
      handles[i] = served(ff.allocate(bytes((1 + i % 8) * Bytes.MiB))).handle();
    }
    for (int i = 0; i < handles.length; i += 3) {
      ff.free(handles[i]);
    }
    ff.checkInvariants();
    assertTrue(ff.extraMetrics().get("free_extents") > 3_000);
  }

  @Test
  void aCorruptedByteCounterIsAnInvariantViolation() {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    served(ff.allocate(bytes(100)));
    ff.stats().onAlloc(0, 512); // allocated bytes 1024, the allocations hold 512
    assertThrows(InvariantViolation.class, ff::checkInvariants);
  }

  @Test
  void overlappingAllocationsAreAnInvariantViolation() throws ReflectiveOperationException {
    FirstFitAllocator ff = new FirstFitAllocator(REGION, 512);
    served(ff.allocate(bytes(512)));
    served(ff.allocate(bytes(512)));
    Field arena = FirstFitAllocator.class.getDeclaredField("arena");
    arena.setAccessible(true);
    Field table = ExtentArena.class.getDeclaredField("slots");
    table.setAccessible(true);
    Field slots = AllocationSlots.class.getDeclaredField("slots");
    slots.setAccessible(true);
    ((long[]) slots.get(table.get(arena.get(ff))))[4] = 4096; // slot 1's offset: the second allocation now sits on the first
    InvariantViolation e = assertThrows(InvariantViolation.class, ff::checkInvariants);
    assertTrue(e.getMessage().contains("overlap") || e.getMessage().contains("gap"), e.getMessage());
  }
}

package kvsim.alloc.bestfit;

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
import kvsim.alloc.support.ExtentArena;
import kvsim.alloc.support.ExtentSizeIndex;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;

/** Best fit's rules as its class comment states them. */
class BestFitAllocatorTest {
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

  /** Allocates {@code sizes} end to end from the base and frees those at the odd positions, leaving holes of those sizes. */
  private static long[] holes(BestFitAllocator bf, long... sizes) {
    long[] handles = new long[sizes.length];
    for (int i = 0; i < sizes.length; i++) {
      handles[i] = served(bf.allocate(bytes(sizes[i]))).handle();
    }
    for (int i = 1; i < sizes.length; i += 2) {
      bf.free(handles[i]);
    }
    return handles;
  }

  @Test
  void anAllocationTakesTheLowPartOfTheSmallestExtentThatFits() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    // Holes of 8 KiB at 4096 + 512, 2 KiB at 4096 + 512 + 8192 + 512, 4 KiB after that.
    holes(bf, 512, 8192, 512, 2048, 512, 4096, 512);
    long hole8k = 4096 + 512;
    long hole2k = hole8k + 8192 + 512;
    long hole4k = hole2k + 2048 + 512;
    assertEquals(Extents.single(hole2k, 1024), served(bf.allocate(bytes(1000))).extents(), "the 2 KiB hole, not the first");
    assertEquals(Extents.single(hole2k + 1024, 1024), served(bf.allocate(bytes(1024))).extents(), "what is left of it fits exactly");
    assertEquals(Extents.single(hole4k, 3072), served(bf.allocate(bytes(3000))).extents(), "4 KiB is now the best fit");
    assertEquals(Extents.single(hole8k, 4096), served(bf.allocate(bytes(4096))).extents(), "only the 8 KiB hole holds 4 KiB");
    bf.checkInvariants();
  }

  @Test
  void amongExtentsOfTheBestSizeTheLowestAddressWins() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    holes(bf, 512, 4096, 512, 8192, 512, 4096, 512, 4096, 512);
    long first4k = 4096 + 512;
    assertEquals(Extents.single(first4k, 4096), served(bf.allocate(bytes(4096))).extents());
    long second4k = first4k + 4096 + 512 + 8192 + 512;
    assertEquals(Extents.single(second4k, 2048), served(bf.allocate(bytes(2048))).extents(), "2 KiB left there beats the other 4 KiB hole");
    assertEquals(Extents.single(second4k + 2048, 2048), served(bf.allocate(bytes(2048))).extents());
    bf.checkInvariants();
  }

  @Test
  void bestFitKeepsTheLargeExtentWhereFirstFitWouldCutIt() {
    BestFitAllocator bf = new BestFitAllocator(new Region("kv", 0, 64 * 1024), 512);
    // A 32 KiB hole at the bottom, then a 1 KiB hole, then the 15 KiB top.
    long big = served(bf.allocate(bytes(32 * 1024))).handle();
    served(bf.allocate(bytes(512)));
    long small = served(bf.allocate(bytes(1024))).handle();
    served(bf.allocate(bytes(15 * 1024 + 512)));
    bf.free(big);
    bf.free(small);
    assertEquals(Extents.single(32 * 1024 + 512, 1024), served(bf.allocate(bytes(1024))).extents());
    assertEquals(32 * 1024, bf.largestFreeBytes(), "the 32 KiB extent is whole");
  }

  @Test
  void aFreeMergesWithBothNeighbours() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    long[] handles = new long[4];
    for (int i = 0; i < 4; i++) {
      handles[i] = served(bf.allocate(bytes(8192))).handle();
    }
    bf.free(handles[0]);
    bf.free(handles[2]);
    assertEquals(3L, bf.extraMetrics().get("free_extents"), "two holes and the rest of the region");
    bf.free(handles[1]);
    assertEquals(2L, bf.extraMetrics().get("free_extents"), "the three first pieces merged");
    bf.checkInvariants();
    assertEquals(Extents.single(4096, 3 * 8192), served(bf.allocate(bytes(3 * 8192))).extents(), "the merged extent is the best fit");
    bf.free(handles[3]);
    bf.checkInvariants();
  }

  @Test
  void requestsAreRoundedUpToTheAlignmentOption() {
    AllocatorContext context =
        new AllocatorContext(
            "best-fit", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("alignment", "4KiB"));
    BestFitAllocator bf = new BestFitAllocator(context);
    assertEquals(4096, bf.alignmentBytes());
    AllocOutcome.Allocated a = served(bf.allocate(bytes(1)));
    assertEquals(4096, a.allocatedBytes());
    assertEquals(1, bf.stats().requestedBytes());
    assertEquals(4096, bf.stats().allocatedBytes());
    assertEquals(Extents.single(8192, 4096), served(bf.allocate(bytes(4096))).extents());
    assertEquals("4096", context.effectiveOptions().get("alignment").toString());
  }

  @Test
  void theDefaultAlignmentIs512Bytes() {
    BestFitAllocator bf =
        new BestFitAllocator(
            new AllocatorContext("best-fit", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of()));
    assertEquals(BestFitAllocator.DEFAULT_ALIGNMENT_BYTES, served(bf.allocate(bytes(1))).allocatedBytes());
    assertEquals(512, BestFitAllocator.DEFAULT_ALIGNMENT_BYTES);
  }

  @Test
  void aNonPositiveAlignmentIsBadInput() {
    assertThrows(
        InputException.class,
        () ->
            new BestFitAllocator(
                new AllocatorContext(
                    "best-fit", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("alignment", "0"))));
    assertThrows(IllegalArgumentException.class, () -> new BestFitAllocator(REGION, 0));
  }

  @Test
  void scatteredFreeBytesThatCouldHoldTheRequestMakeAFragmentationRefusal() {
    BestFitAllocator bf = new BestFitAllocator(new Region("kv", 0, 8192), 512);
    long[] handles = new long[16];
    for (int i = 0; i < 16; i++) {
      handles[i] = served(bf.allocate(bytes(512))).handle();
    }
    for (int i = 0; i < 16; i += 2) {
      bf.free(handles[i]);
    }
    assertEquals(4096, bf.freeBytes());
    assertEquals(512, bf.largestFreeBytes());
    assertEquals(new AllocOutcome.OutOfMemory(OomReason.FRAGMENTATION, 1024, 4096, 512), refused(bf.allocate(bytes(1024))));
    assertEquals(OomReason.NO_MEMORY, refused(bf.allocate(bytes(4097))).reason());
  }

  @Test
  void aRequestWhoseRoundedSizeExceedsTheFreeBytesIsNoMemory() {
    // 1000 B region, 512 B alignment: after one allocation 488 B are free but no 512 B piece.
    BestFitAllocator bf = new BestFitAllocator(new Region("kv", 0, 1000), 512);
    served(bf.allocate(bytes(1)));
    assertEquals(488, bf.freeBytes());
    assertEquals(0, bf.largestFreeBytes(), "the tail holds no aligned request");
    AllocOutcome.OutOfMemory oom = refused(bf.allocate(bytes(400)));
    assertEquals(OomReason.NO_MEMORY, oom.reason());
    assertEquals(400, oom.requestedBytes());
  }

  @Test
  void anAbsurdRequestIsRefusedNotThrown() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    assertEquals(OomReason.NO_MEMORY, refused(bf.allocate(bytes(Long.MAX_VALUE))).reason());
    assertEquals(OomReason.NO_MEMORY, refused(bf.allocate(bytes(REGION.sizeBytes() + 1))).reason());
    assertEquals(REGION.sizeBytes(), served(bf.allocate(bytes(REGION.sizeBytes()))).allocatedBytes());
    bf.checkInvariants();
  }

  @Test
  void anAlignmentTheRegionCannotBeRoundedToIsRejectedAtConstruction() {
    assertEquals(1L << 61, new BestFitAllocator(new Region("kv", 0, 1L << 61), 1L << 61).alignmentBytes());
    assertThrows(IllegalArgumentException.class, () -> new BestFitAllocator(new Region("kv", 0, (1L << 62) + 1), 1L << 62));
    BestFitAllocator huge = new BestFitAllocator(REGION, Long.MAX_VALUE);
    assertEquals(OomReason.NO_MEMORY, refused(huge.allocate(bytes(1))).reason(), "rounds to Long.MAX_VALUE B");
    huge.checkInvariants();
  }

  @Test
  void aStaleHandleIsRejectedEvenAfterItsSlotIsReused() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    long first = served(bf.allocate(bytes(100))).handle();
    bf.free(first);
    long second = served(bf.allocate(bytes(100))).handle();
    assertNotEquals(first, second);
    assertThrows(AllocatorMisuseException.class, () -> bf.free(first));
    assertThrows(AllocatorMisuseException.class, () -> bf.extentsOf(first));
    assertEquals(1, bf.stats().liveAllocations());
    bf.free(second);
    assertThrows(AllocatorMisuseException.class, () -> bf.free(12345));
    bf.checkInvariants();
  }

  @Test
  void latencyIsFiftyNanosecondsPlusTenPerTreeLevel() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    long a = served(bf.allocate(bytes(100))).handle();
    assertEquals(50 + 10, bf.stats().modelledNanos(), "one free extent: the search visits one level");
    bf.free(a);
    assertEquals(2 * (50 + 10), bf.stats().modelledNanos(), "the neighbour search visits the one remaining extent");
    assertEquals(BestFitAllocator.DEFAULT_LATENCY, bf.latency());
  }

  @Test
  void theLayoutIsOneSegmentTiledByFreeAndAllocatedBlocks() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    long a = served(bf.allocate(bytes(1000))).handle();
    served(bf.allocate(bytes(2000)));
    bf.free(a);
    List<SegmentLayout> layout = bf.layout();
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
    BestFitAllocator bf = new BestFitAllocator(new Region("all", 0, 80 * Bytes.GiB), 512);
    long[] handles = new long[10_000];
    for (int i = 0; i < handles.length; i++) {
      handles[i] = served(bf.allocate(bytes((1 + i % 8) * Bytes.MiB))).handle();
    }
    for (int i = 0; i < handles.length; i += 3) {
      bf.free(handles[i]);
    }
    bf.checkInvariants();
    assertTrue(bf.extraMetrics().get("free_extents") > 3_000);
    for (int i = 0; i < 3_000; i++) {
      served(bf.allocate(bytes(Bytes.MiB)));
    }
    bf.checkInvariants();
  }

  @Test
  void aCorruptedByteCounterIsAnInvariantViolation() {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    served(bf.allocate(bytes(100)));
    bf.stats().onAlloc(0, 512); // allocated bytes 1024, the allocations hold 512
    assertThrows(InvariantViolation.class, bf::checkInvariants);
  }

  @Test
  void aSizeIndexThatDisagreesWithTheAddressTreeIsAnInvariantViolation() throws ReflectiveOperationException {
    BestFitAllocator bf = new BestFitAllocator(REGION, 512);
    served(bf.allocate(bytes(100)));
    Field arena = BestFitAllocator.class.getDeclaredField("arena");
    arena.setAccessible(true);
    Field field = ExtentArena.class.getDeclaredField("bySize");
    field.setAccessible(true);
    ExtentSizeIndex index = (ExtentSizeIndex) field.get(arena.get(bf));
    index.remove(REGION.sizeBytes() - 512, REGION.baseBytes() + 512);
    index.add(REGION.sizeBytes() - 1024, REGION.baseBytes() + 512);
    InvariantViolation e = assertThrows(InvariantViolation.class, bf::checkInvariants);
    assertTrue(e.getMessage().contains("size index"), e.getMessage());
  }
}

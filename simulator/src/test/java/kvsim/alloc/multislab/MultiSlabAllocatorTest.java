package kvsim.alloc.multislab;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The multi-slab model's rules as its class comment states them. */
class MultiSlabAllocatorTest {
  static final long KiB = Bytes.KiB;
  static final long MiB = Bytes.MiB;
  static final long GiB = Bytes.GiB;

  private static MultiSlabAllocator build(Region region, Map<String, String> options) {
    return new MultiSlabAllocator(
        new AllocatorContext("multi-slab", region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), options));
  }

  /** 16 MiB: eight 1 MiB blocks at the base, then two 4 MiB blocks. */
  private static MultiSlabAllocator small() {
    return build(new Region("kv", 0, 16 * MiB), Map.of("classes", "1MiB:50,4MiB:50"));
  }

  private static AllocOutcome.Allocated served(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.Allocated.class, outcome);
  }

  private static AllocOutcome.OutOfMemory refused(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.OutOfMemory.class, outcome);
  }

  @Test
  void theDefaultClassesLieInOptionOrderFromTheBaseOfAnEightyGibibyteRegion() {
    MultiSlabAllocator ms = build(new Region("all", 0, 80 * GiB), Map.of());
    Map<String, Long> m = ms.extraMetrics();
    assertEquals(28_672L, m.get("class_2MiB_blocks")); // 56 GiB / 2 MiB
    assertEquals(384L, m.get("class_32MiB_blocks")); // 12 GiB / 32 MiB
    assertEquals(32_768L, m.get("class_256KiB_blocks")); // 8 GiB / 256 KiB
    assertEquals(16L, m.get("class_256MiB_blocks")); // 4 GiB / 256 MiB
    List<SegmentLayout> layout = ms.layout();
    assertEquals(List.of("2MiB", "32MiB", "256KiB", "256MiB"), layout.stream().map(SegmentLayout::pool).toList());
    assertEquals(List.of(0L, 56 * GiB, 68 * GiB, 76 * GiB), layout.stream().map(SegmentLayout::addressBytes).toList());
    assertEquals(80 * GiB, ms.freeBytes());
    ms.checkInvariants();
  }

  @Test
  void aRequestGoesToTheSmallestClassWhoseBlockHoldsIt() {
    MultiSlabAllocator ms = build(new Region("all", 0, 80 * GiB), Map.of());
    assertEquals(Extents.single(68 * GiB, 256 * KiB), served(ms.allocate(AllocRequest.of(100 * KiB, Tag.KV))).extents());
    assertEquals(Extents.single(0, 2 * MiB), served(ms.allocate(AllocRequest.of(256 * KiB + 1, Tag.KV))).extents());
    assertEquals(Extents.single(56 * GiB, 32 * MiB), served(ms.allocate(AllocRequest.of(3 * MiB, Tag.KV))).extents());
    assertEquals(
        Extents.single(76 * GiB, 256 * MiB), served(ms.allocate(AllocRequest.of(100 * MiB, Tag.ACTIVATION))).extents());
    assertEquals(0L, ms.extraMetrics().get("fallback_allocations"));
  }

  @Test
  void wholeBlocksAreCountedAsAllocated() {
    MultiSlabAllocator ms = build(new Region("all", 0, 80 * GiB), Map.of());
    AllocOutcome.Allocated a = served(ms.allocate(AllocRequest.of(100 * KiB, Tag.KV)));
    assertEquals(256 * KiB, a.allocatedBytes());
    assertEquals(256 * KiB, ms.stats().allocatedBytes());
    assertEquals(100 * KiB, ms.stats().requestedBytes());
    assertEquals(100 * KiB, ms.extraMetrics().get("class_256KiB_requested_bytes"));
  }

  @Test
  void aFullClassFallsBackToTheNextLargerOne() {
    MultiSlabAllocator ms = small();
    for (int i = 0; i < 8; i++) {
      assertEquals(MiB, served(ms.allocate(AllocRequest.of(512 * KiB, Tag.ACTIVATION))).allocatedBytes());
    }
    AllocOutcome.Allocated ninth = served(ms.allocate(AllocRequest.of(512 * KiB, Tag.ACTIVATION)));
    assertEquals(Extents.single(8 * MiB, 4 * MiB), ninth.extents());
    assertEquals(1L, ms.extraMetrics().get("fallback_allocations"));
    assertEquals(0L, ms.extraMetrics().get("class_1MiB_free_blocks"));
    ms.checkInvariants();
  }

  @Test
  void aSplittableRequestAboveTheLargestBlockTakesSeveralLargestBlocks() {
    MultiSlabAllocator ms = small();
    AllocOutcome.Allocated kv = served(ms.allocate(AllocRequest.of(7 * MiB, Tag.KV)));
    assertEquals(8 * MiB, kv.allocatedBytes());
    assertEquals(Extents.single(8 * MiB, 8 * MiB), kv.extents(), "blocks 0 and 1 of the 4 MiB class, merged");
    ms.checkInvariants();
    ms.free(kv.handle());
    AllocOutcome.OutOfMemory tooMany = refused(ms.allocate(AllocRequest.of(9 * MiB, Tag.KV)));
    assertEquals(OomReason.FRAGMENTATION, tooMany.reason(), "16 MiB free, but only two 4 MiB blocks to split over");
  }

  @Test
  void anUnsplittableRequestAboveTheLargestBlockIsTooLarge() {
    MultiSlabAllocator ms = small();
    assertEquals(OomReason.TOO_LARGE, refused(ms.allocate(AllocRequest.of(4 * MiB + 1, Tag.ACTIVATION))).reason());
    assertEquals(OomReason.NO_MEMORY, refused(ms.allocate(AllocRequest.of(Long.MAX_VALUE, Tag.KV))).reason());
  }

  @Test
  void classSharesAreExactWithoutFormingRegionTimesPercent() {
    for (long bytes : new long[] {0, 99, 100, 12_345, 80 * GiB, Long.MAX_VALUE / 100, Long.MAX_VALUE / 100 + 1, Long.MAX_VALUE}) {
      for (int percent : new int[] {1, 5, 15, 33, 70, 99, 100}) {
        long exact = java.math.BigInteger.valueOf(bytes).multiply(java.math.BigInteger.valueOf(percent)).divide(java.math.BigInteger.valueOf(100)).longValueExact();
        assertEquals(exact, MultiSlabAllocator.percentOf(bytes, percent), bytes + " B × " + percent + " %");
      }
    }
  }

  @Test
  void aRegionAboveLongMaxValueOverAHundredIsSplitWithoutOverflow() {
    // 1 EiB: region × 70 used to overflow in the constructor (ArithmeticException).
    Region exbibyte = new Region("kv", 0, 1L << 60);
    MultiSlabAllocator ms = new MultiSlabAllocator(exbibyte, List.of(new MultiSlabAllocator.SizeClass(1L << 40, 70), new MultiSlabAllocator.SizeClass(1L << 41, 30)));
    assertEquals(OomReason.NO_MEMORY, refused(ms.allocate(AllocRequest.of(Long.MAX_VALUE, Tag.KV))).reason());
    AllocOutcome.Allocated a = served(ms.allocate(AllocRequest.of(3L << 40, Tag.KV)));
    assertEquals(2L << 41, a.allocatedBytes(), "two blocks of the 2 TiB class");
    assertEquals(OomReason.TOO_LARGE, refused(ms.allocate(AllocRequest.of((1L << 41) + 1, Tag.ACTIVATION))).reason());
    ms.checkInvariants();
  }

  @Test
  void theLargestFreeRequestIsALargestBlockOrTheLargestClassTakenTogether() {
    MultiSlabAllocator ms = small();
    assertEquals(8 * MiB, ms.largestFreeBytes(), "two 4 MiB blocks for a splittable request");
    served(ms.allocate(AllocRequest.of(8 * MiB, Tag.KV)));
    assertEquals(MiB, ms.largestFreeBytes(), "only 1 MiB blocks left");
    for (int i = 0; i < 8; i++) {
      served(ms.allocate(AllocRequest.of(1, Tag.KV)));
    }
    assertEquals(0, ms.largestFreeBytes());
    assertEquals(OomReason.NO_MEMORY, refused(ms.allocate(AllocRequest.of(1, Tag.KV))).reason());
  }

  @Test
  void aClassTooSmallForOneBlockHoldsNoneAndItsRequestsFallThrough() {
    // 5 % of 1 GiB is less than one 256 MiB block.
    MultiSlabAllocator ms = build(new Region("kv", 0, GiB), Map.of());
    assertEquals(0L, ms.extraMetrics().get("class_256MiB_blocks"));
    AllocOutcome.OutOfMemory oom = refused(ms.allocate(AllocRequest.of(100 * MiB, Tag.ACTIVATION)));
    assertEquals(OomReason.FRAGMENTATION, oom.reason(), "plenty free, but no block of 100 MiB or more exists");
    assertTrue(ms.layout().stream().noneMatch(s -> s.pool().equals("256MiB")));
    assertEquals("unassigned", ms.layout().get(ms.layout().size() - 1).pool());
    ms.checkInvariants();
  }

  @Test
  void aDoubleFreeAndAForeignHandleAreMisuse() {
    MultiSlabAllocator ms = small();
    AllocOutcome.Allocated a = served(ms.allocate(AllocRequest.of(3 * MiB, Tag.KV)));
    ms.free(a.handle());
    assertThrows(AllocatorMisuseException.class, () -> ms.free(a.handle()));
    assertThrows(AllocatorMisuseException.class, () -> ms.free(7L << 32));
    assertThrows(AllocatorMisuseException.class, () -> ms.free(-1));
  }

  @Test
  void latencyIsTwentyNanosecondsPlusTenPerClassLookedAtAndPerBlock() {
    MultiSlabAllocator ms = small();
    AllocOutcome.Allocated a = served(ms.allocate(AllocRequest.of(2 * MiB, Tag.KV)));
    assertEquals(20 + 10 * (1 + 1), ms.stats().modelledNanos(), "one class looked at, one block");
    ms.free(a.handle());
    assertEquals(40 + 20 + 10, ms.stats().modelledNanos());
  }

  @Test
  void theClassesOptionParsesSizesAndPercentages() {
    assertEquals(
        List.of(new MultiSlabAllocator.SizeClass(2 * MiB, 70), new MultiSlabAllocator.SizeClass(256 * KiB, 30)),
        MultiSlabAllocator.parseClasses(" 2MiB:70 , 256KiB:30"));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"", "2MiB", "2MiB:70:1", "2MiB70", "2MiB:x", "2MiB:0", "2MiB:101", "0:10", "lots:10",
          "2MiB:60,4MiB:50", "2MiB:10,2MiB:20", "2MiB:10,,4MiB:10"})
  void aMalformedClassesOptionIsBadInputNamingTheOption(String value) {
    InputException e =
        assertThrows(InputException.class, () -> build(new Region("kv", 0, GiB), Map.of("classes", value)));
    assertTrue(e.getMessage().contains("classes"), e.getMessage());
  }
}

package kvsim.alloc.multislab;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

  // split=true (Note [Splitting between classes])

  /** As {@link #small()}, splitting between classes: eight 1 MiB blocks, then two 4 MiB blocks. */
  private static MultiSlabAllocator smallSplitting() {
    return build(new Region("kv", 0, 16 * MiB), Map.of("classes", "1MiB:50,4MiB:50", "split", "true"));
  }

  @Test
  void withSplitARequestBetweenClassesTakesBlocksOfTheLargestClassBelowIt() {
    MultiSlabAllocator ms = build(new Region("all", 0, 80 * GiB), Map.of("split", "true"));
    AllocOutcome.Allocated between = served(ms.allocate(AllocRequest.of(3 * MiB, Tag.KV)));
    assertEquals(Extents.single(0, 4 * MiB), between.extents(), "two 2 MiB blocks, not one 32 MiB block");
    assertEquals(4 * MiB, between.allocatedBytes());
    assertEquals(
        Extents.single(68 * GiB, 512 * KiB), served(ms.allocate(AllocRequest.of(300 * KiB, Tag.KV))).extents(), "two 256 KiB blocks");
    assertEquals(Extents.single(56 * GiB, 64 * MiB), served(ms.allocate(AllocRequest.of(33 * MiB, Tag.KV))).extents());
    assertEquals(Extents.single(76 * GiB, 512 * MiB), served(ms.allocate(AllocRequest.of(300 * MiB, Tag.KV))).extents());
    assertEquals(4L, ms.extraMetrics().get("split_allocations"));
    assertEquals(
        Extents.single(68 * GiB + 512 * KiB, 256 * KiB), served(ms.allocate(AllocRequest.of(100 * KiB, Tag.KV))).extents(),
        "below the smallest class: one block");
    assertEquals(Extents.single(4 * MiB, 2 * MiB), served(ms.allocate(AllocRequest.of(2 * MiB, Tag.KV))).extents(), "exactly a class: one block");
    assertEquals(
        Extents.single(56 * GiB + 64 * MiB, 32 * MiB), served(ms.allocate(AllocRequest.of(3 * MiB, Tag.ACTIVATION))).extents(),
        "an unsplittable request takes one block, as without split");
    assertEquals(4L, ms.extraMetrics().get("split_allocations"));
    assertEquals(0L, ms.extraMetrics().get("fallback_allocations"));
    assertEquals(400 * KiB, ms.extraMetrics().get("class_256KiB_requested_bytes"));
    ms.checkInvariants();
  }

  @Test
  void withSplitAShortSmallerClassFallsBackToOneBlockOfTheClassThatHoldsTheRequest() {
    MultiSlabAllocator ms = smallSplitting();
    for (int i = 0; i < 7; i++) {
      served(ms.allocate(AllocRequest.of(MiB, Tag.KV)));
    }
    assertEquals(1L, ms.extraMetrics().get("class_1MiB_free_blocks"));
    AllocOutcome.Allocated a = served(ms.allocate(AllocRequest.of(MiB + MiB / 2, Tag.KV)));
    assertEquals(Extents.single(8 * MiB, 4 * MiB), a.extents(), "one 1 MiB block left: a 4 MiB block instead");
    assertEquals(0L, ms.extraMetrics().get("split_allocations"));
    assertEquals(0L, ms.extraMetrics().get("fallback_allocations"), "the 4 MiB class is the smallest that holds it");
    ms.checkInvariants();
  }

  @Test
  void withSplitARequestOfExactlyAFullClassesBlockSplitsOverTheClassBelow() {
    MultiSlabAllocator ms = smallSplitting();
    served(ms.allocate(AllocRequest.of(4 * MiB, Tag.KV)));
    served(ms.allocate(AllocRequest.of(4 * MiB, Tag.KV)));
    assertEquals(0L, ms.extraMetrics().get("split_allocations"), "exactly a block: one block while there is one");
    assertEquals(4 * MiB, ms.largestFreeBytes(), "four 1 MiB blocks serve up to 4 MiB");
    AllocOutcome.Allocated a = served(ms.allocate(AllocRequest.of(4 * MiB, Tag.KV)));
    assertEquals(Extents.single(0, 4 * MiB), a.extents());
    assertEquals(1L, ms.extraMetrics().get("split_allocations"));
    ms.checkInvariants();
  }

  @Test
  void withSplitTheLargestFreeRequestCountsEachClassUpToTheNextBlock() {
    MultiSlabAllocator ms = smallSplitting();
    assertEquals(8 * MiB, ms.largestFreeBytes());
    served(ms.allocate(AllocRequest.of(8 * MiB, Tag.KV))); // both 4 MiB blocks
    assertEquals(4 * MiB, ms.largestFreeBytes(), "eight 1 MiB blocks, capped at the next class's block");
    AllocOutcome.OutOfMemory oom = refused(ms.allocate(AllocRequest.of(4 * MiB + 1, Tag.KV)));
    assertEquals(OomReason.FRAGMENTATION, oom.reason(), "8 MiB free, but above the largest block only 4 MiB blocks split");
    assertEquals(4 * MiB, oom.largestFreeBytes());
  }

  @Test
  void withSplitAnUnsplittableRequestCannotUseSeveralBlocksAndIsRefusedAsFragmentation() {
    MultiSlabAllocator ms = smallSplitting();
    served(ms.allocate(AllocRequest.of(8 * MiB, Tag.KV))); // both 4 MiB blocks
    assertEquals(4 * MiB, ms.largestFreeBytes(), "as a splittable request");
    assertEquals(2 * MiB, served(ms.allocate(AllocRequest.of(2 * MiB, Tag.KV))).allocatedBytes());
    AllocOutcome.OutOfMemory oom = refused(ms.allocate(AllocRequest.of(2 * MiB, Tag.ACTIVATION)));
    assertEquals(OomReason.FRAGMENTATION, oom.reason(), "six 1 MiB blocks free, none holds 2 MiB whole");
  }

  /**
   * Under split, what succeeds depends only on each class's free-block count, and the requests
   * that succeed are exactly those up to {@link MultiSlabAllocator#largestFreeBytes()}: through a
   * random churn, a request of that size is served (and freed again) and one byte more is refused,
   * as are requests of random sizes below and above it.
   */
  @Test
  void withSplitTheRequestsServedAreExactlyThoseUpToTheLargestFree() {
    Region region = new Region("kv", 4096, 200 * MiB + 12_345);
    MultiSlabAllocator ms = build(region, Map.of("classes", "256KiB:30,1MiB:20,3MiB:30,16MiB:15", "split", "true"));
    java.util.SplittableRandom random = new java.util.SplittableRandom(5);
    java.util.List<Long> live = new java.util.ArrayList<>();
    int probed = 0;
    for (int op = 0; op < 20_000; op++) {
      if (live.isEmpty() || random.nextInt(100) < 55) {
        long size = 1 + random.nextLong(random.nextBoolean() ? 4 * MiB : 40 * MiB);
        if (ms.allocate(new AllocRequest(size, Tag.KV, random.nextInt(4) > 0, 0)) instanceof AllocOutcome.Allocated a) {
          live.add(a.handle());
        }
      } else {
        ms.free(live.remove(random.nextInt(live.size())));
      }
      long largest = ms.largestFreeBytes();
      if (largest > 0) {
        ms.free(served(ms.allocate(AllocRequest.of(largest, Tag.KV))).handle());
        probed++;
        long below = 1 + random.nextLong(largest);
        ms.free(served(ms.allocate(AllocRequest.of(below, Tag.KV))).handle());
      }
      assertEquals(largest, ms.largestFreeBytes(), "a probe and its free changed what is free");
      refused(ms.allocate(AllocRequest.of(largest + 1, Tag.KV)));
      refused(ms.allocate(AllocRequest.of(largest + 1 + random.nextLong(64 * MiB), Tag.KV)));
      if (op % 100 == 0) {
        ms.checkInvariants();
      }
    }
    assertTrue(probed > 15_000 && ms.extraMetrics().get("split_allocations") > 1_000, probed + " probes, " + ms.extraMetrics());
  }

  @Test
  void withoutSplitTheOptionIsNotEchoedAndTheExtraMetricsAreAsBefore() {
    MultiSlabAllocator plain = build(new Region("kv", 0, GiB), Map.of());
    assertFalse(plain.splits());
    assertFalse(plain.extraMetrics().containsKey("split_allocations"));
    AllocatorContext context =
        new AllocatorContext("multi-slab", new Region("kv", 0, GiB), DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of());
    new MultiSlabAllocator(context);
    assertEquals(Map.of("classes", MultiSlabAllocator.DEFAULT_CLASSES), context.effectiveOptions());
    AllocatorContext given =
        new AllocatorContext(
            "multi-slab", new Region("kv", 0, GiB), DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of("split", "false"));
    assertFalse(new MultiSlabAllocator(given).splits());
    assertEquals(false, given.effectiveOptions().get("split"));
  }

  @Test
  void aMalformedSplitOptionIsBadInputNamingTheOption() {
    InputException e = assertThrows(InputException.class, () -> build(new Region("kv", 0, GiB), Map.of("split", "maybe")));
    assertTrue(e.getMessage().contains("split"), e.getMessage());
  }
}

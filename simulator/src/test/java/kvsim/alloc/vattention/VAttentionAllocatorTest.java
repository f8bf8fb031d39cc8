package kvsim.alloc.vattention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
import kvsim.alloc.Calibration;
import kvsim.alloc.Extents;
import kvsim.alloc.LatencyModel;
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

/** The vAttention model's rules as its class comment states them. */
class VAttentionAllocatorTest {
  static final long KiB = Bytes.KiB;
  static final long MiB = Bytes.MiB;
  static final long GiB = Bytes.GiB;
  static final long TiB = Bytes.TiB;

  private static VAttentionAllocator build(Region region, Map<String, String> options) {
    return build(region, options, Calibration.NONE);
  }

  private static VAttentionAllocator build(Region region, Map<String, String> options, Calibration calibration) {
    return new VAttentionAllocator(
        new AllocatorContext("vattention", region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), options, calibration));
  }

  /** 16 MiB at 64 MiB: eight 2 MiB pages. */
  private static VAttentionAllocator small() {
    return new VAttentionAllocator(new Region("kv", 64 * MiB, 16 * MiB), 2 * MiB);
  }

  private static AllocOutcome.Allocated served(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.Allocated.class, outcome);
  }

  private static AllocOutcome.OutOfMemory refused(AllocOutcome outcome) {
    return assertInstanceOf(AllocOutcome.OutOfMemory.class, outcome);
  }

  @Test
  void theDefaultsAreTwoMebibytePagesOverTheWholeRegionAndAVirtualSpaceFromOneTebibyte() {
    VAttentionAllocator va = build(new Region("all", 0, 80 * GiB), Map.of());
    assertEquals(2 * MiB, va.pageBytes());
    assertEquals(40_960, va.pageCount());
    assertEquals(1L << 40, va.virtualBaseBytes());
    Region space = va.virtualSpace().orElseThrow();
    assertEquals(1L << 40, space.baseBytes());
    assertEquals(40_960 * 80 * GiB, space.sizeBytes(), "one reservation of the whole pool per page");
    assertEquals(80 * GiB, va.stats().reservedBytes());
    assertEquals(80 * GiB, va.freeBytes());
    assertEquals(Map.of("pages_mapped", 0L, "pages_unmapped", 0L, "pool_pages", 40_960L), va.extraMetrics());
    va.checkInvariants();
  }

  @Test
  void aRequestMapsCeilSizeOverPagePagesAndCountsThemAsAllocated() {
    VAttentionAllocator va = small();
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(5 * MiB, Tag.KV)));
    assertEquals(6 * MiB, a.allocatedBytes());
    assertEquals(Extents.single(1L << 40, 6 * MiB), a.extents(), "slot 0's range, whole pages");
    assertArrayEquals(new int[] {0, 1, 2}, va.pagesOf(a.handle()));
    assertEquals(6 * MiB, va.stats().allocatedBytes());
    assertEquals(5 * MiB, va.stats().requestedBytes());
    assertEquals(10 * MiB, va.freeBytes());
    assertEquals(3L, va.extraMetrics().get("pages_mapped"));
    va.checkInvariants();
  }

  @Test
  void anUnsplittableRequestIsOneVirtualRangeToo() {
    VAttentionAllocator va = small();
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(7 * MiB, Tag.ACTIVATION)));
    assertEquals(Extents.single(1L << 40, 8 * MiB), a.extents());
    assertEquals(8 * MiB, a.allocatedBytes());
  }

  @Test
  void eachAllocationTakesTheLowestFreeSlotsReservation() {
    VAttentionAllocator va = small();
    long pool = 16 * MiB;
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(MiB, Tag.KV)));
    AllocOutcome.Allocated b = served(va.allocate(AllocRequest.of(MiB, Tag.KV)));
    AllocOutcome.Allocated c = served(va.allocate(AllocRequest.of(MiB, Tag.KV)));
    assertEquals((1L << 40) + pool, b.extents().offsetBytes(0));
    assertEquals((1L << 40) + 2 * pool, c.extents().offsetBytes(0));
    va.free(c.handle());
    va.free(a.handle());
    assertEquals(1L << 40, served(va.allocate(AllocRequest.of(3 * MiB, Tag.KV))).extents().offsetBytes(0), "slot 0, freed last");
    assertEquals((1L << 40) + 2 * pool, served(va.allocate(AllocRequest.of(MiB, Tag.KV))).extents().offsetBytes(0));
    va.checkInvariants();
  }

  @Test
  void theVirtualSpaceStartsAfterARegionThatEndsAboveOneTebibyte() {
    VAttentionAllocator va = new VAttentionAllocator(new Region("kv", TiB + 3, 64 * MiB), 2 * MiB);
    assertEquals(TiB + 66 * MiB, va.virtualBaseBytes(), "the region's end rounded up to a page");
    assertEquals(TiB + 66 * MiB, served(va.allocate(AllocRequest.of(1, Tag.KV))).extents().offsetBytes(0));
  }

  @Test
  void theMostRecentlyUnmappedPageIsMappedNextAndAFreeUnmapsTheLastPageFirst() {
    VAttentionAllocator va = small();
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(6 * MiB, Tag.KV)));
    AllocOutcome.Allocated b = served(va.allocate(AllocRequest.of(MiB, Tag.KV)));
    assertArrayEquals(new int[] {3}, va.pagesOf(b.handle()));
    va.free(a.handle());
    assertArrayEquals(new int[] {0, 1, 2, 4, 5, 6, 7}, va.freePageOrder(), "page 2 unmapped first, page 0 last");
    AllocOutcome.Allocated c = served(va.allocate(AllocRequest.of(4 * MiB, Tag.KV)));
    assertArrayEquals(new int[] {0, 1}, va.pagesOf(c.handle()));
    va.free(b.handle());
    AllocOutcome.Allocated d = served(va.allocate(AllocRequest.of(4 * MiB, Tag.KV)));
    assertArrayEquals(new int[] {3, 2}, va.pagesOf(d.handle()), "not adjacent, not in address order");
    assertEquals(1, d.extents().count());
    assertEquals(4 * MiB, d.extents().sizeBytes(0));
    va.checkInvariants();
  }

  @Test
  void freePagesAnywhereServeARequestOfAllOfThem() {
    VAttentionAllocator va = small();
    long[] handles = new long[8];
    for (int i = 0; i < 8; i++) {
      handles[i] = served(va.allocate(AllocRequest.of(2 * MiB, Tag.KV))).handle();
    }
    for (int i = 0; i < 8; i += 2) {
      va.free(handles[i]);
    }
    assertEquals(8 * MiB, va.largestFreeBytes(), "four free pages, none adjacent, serve 8 MiB");
    AllocOutcome.Allocated all = served(va.allocate(AllocRequest.of(8 * MiB, Tag.ACTIVATION)));
    assertArrayEquals(new int[] {6, 4, 2, 0}, va.pagesOf(all.handle()));
    assertEquals(0, va.freeBytes());
    va.checkInvariants();
  }

  @Test
  void refusalsAreNoMemoryOrTooLargeNeverFragmentation() {
    VAttentionAllocator va = small();
    served(va.allocate(AllocRequest.of(2 * MiB, Tag.KV)));
    AllocOutcome.OutOfMemory short1 = refused(va.allocate(AllocRequest.of(14 * MiB + 1, Tag.KV)));
    assertEquals(new AllocOutcome.OutOfMemory(OomReason.NO_MEMORY, 14 * MiB + 1, 14 * MiB, 14 * MiB), short1);
    assertEquals(OomReason.TOO_LARGE, refused(va.allocate(AllocRequest.of(16 * MiB + 1, Tag.KV))).reason());
    assertEquals(OomReason.TOO_LARGE, refused(va.allocate(AllocRequest.of(Long.MAX_VALUE, Tag.ACTIVATION))).reason());
    assertEquals(14 * MiB, served(va.allocate(AllocRequest.of(14 * MiB, Tag.KV))).allocatedBytes());
    assertEquals(2, va.stats().liveAllocations(), "refusals changed nothing");
    va.checkInvariants();
  }

  @Test
  void theTailShorterThanAPageIsNeverUsed() {
    VAttentionAllocator va = new VAttentionAllocator(new Region("kv", 0, 5 * MiB), 2 * MiB);
    assertEquals(2, va.pageCount());
    assertEquals(4 * MiB, va.freeBytes());
    assertEquals(OomReason.TOO_LARGE, refused(va.allocate(AllocRequest.of(4 * MiB + 1, Tag.KV))).reason());
    List<SegmentLayout> layout = va.layout();
    assertEquals(1, layout.size());
    assertEquals(5 * MiB, layout.get(0).sizeBytes());
    assertEquals(new SegmentLayout.Block(4 * MiB, MiB, 0, SegmentLayout.State.INACTIVE), layout.get(0).blocks().get(2));
  }

  @Test
  void theLayoutShowsEveryPhysicalPageWithItsShareOfTheRequest() {
    VAttentionAllocator va = small();
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(3 * MiB, Tag.KV))); // pages 0, 1
    va.free(served(va.allocate(AllocRequest.of(MiB, Tag.KV))).handle()); // page 2 back on top
    served(va.allocate(AllocRequest.of(5 * MiB, Tag.KV))); // pages 2, 3, 4
    List<SegmentLayout.Block> blocks = va.layout().get(0).blocks();
    assertEquals(8, blocks.size());
    assertEquals(new SegmentLayout.Block(64 * MiB, 2 * MiB, 2 * MiB, SegmentLayout.State.ACTIVE_ALLOCATED), blocks.get(0));
    assertEquals(new SegmentLayout.Block(66 * MiB, 2 * MiB, MiB, SegmentLayout.State.ACTIVE_ALLOCATED), blocks.get(1));
    assertEquals(MiB, blocks.get(4).requestedBytes(), "the last page of 5 MiB holds its tail");
    assertEquals(new SegmentLayout.Block(74 * MiB, 2 * MiB, 0, SegmentLayout.State.INACTIVE), blocks.get(5));
    assertEquals(Extents.single(1L << 40, 4 * MiB), va.extentsOf(a.handle()));
  }

  @Test
  void aFreedHandleIsNotLiveEvenWhenItsSlotIsReused() {
    VAttentionAllocator va = small();
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(MiB, Tag.KV)));
    va.free(a.handle());
    assertThrows(AllocatorMisuseException.class, () -> va.free(a.handle()));
    AllocOutcome.Allocated b = served(va.allocate(AllocRequest.of(MiB, Tag.KV)));
    assertEquals(a.extents(), b.extents(), "the same slot");
    assertThrows(AllocatorMisuseException.class, () -> va.free(a.handle()), "a stale handle of the slot");
    assertThrows(AllocatorMisuseException.class, () -> va.extentsOf(a.handle()));
    assertThrows(AllocatorMisuseException.class, () -> va.free(1L << 31));
    assertThrows(AllocatorMisuseException.class, () -> va.free(-1));
    va.free(b.handle());
    va.checkInvariants();
  }

  @Test
  void mapAndUnmapAreChargedPerPageAndCounted() {
    VAttentionAllocator va = small();
    AllocOutcome.Allocated a = served(va.allocate(AllocRequest.of(5 * MiB, Tag.KV)));
    long mapped = 20 + 3 * (10 + 59_000); // 59 µs a page mapped
    assertEquals(mapped, va.stats().modelledNanos());
    va.free(a.handle());
    long unmapped = 20 + 3 * (10 + 40_000); // 40 µs a page unmapped
    assertEquals(mapped + unmapped, va.stats().modelledNanos());
    refused(va.allocate(AllocRequest.of(GiB, Tag.KV)));
    assertEquals(mapped + unmapped + 20, va.stats().modelledNanos());
    assertEquals(3L, va.extraMetrics().get("pages_mapped"));
    assertEquals(3L, va.extraMetrics().get("pages_unmapped"));
  }

  @Test
  void aCalibrationReplacesTheMapAndUnmapCostsAndNeverWrapsModelledTime() {
    Region region = new Region("kv", 0, 16 * MiB);
    Calibration cheap =
        new Calibration("h100.json", "test", null, null, Map.of("vattention", Map.of("device_alloc_ns", 3_000L, "device_free_ns", 1_000L)));
    VAttentionAllocator va = build(region, Map.of(), cheap);
    assertEquals(new LatencyModel(20, 10, 20, 10, 3_000, 1_000), va.latency());
    va.free(served(va.allocate(AllocRequest.of(4 * MiB, Tag.KV))).handle());
    assertEquals(20 + 2 * 3_010 + 20 + 2 * 1_010, va.stats().modelledNanos());
    Calibration absurd =
        new Calibration("x.json", "test", null, null, Map.of("vattention", Map.of("device_alloc_ns", Long.MAX_VALUE / 2)));
    VAttentionAllocator slow = build(region, Map.of(), absurd);
    served(slow.allocate(AllocRequest.of(16 * MiB, Tag.KV)));
    assertEquals(Long.MAX_VALUE, slow.stats().modelledNanos());
  }

  @ParameterizedTest
  @ValueSource(strings = {"64KiB", "128KiB", "256KiB", "512KiB", "1MiB", "2MiB"})
  void everyPowerOfTwoPageSizeFromSixtyFourKibibytesToTwoMebibytesIsAccepted(String pageSize) {
    VAttentionAllocator va = build(new Region("kv", 0, 64 * MiB), Map.of("page-size", pageSize));
    long page = Bytes.parse(pageSize);
    assertEquals(page, va.pageBytes());
    assertEquals(page, served(va.allocate(AllocRequest.of(1, Tag.KV))).allocatedBytes());
  }

  @ParameterizedTest
  @ValueSource(strings = {"32KiB", "4MiB", "96KiB", "3MiB", "1000"})
  void otherPageSizesAreBadInputNamingTheOption(String pageSize) {
    InputException e = assertThrows(InputException.class, () -> build(new Region("kv", 0, 64 * MiB), Map.of("page-size", pageSize)));
    assertTrue(e.getMessage().contains("page-size") && e.getMessage().contains("power of two"), e.getMessage());
  }

  @Test
  void aRegionWhoseVirtualSpaceWouldPassTwoToTheSixtyThirdIsRefused() {
    assertEquals(524_288, build(new Region("kv", 0, TiB), Map.of()).pageCount(), "1 TiB of 2 MiB pages fits");
    InputException small = assertThrows(InputException.class, () -> build(new Region("kv", 0, TiB), Map.of("page-size", "64KiB")));
    assertTrue(small.getMessage().contains("page-size") && small.getMessage().contains("virtual space"), small.getMessage());
    InputException huge = assertThrows(InputException.class, () -> build(new Region("kv", 0, 8 * TiB), Map.of()));
    assertTrue(huge.getMessage().startsWith("vattention: ") && huge.getMessage().contains("larger page size"), huge.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new VAttentionAllocator(new Region("kv", 0, 8 * TiB), 2 * MiB));
  }

  @Test
  void aRegionSmallerThanAPageRefusesEveryRequestAsTooLarge() {
    VAttentionAllocator va = new VAttentionAllocator(new Region("kv", 0, MiB), 2 * MiB);
    assertEquals(0, va.pageCount());
    assertEquals(OomReason.TOO_LARGE, refused(va.allocate(AllocRequest.of(1, Tag.KV))).reason());
    va.checkInvariants();
  }
}

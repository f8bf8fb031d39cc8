package kvsim.alloc.paged;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.OomReason;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import org.junit.jupiter.api.Test;

/** The L1 {@code paged} allocator: vLLM's block pool serving byte requests as pages. */
class PagedAllocatorTest {
  private static final long PAGE = 8 * Bytes.MiB;

  private static PagedAllocator small(int pages) {
    return new PagedAllocator(new Region("kv", 0, pages * PAGE), PAGE);
  }

  private static AllocOutcome.Allocated kv(PagedAllocator a, long bytes) {
    AllocOutcome o = a.allocate(AllocRequest.of(bytes, Tag.KV));
    a.checkInvariants();
    return assertInstanceOf(AllocOutcome.Allocated.class, o);
  }

  @Test
  void theRegistryBuildsEightMebibytePagesForLlama2SevenBByDefault() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    Region region = MemoryPlan.whole(device).testedRegion();
    AllocatorContext ctx = new AllocatorContext("paged", region, device, ModelPreset.defaultModel(), Map.of());
    Allocator a = AllocatorRegistry.create(ctx);
    PagedAllocator p = assertInstanceOf(PagedAllocator.class, a);
    assertEquals(16 * 512 * Bytes.KiB, p.pageBytes());
    assertEquals(80 * Bytes.GiB / (8 * Bytes.MiB), p.numPages());
    assertEquals((p.numPages() - 1) * p.pageBytes(), a.freeBytes(), "the null page is never free");
    assertEquals(16L, ctx.effectiveOptions().get("block-tokens"));
  }

  @Test
  void theBlockTokensOptionScalesThePage() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    Region region = new Region("kv", 0, Bytes.GiB);
    AllocatorContext ctx =
        new AllocatorContext("paged", region, device, ModelPreset.parse("llama-3-8b"), Map.of("block-tokens", "32"));
    PagedAllocator p = (PagedAllocator) AllocatorRegistry.create(ctx);
    assertEquals(32 * ModelPreset.parse("llama-3-8b").kvBytesPerToken(), p.pageBytes());
  }

  @Test
  void aZeroBlockTokensOrAnUnknownOptionIsBadInput() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    Region region = new Region("kv", 0, Bytes.GiB);
    assertThrows(
        InputException.class,
        () ->
            AllocatorRegistry.create(
                new AllocatorContext("paged", region, device, ModelPreset.defaultModel(), Map.of("block-tokens", "0"))));
    assertThrows(
        InputException.class,
        () ->
            AllocatorRegistry.create(
                new AllocatorContext("paged", region, device, ModelPreset.defaultModel(), Map.of("block-size", "4"))));
  }

  @Test
  void aSplittableRequestTakesCeilingOfSizeOverPagePagesFromTheQueueHead() {
    PagedAllocator a = small(9);
    assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, a.freeQueue(), "page 0 is the null block");
    AllocOutcome.Allocated x = kv(a, 2 * PAGE + 1);
    assertArrayEquals(new int[] {1, 2, 3}, a.blockTable(x.handle()));
    assertEquals(3 * PAGE, x.allocatedBytes());
    assertEquals(1, x.extents().count(), "adjacent pages merge into one extent");
    assertEquals(PAGE, x.extents().offsetBytes(0));
    assertEquals(2 * PAGE + 1, a.stats().requestedBytes());
    assertEquals(5 * PAGE, a.freeBytes());
  }

  @Test
  void aFreeAppendsThePagesToTheTailLastPageFirst() {
    PagedAllocator a = small(9);
    AllocOutcome.Allocated x = kv(a, 3 * PAGE);
    AllocOutcome.Allocated y = kv(a, PAGE);
    a.free(x.handle());
    a.checkInvariants();
    assertArrayEquals(new int[] {5, 6, 7, 8, 3, 2, 1}, a.freeQueue());
    AllocOutcome.Allocated z = kv(a, 6 * PAGE);
    assertArrayEquals(new int[] {5, 6, 7, 8, 3, 2}, a.blockTable(z.handle()));
    assertEquals(3, z.extents().count(), "pages 5-8, 3 and 2 are three extents");
    a.free(y.handle());
    assertArrayEquals(new int[] {1, 4}, a.freeQueue());
  }

  @Test
  void anUnsplittableRequestIsTooLargeWhateverItsSize() {
    PagedAllocator a = small(9);
    AllocOutcome o = a.allocate(AllocRequest.of(1024, Tag.ACTIVATION));
    AllocOutcome.OutOfMemory oom = assertInstanceOf(AllocOutcome.OutOfMemory.class, o);
    assertEquals(OomReason.TOO_LARGE, oom.reason());
    assertEquals(8 * PAGE, a.freeBytes());
  }

  /** The sizes of the bug report: the page count wrapped around (one 8 MiB page, or an exception). */
  @Test
  void sizesNearTwoToTheSixtyThirdAreTooLargeOnTheDefaultDevice() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    Region region = MemoryPlan.whole(device).testedRegion();
    PagedAllocator a =
        (PagedAllocator) AllocatorRegistry.create(new AllocatorContext("paged", region, device, ModelPreset.defaultModel(), Map.of()));
    kv(a, 3 * PAGE);
    long freeBefore = a.freeBytes();
    int[] queueBefore = a.freeQueue();
    for (long size : new long[] {9_223_372_036_854_775_000L, 9_223_372_036_846_387_201L, Long.MAX_VALUE}) {
      AllocOutcome.OutOfMemory oom = assertInstanceOf(AllocOutcome.OutOfMemory.class, a.allocate(AllocRequest.of(size, Tag.KV)), "size " + size);
      assertEquals(OomReason.TOO_LARGE, oom.reason(), "size " + size);
      assertEquals(size, oom.requestedBytes());
      assertEquals(freeBefore, oom.freeBytes());
      a.checkInvariants();
    }
    assertEquals(3 * PAGE, a.stats().allocatedBytes());
    assertEquals(1, a.stats().liveAllocations());
    assertArrayEquals(queueBefore, a.freeQueue());
  }

  @Test
  void aRequestOfTheWholeRegionIsNoMemoryAndOneByteMoreIsTooLarge() {
    PagedAllocator a = small(9);
    assertEquals(OomReason.NO_MEMORY, assertInstanceOf(AllocOutcome.OutOfMemory.class, a.allocate(AllocRequest.of(9 * PAGE, Tag.KV))).reason());
    assertEquals(OomReason.TOO_LARGE, assertInstanceOf(AllocOutcome.OutOfMemory.class, a.allocate(AllocRequest.of(9 * PAGE + 1, Tag.KV))).reason());
    assertEquals(8 * PAGE, kv(a, 8 * PAGE).allocatedBytes(), "every page but the null page");
  }

  @Test
  void aRequestBeyondTheFreePagesIsNoMemoryAndChangesNothing() {
    PagedAllocator a = small(9);
    kv(a, 5 * PAGE);
    int[] before = a.freeQueue();
    AllocOutcome o = a.allocate(AllocRequest.of(3 * PAGE + 1, Tag.KV));
    AllocOutcome.OutOfMemory oom = assertInstanceOf(AllocOutcome.OutOfMemory.class, o);
    assertEquals(OomReason.NO_MEMORY, oom.reason());
    assertEquals(3 * PAGE, oom.freeBytes());
    assertArrayEquals(before, a.freeQueue());
    a.checkInvariants();
  }

  @Test
  void theLargestFreeRequestIsEveryFreePage() {
    PagedAllocator a = small(9);
    AllocOutcome.Allocated x = kv(a, PAGE);
    kv(a, PAGE);
    a.free(x.handle());
    assertEquals(a.freeBytes(), a.largestFreeBytes());
    assertEquals(7 * PAGE, a.largestFreeBytes());
    kv(a, 7 * PAGE);
    assertEquals(0, a.freeBytes());
  }

  @Test
  void freeingAHandleTwiceIsMisuse() {
    PagedAllocator a = small(9);
    AllocOutcome.Allocated x = kv(a, PAGE);
    a.free(x.handle());
    assertThrows(AllocatorMisuseException.class, () -> a.free(x.handle()));
    assertThrows(AllocatorMisuseException.class, () -> a.free(0));
  }

  @Test
  void randomChurnKeepsEveryInvariantAndBalancesToZero() {
    SplittableRandom rng = new SplittableRandom(42);
    PagedAllocator a = small(257);
    List<Long> live = new ArrayList<>();
    for (int step = 0; step < 20_000; step++) {
      if (live.isEmpty() || rng.nextInt(100) < 55) {
        long size = 1 + rng.nextLong(12 * PAGE);
        AllocOutcome o = a.allocate(AllocRequest.of(size, Tag.KV));
        if (o instanceof AllocOutcome.Allocated x) {
          live.add(x.handle());
          assertEquals(x.allocatedBytes(), x.extents().totalBytes());
        } else {
          assertTrue(Bytes.ceilDiv(size, PAGE) * PAGE > a.freeBytes());
        }
      } else {
        a.free(live.remove(rng.nextInt(live.size())));
      }
      a.checkInvariants();
    }
    for (long h : live) {
      a.free(h);
    }
    a.checkInvariants();
    assertEquals(0, a.stats().allocatedBytes());
    assertEquals(0, a.stats().requestedBytes());
    assertEquals(256 * PAGE, a.freeBytes());
    assertFalse(a.layout().isEmpty());
  }
}

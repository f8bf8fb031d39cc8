package kvsim.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.stream.Stream;
import kvsim.core.Bytes;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CheckedAllocator;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every registered model hands out memory of the shape its registry entry declares ({@link
 * Capability}), so that a caller choosing a model by capability gets what it asked for. Each model
 * runs with its default options over a region that does not start at address 0: the contract
 * test's 4 GiB for the churns, 16 GiB for the two-block request (large enough for every class of
 * the default multi-slab to hold several blocks, the largest included).
 *
 * <ul>
 *   <li>{@link Capability#CONTIGUOUS}: through a random churn, every allocation is one extent, the
 *       size the model says it allocated, and {@link Allocator#extentsOf} agrees.
 *   <li>{@link Capability#BLOCK}: every extent of every live allocation is a run of whole blocks of
 *       the model's layout, all blocks of one size; and when only non-adjacent blocks are free, a
 *       splittable request of two blocks is served with two extents.
 *   <li>{@link Capability#VIRTUAL}: a model has a virtual space apart from its region exactly when
 *       it declares the capability; every extent lies in that space and is a whole number of the
 *       pages its layout shows in the region; and when only non-adjacent pages are free, an
 *       unsplittable request of two pages is served with one extent.
 * </ul>
 */
class AllocatorCapabilityTest {
  static final Region REGION = new Region("kv", Bytes.GiB, 16 * Bytes.GiB);

  static Stream<Named<AllocatorRegistry.Entry>> models() {
    return AllocatorContractTest.models();
  }

  static Stream<Named<AllocatorRegistry.Entry>> contiguousModels() {
    return models().filter(n -> n.getPayload().capabilities().contains(Capability.CONTIGUOUS));
  }

  static Stream<Named<AllocatorRegistry.Entry>> blockModels() {
    return models().filter(n -> n.getPayload().capabilities().contains(Capability.BLOCK));
  }

  static Stream<Named<AllocatorRegistry.Entry>> virtualModels() {
    return models().filter(n -> n.getPayload().capabilities().contains(Capability.VIRTUAL));
  }

  private static CheckedAllocator checked(AllocatorRegistry.Entry entry, Region region) {
    return new CheckedAllocator(AllocatorContractTest.build(entry, region, Map.of()), region);
  }

  private static AllocRequest splittable(long sizeBytes) {
    return new AllocRequest(sizeBytes, Tag.KV, true, 0);
  }

  /**
   * Random churn with the contract test's sizes, over its 4 GiB region: 60 % requests, splittable always or half of the
   * time, 40 % frees; calls {@code onAllocated} on each success.
   */
  private static void churn(
      CheckedAllocator model, long seed, int operations, boolean alwaysSplittable, Consumer<AllocOutcome.Allocated> onAllocated) {
    SplittableRandom random = new SplittableRandom(seed);
    for (int op = 0; op < operations; op++) {
      if (model.liveHandles().isEmpty() || random.nextInt(100) < 60) {
        long size = AllocatorContractTest.size(random, AllocatorContractTest.REGION.sizeBytes());
        AllocOutcome o = model.allocate(new AllocRequest(size, Tag.KV, alwaysSplittable || random.nextBoolean(), 0));
        if (o instanceof AllocOutcome.Allocated a) {
          onAllocated.accept(a);
        }
      } else {
        model.freeAt(random.nextInt(model.liveHandles().size()));
      }
    }
  }

  @ParameterizedTest
  @MethodSource("models")
  void everyModelDeclaresExactlyOneOfContiguousAndBlock(AllocatorRegistry.Entry entry) {
    boolean contiguous = entry.capabilities().contains(Capability.CONTIGUOUS);
    assertNotEquals(contiguous, entry.capabilities().contains(Capability.BLOCK), entry.capabilities().toString());
    assertTrue(!entry.capabilities().contains(Capability.VIRTUAL) || contiguous, "VIRTUAL implies CONTIGUOUS");
    assertEquals(entry.capabilities().isEmpty(), entry.capabilityLabels().isEmpty());
  }

  @ParameterizedTest
  @MethodSource("contiguousModels")
  void aContiguousModelGivesEveryAllocationOneExtent(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry, AllocatorContractTest.REGION);
    int[] served = new int[1];
    churn(model, 11L, 3_000, false, a -> {
      served[0]++;
      assertEquals(1, a.extents().count(), () -> entry.name() + " gave " + a.extents());
      assertEquals(a.allocatedBytes(), a.extents().sizeBytes(0), () -> entry.name() + " gave " + a.extents());
      assertEquals(a.extents(), model.allocator().extentsOf(a.handle()));
    });
    assertTrue(served[0] > 500, "only " + served[0] + " requests served");
    for (long h : model.liveHandles()) {
      assertEquals(1, model.allocator().extentsOf(h).count());
    }
  }

  @ParameterizedTest
  @MethodSource("blockModels")
  void aBlockModelGivesWholeBlocksThroughAChurn(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry, AllocatorContractTest.REGION);
    int checkedLive = 0;
    for (int round = 0; round < 30; round++) {
      churn(model, 11L + round, 100, true, a -> {});
      assertWholeBlocks(entry.name(), model);
      checkedLive += model.liveHandles().size();
    }
    assertTrue(checkedLive > 100, "too few live allocations checked: " + checkedLive);
  }

  @ParameterizedTest
  @MethodSource("blockModels")
  void aBlockModelServesATwoBlockRequestFromNonAdjacentBlocks(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry, REGION);
    long block = largestRepeatedBlockBytes(model.allocator().layout());
    // Fill with one-block requests, then free every other one: only non-adjacent blocks are free.
    while (model.allocate(splittable(block)).succeeded()) {
      assertTrue(model.liveHandles().size() <= REGION.sizeBytes() / block, "more blocks than fit");
    }
    int filled = model.liveHandles().size();
    assertTrue(filled >= 3, entry.name() + ": only " + filled + " blocks of " + block + " B");
    List<Long> everyOther = new ArrayList<>();
    for (int i = 0; i < filled; i += 2) {
      everyOther.add(model.liveHandles().get(i));
    }
    everyOther.forEach(model::free);
    AllocOutcome.Allocated a = assertInstanceOf(AllocOutcome.Allocated.class, model.allocate(splittable(2 * block)));
    assertEquals(2, a.extents().count(), entry.name() + " gave " + a.extents());
    assertEquals(block, a.extents().sizeBytes(0));
    assertEquals(block, a.extents().sizeBytes(1));
    assertWholeBlocks(entry.name(), model);
  }

  @ParameterizedTest
  @MethodSource("models")
  void aModelHasAVirtualSpaceApartFromItsRegionExactlyWhenItDeclaresVirtual(AllocatorRegistry.Entry entry) {
    Allocator a = AllocatorContractTest.build(entry, REGION, Map.of());
    assertEquals(entry.capabilities().contains(Capability.VIRTUAL), a.virtualSpace().isPresent(), entry.name());
    a.virtualSpace().ifPresent(space -> {
      assertTrue(space.endBytes() <= REGION.baseBytes() || space.baseBytes() >= REGION.endBytes(), space + " overlaps " + REGION);
      assertTrue(space.sizeBytes() >= a.freeBytes(), "the virtual space cannot hold one range of every free byte: " + space);
    });
  }

  @ParameterizedTest
  @MethodSource("virtualModels")
  void aVirtualModelGivesOneRangeInItsVirtualSpaceOfWholePages(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry, AllocatorContractTest.REGION);
    Region space = model.allocator().virtualSpace().orElseThrow();
    long page = largestRepeatedBlockBytes(model.allocator().layout());
    int[] served = new int[1];
    churn(model, 13L, 3_000, false, a -> {
      served[0]++;
      assertTrue(space.contains(a.extents().offsetBytes(0), a.extents().sizeBytes(0)), a.extents() + " outside " + space);
      assertEquals(0, a.extents().sizeBytes(0) % page, () -> a.extents() + " is not whole pages of " + page + " B");
    });
    assertTrue(served[0] > 500, "only " + served[0] + " requests served");
  }

  @ParameterizedTest
  @MethodSource("virtualModels")
  void aVirtualModelServesOneRangeFromNonAdjacentPages(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry, REGION);
    long page = largestRepeatedBlockBytes(model.allocator().layout());
    AllocRequest onePage = new AllocRequest(page, Tag.ACTIVATION, false, 0);
    while (model.allocate(onePage).succeeded()) {
      assertTrue(model.liveHandles().size() <= REGION.sizeBytes() / page, "more pages than fit");
    }
    int filled = model.liveHandles().size();
    List<Long> everyOther = new ArrayList<>();
    for (int i = 0; i < filled; i += 2) {
      everyOther.add(model.liveHandles().get(i));
    }
    everyOther.forEach(model::free);
    SegmentLayout.Block previous = null;
    for (SegmentLayout s : model.allocator().layout()) {
      for (SegmentLayout.Block b : s.blocks()) {
        boolean bothFree = previous != null && previous.state() == SegmentLayout.State.INACTIVE && b.state() == SegmentLayout.State.INACTIVE
            && previous.sizeBytes() == page && b.sizeBytes() == page && previous.addressBytes() + page == b.addressBytes();
        assertTrue(!bothFree, entry.name() + ": two adjacent free pages at " + previous);
        previous = b;
      }
    }
    AllocOutcome.Allocated a =
        assertInstanceOf(AllocOutcome.Allocated.class, model.allocate(new AllocRequest(2 * page, Tag.ACTIVATION, false, 0)));
    assertEquals(1, a.extents().count(), entry.name() + " gave " + a.extents());
    assertEquals(2 * page, a.extents().sizeBytes(0));
  }

  /** The block size of the layout's largest class: the largest size that at least two blocks have. */
  private static long largestRepeatedBlockBytes(List<SegmentLayout> layout) {
    Map<Long, Integer> count = new HashMap<>();
    long largest = 0;
    for (SegmentLayout s : layout) {
      for (SegmentLayout.Block b : s.blocks()) {
        if (count.merge(b.sizeBytes(), 1, Integer::sum) == 2) {
          largest = Math.max(largest, b.sizeBytes());
        }
      }
    }
    assertTrue(largest > 0, "the layout has no two blocks of one size");
    return largest;
  }

  /**
   * Checks that each extent of each live allocation starts at an allocated layout block and is
   * tiled by allocated blocks of one size, and that the allocated blocks of a segment share a size.
   */
  private static void assertWholeBlocks(String name, CheckedAllocator model) {
    TreeMap<Long, SegmentLayout.Block> allocated = new TreeMap<>();
    for (SegmentLayout s : model.allocator().layout()) {
      long size = -1;
      for (SegmentLayout.Block b : s.blocks()) {
        if (b.state() == SegmentLayout.State.ACTIVE_ALLOCATED) {
          assertTrue(size < 0 || size == b.sizeBytes(), name + ": blocks of " + size + " and " + b.sizeBytes() + " B in one segment");
          size = b.sizeBytes();
          allocated.put(b.addressBytes(), b);
        }
      }
    }
    for (long h : model.liveHandles()) {
      Extents e = model.allocator().extentsOf(h);
      long blockBytes = -1;
      for (int i = 0; i < e.count(); i++) {
        long end = e.offsetBytes(i) + e.sizeBytes(i);
        for (long at = e.offsetBytes(i); at < end; ) {
          SegmentLayout.Block b = allocated.get(at);
          assertNotNull(b, name + ": extent " + e + " does not start or continue at an allocated block (0x" + Long.toHexString(at) + ")");
          assertTrue(blockBytes < 0 || blockBytes == b.sizeBytes(), name + ": one allocation holds blocks of two sizes: " + e);
          blockBytes = b.sizeBytes();
          at += b.sizeBytes();
          assertTrue(at <= end, name + ": extent " + e + " ends inside a block");
        }
      }
    }
  }
}

package kvsim.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.stream.Stream;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CheckedAllocator;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The {@link Allocator} contract, for every model in the registry: models added later are covered
 * without touching this class. Each model runs with its default options over a 4 GiB region that
 * does not start at address 0, through {@link CheckedAllocator}, which checks the ledger of live
 * extents, the gauge relations and the model's invariants after every event.
 */
class AllocatorContractTest {
  static final Region REGION = new Region("kv", Bytes.GiB, 4 * Bytes.GiB);

  static Stream<Named<AllocatorRegistry.Entry>> models() {
    return AllocatorRegistry.entries().stream().map(e -> Named.of(e.name(), e));
  }

  static Allocator build(AllocatorRegistry.Entry entry, Region region, Map<String, String> options) {
    return AllocatorRegistry.create(
        new AllocatorContext(entry.name(), region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), options));
  }

  static CheckedAllocator checked(AllocatorRegistry.Entry entry) {
    return new CheckedAllocator(build(entry, REGION, Map.of()), REGION);
  }

  /**
   * Random churn: 60 % requests (sizes from bytes to a quarter of the region, a third of them not
   * splittable), 40 % frees of a random live allocation. Demand outgrows the region, so refusals
   * happen. Returns every outcome in order.
   */
  static List<AllocOutcome> churn(CheckedAllocator model, long seed, int operations) {
    SplittableRandom random = new SplittableRandom(seed);
    List<AllocOutcome> outcomes = new ArrayList<>();
    for (int op = 0; op < operations; op++) {
      if (model.liveHandles().isEmpty() || random.nextInt(100) < 60) {
        Tag tag = random.nextInt(3) == 0 ? Tag.ACTIVATION : Tag.KV;
        outcomes.add(model.allocate(AllocRequest.of(size(random, REGION.sizeBytes()), tag)));
      } else {
        model.freeAt(random.nextInt(model.liveHandles().size()));
      }
    }
    return outcomes;
  }

  static long size(SplittableRandom random, long regionBytes) {
    int bucket = random.nextInt(100);
    if (bucket < 40) {
      return 1 + random.nextLong(64 * Bytes.KiB);
    }
    if (bucket < 75) {
      return 64 * Bytes.KiB + random.nextLong(4 * Bytes.MiB);
    }
    if (bucket < 95) {
      return 4 * Bytes.MiB + random.nextLong(60 * Bytes.MiB);
    }
    return 64 * Bytes.MiB + random.nextLong(regionBytes / 4);
  }

  @ParameterizedTest
  @MethodSource("models")
  void bytesBalanceToZeroAfterEveryAllocationIsFreed(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry);
    long freeAtStart = model.allocator().freeBytes();
    churn(model, 1L, 3_000);
    assertTrue(model.allocations() > 500 && model.refusals() > 50,
        "the churn should both serve and refuse: " + model.allocations() + " served, " + model.refusals() + " refused");
    model.freeAll();
    Allocator a = model.allocator();
    assertEquals(0, a.stats().allocatedBytes());
    assertEquals(0, a.stats().requestedBytes());
    assertEquals(0, a.stats().liveAllocations());
    assertEquals(freeAtStart, a.freeBytes(), "free bytes after every free, against a fresh model");
  }

  @ParameterizedTest
  @MethodSource("models")
  void liveAllocationsNeverOverlapAndStayInsideTheRegionWhenHolesAreRefilled(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry);
    // Fill with 2 MiB requests until refused, free every other one, then refill the holes with
    // smaller and larger requests: the ledger rejects any extent that lands on a live one.
    while (model.allocate(AllocRequest.of(2 * Bytes.MiB, Tag.KV)).succeeded()) {
      assertTrue(model.liveHandles().size() <= REGION.sizeBytes() / (2 * Bytes.MiB), "more 2 MiB allocations than fit");
    }
    int filled = model.liveHandles().size();
    assertTrue(filled > 0, "not one 2 MiB request was served");
    List<Long> everyOther = new ArrayList<>();
    for (int i = 0; i < filled; i += 2) {
      everyOther.add(model.liveHandles().get(i));
    }
    everyOther.forEach(model::free);
    for (long size : new long[] {300 * Bytes.KiB, Bytes.MiB, 2 * Bytes.MiB, 3 * Bytes.MiB}) {
      for (int i = 0; i < filled / 4; i++) {
        model.allocate(AllocRequest.of(size, i % 2 == 0 ? Tag.KV : Tag.ACTIVATION));
      }
    }
    assertTrue(model.liveHandles().size() > filled / 2, "the holes were not refilled at all");
  }

  @ParameterizedTest
  @MethodSource("models")
  void gaugesKeepTheSpiRelationsThroughChurnOnAFreshSeed(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry);
    List<AllocOutcome> outcomes = churn(model, 77L, 2_000);
    assertEquals(model.allocations() + model.refusals(), outcomes.size());
    Allocator a = model.allocator();
    assertTrue(a.stats().modelledNanos() > 0, "no modelled time after " + outcomes.size() + " requests");
  }

  @ParameterizedTest
  @MethodSource("models")
  void aRequestLargerThanTheRegionIsReportedAsOutOfMemoryNotThrown(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry);
    churn(model, 5L, 200); // not empty
    for (long size : new long[] {REGION.sizeBytes() + 1, 16 * REGION.sizeBytes()}) {
      for (boolean splittable : new boolean[] {true, false}) {
        AllocOutcome outcome = model.allocate(new AllocRequest(size, Tag.KV, splittable, 0));
        AllocOutcome.OutOfMemory oom = assertInstanceOf(AllocOutcome.OutOfMemory.class, outcome);
        assertNotEquals(OomReason.FRAGMENTATION, oom.reason(), "more than the region cannot be fragmentation");
        assertEquals(size, oom.requestedBytes());
      }
    }
  }

  @ParameterizedTest
  @MethodSource("models")
  void freeingAHandleThatIsNotLiveThrows(AllocatorRegistry.Entry entry) {
    Allocator a = build(entry, REGION, Map.of());
    assertThrows(AllocatorMisuseException.class, () -> a.free(-1));
    assertThrows(AllocatorMisuseException.class, () -> a.free(Long.MIN_VALUE));
    AllocOutcome.Allocated first = assertInstanceOf(AllocOutcome.Allocated.class, a.allocate(AllocRequest.of(Bytes.MiB, Tag.KV)));
    AllocOutcome.Allocated second = assertInstanceOf(AllocOutcome.Allocated.class, a.allocate(AllocRequest.of(Bytes.MiB, Tag.KV)));
    a.free(first.handle());
    assertThrows(AllocatorMisuseException.class, () -> a.free(first.handle()), "double free");
    assertEquals(1, a.stats().liveAllocations(), "the refused double free changed the live count");
    a.free(second.handle());
    a.checkInvariants();
    assertEquals(0, a.stats().allocatedBytes());
  }

  @ParameterizedTest
  @MethodSource("models")
  void aSharedGaugeThatDriftsFromTheModelsOwnStructuresIsAnInvariantViolation(AllocatorRegistry.Entry entry) {
    // Each drift moves one gauge (reserved, allocated, requested, live) away from the walk.
    List<Consumer<AllocatorStats>> drifts =
        List.of(
            s -> s.reserve(512),
            s -> s.onAlloc(0, 512),
            s -> s.onAlloc(1, 0),
            s -> s.onFree(0, 0));
    for (Consumer<AllocatorStats> drift : drifts) {
      Allocator a = build(entry, REGION, Map.of());
      assertInstanceOf(AllocOutcome.Allocated.class, a.allocate(AllocRequest.of(Bytes.MiB, Tag.KV)));
      a.checkInvariants();
      drift.accept(a.stats());
      assertThrows(InvariantViolation.class, a::checkInvariants);
    }
  }

  @ParameterizedTest
  @MethodSource("models")
  void theSameSeedGivesTheSameOutcomeSequence(AllocatorRegistry.Entry entry) {
    CheckedAllocator one = checked(entry);
    CheckedAllocator two = checked(entry);
    List<AllocOutcome> first = churn(one, 4242L, 1_500);
    List<AllocOutcome> second = churn(two, 4242L, 1_500);
    assertEquals(first, second);
    assertEquals(one.allocator().stats().modelledNanos(), two.allocator().stats().modelledNanos());
    assertEquals(one.allocator().layout(), two.allocator().layout());
    assertEquals(one.allocator().extraMetrics(), two.allocator().extraMetrics());
    List<AllocOutcome> otherSeed = churn(checked(entry), 4243L, 1_500);
    assertNotEquals(first, otherSeed, "the outcomes do not depend on the requests at all");
  }

  @ParameterizedTest
  @MethodSource("models")
  void anUnknownOptionIsBadInput(AllocatorRegistry.Entry entry) {
    InputException e =
        assertThrows(InputException.class, () -> build(entry, REGION, Map.of("no-such-option", "1")));
    assertTrue(e.getMessage().contains("no-such-option"), e.getMessage());
  }

  @ParameterizedTest
  @MethodSource("models")
  void theModelAnswersToItsRegistryName(AllocatorRegistry.Entry entry) {
    assertEquals(entry.name(), build(entry, REGION, Map.of()).name());
  }

  @ParameterizedTest
  @MethodSource("models")
  void theLayoutTilesItsSegmentsAndAccountsForEveryLiveByte(AllocatorRegistry.Entry entry) {
    CheckedAllocator model = checked(entry);
    churn(model, 9L, 800);
    Allocator a = model.allocator();
    long previousEnd = REGION.baseBytes();
    long active = 0;
    long requested = 0;
    for (SegmentLayout segment : a.layout()) {
      assertTrue(segment.addressBytes() >= previousEnd, "segments overlap or are out of order at " + segment.addressBytes());
      assertTrue(REGION.contains(segment.addressBytes(), segment.sizeBytes()), "segment outside the region");
      long cursor = segment.addressBytes();
      for (SegmentLayout.Block block : segment.blocks()) {
        assertEquals(cursor, block.addressBytes(), "blocks of segment " + segment.addressBytes() + " do not tile it");
        assertTrue(block.sizeBytes() > 0);
        cursor += block.sizeBytes();
        if (block.state() == SegmentLayout.State.ACTIVE_ALLOCATED) {
          active += block.sizeBytes();
          requested += block.requestedBytes();
        } else {
          assertEquals(0, block.requestedBytes(), "a free block with requested bytes");
        }
      }
      assertEquals(segment.addressBytes() + segment.sizeBytes(), cursor, "blocks do not reach the segment end");
      previousEnd = cursor;
    }
    assertEquals(a.stats().allocatedBytes(), active, "active blocks against allocated bytes");
    assertEquals(a.stats().requestedBytes(), requested, "requested bytes in the layout");
    assertFalse(model.liveHandles().isEmpty(), "nothing was live, so the layout check proved little");
  }
}

package kvsim.alloc.stitching;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.Calibration;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CheckedAllocator;
import org.junit.jupiter.api.Test;

/** The stitching model's rules as its class comment states them; invariants are checked after every event. */
class StitchingAllocatorTest {
  static final long MiB = Bytes.MiB;
  static final long CHUNK = StitchingAllocator.CHUNK_BYTES;

  /** 40 MiB at 64 MiB: twenty chunks. */
  static final Region REGION = new Region("kv", 64 * MiB, 40 * MiB);

  private static StitchingAllocator build(Region region, Map<String, String> options) {
    return build(region, options, Calibration.NONE);
  }

  private static StitchingAllocator build(Region region, Map<String, String> options, Calibration calibration) {
    return new StitchingAllocator(
        new AllocatorContext(StitchingAllocator.NAME, region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), options, calibration));
  }

  private static AllocRequest request(long bytes) {
    return new AllocRequest(bytes, Tag.ACTIVATION, false, 0);
  }

  /** Fills the region with one-chunk requests, then frees every other one: only non-adjacent single chunks are free. */
  private static List<Long> fillAndFreeEveryOther(CheckedAllocator model) {
    while (model.allocate(request(CHUNK)).succeeded()) {
      assertTrue(model.liveHandles().size() <= 20);
    }
    List<Long> handles = new ArrayList<>(model.liveHandles());
    for (int i = 0; i < handles.size(); i += 2) {
      model.free(handles.get(i));
    }
    return handles;
  }

  @Test
  void aRequestThatPytorchRefusesForFragmentationIsServedByStitching() {
    CheckedAllocator torch = new CheckedAllocator(
        AllocatorRegistry.create(new AllocatorContext("pytorch-caching", REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of())),
        REGION);
    fillAndFreeEveryOther(torch);
    AllocOutcome refused = torch.allocate(request(4 * MiB));
    assertEquals(OomReason.FRAGMENTATION, assertInstanceOf(AllocOutcome.OutOfMemory.class, refused).reason());

    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    fillAndFreeEveryOther(checked);
    assertEquals(20, model.stats().reservedBytes() / CHUNK);
    assertEquals(10 * CHUNK, model.freeBytes());
    assertEquals(10 * CHUNK, model.largestFreeBytes());
    AllocOutcome.Allocated a = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(4 * MiB)));
    assertEquals(1, a.extents().count());
    assertEquals(4 * MiB, a.extents().sizeBytes(0));
    assertTrue(model.virtualSpace().orElseThrow().contains(a.extents().offsetBytes(0), 4 * MiB));
    assertTrue(model.isStitched(a.handle()));
    int[] chunks = model.chunksOf(a.handle());
    assertEquals(2, chunks.length);
    assertTrue(Math.abs(chunks[0] - chunks[1]) > 1, "the stitched chunks are not adjacent");
    assertEquals(1L, model.extraMetrics().get("stitches"));
    assertEquals(2L, model.extraMetrics().get("stitched_chunks"));
    assertEquals(4 * MiB, model.extraMetrics().get("stitched_bytes"));
    assertEquals(20, model.stats().reservedBytes() / CHUNK, "stitching reserves nothing new");
  }

  @Test
  void aFreedStitchedBlockIsReusedWithoutDriverCalls() {
    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    fillAndFreeEveryOther(checked);
    AllocOutcome.Allocated first = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(3 * MiB)));
    int[] chunks = model.chunksOf(first.handle());
    long calls = model.extraMetrics().get("vmm_calls");
    checked.free(first.handle());
    assertEquals(List.of(2), model.cachedSizes());
    assertEquals(10 * CHUNK, model.freeBytes(), "the stitched block's chunks are free again");
    long before = model.stats().modelledNanos();
    AllocOutcome.Allocated again = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(4 * MiB)));
    assertEquals(first.extents(), again.extents(), "the cached stitched block serves it");
    assertEquals(chunks[0], model.chunksOf(again.handle())[0]);
    assertEquals(chunks[1], model.chunksOf(again.handle())[1]);
    assertEquals(1L, model.extraMetrics().get("stitches"));
    assertEquals(1L, model.extraMetrics().get("stitch_reuses"));
    assertEquals(calls, model.extraMetrics().get("vmm_calls"));
    assertTrue(model.stats().modelledNanos() - before < StitchingAllocator.VMM_CALL_NANOS);
    assertEquals(List.of(), model.cachedSizes());
  }

  @Test
  void aCachedStitchedBlockWaitsWhileOneOfItsChunksIsInUse() {
    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    fillAndFreeEveryOther(checked);
    AllocOutcome.Allocated s = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(4 * MiB)));
    int[] chunks = model.chunksOf(s.handle());
    checked.free(s.handle());
    // Take every free single chunk: the stitched block's chunks among them.
    List<Long> singles = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      singles.add(assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(CHUNK))).handle());
    }
    long holder = -1;
    for (long h : singles) {
      if (model.chunksOf(h)[0] == chunks[0]) {
        holder = h;
      }
    }
    assertTrue(holder >= 0);
    for (long h : singles) {
      if (h != holder) {
        checked.free(h);
      }
    }
    AllocOutcome.Allocated other = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(4 * MiB)));
    assertEquals(0L, model.extraMetrics().get("stitch_reuses"));
    assertEquals(2L, model.extraMetrics().get("stitches"));
    assertFalse(other.extents().equals(s.extents()));
  }

  @Test
  void tooFewFreeChunksGetANewSegmentOfJustTheMissingChunksStitchedToThem() {
    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    long three = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(3 * CHUNK))).handle();
    checked.allocate(request(CHUNK));
    checked.free(three);
    assertEquals(4 * CHUNK, model.stats().reservedBytes());
    AllocOutcome.Allocated a = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(5 * CHUNK - 1)));
    assertEquals(6 * CHUNK, model.stats().reservedBytes(), "two new chunks, not five");
    assertTrue(model.isStitched(a.handle()));
    assertEquals(5 * CHUNK, a.allocatedBytes());
    assertEquals(3L, model.extraMetrics().get("segments"));
  }

  @Test
  void aSingleFreeBlockIsPreferredAndSplitBestFit() {
    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    long four = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(4 * CHUNK))).handle();
    checked.allocate(request(CHUNK));
    long two = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(2 * CHUNK))).handle();
    checked.allocate(request(CHUNK));
    checked.free(four);
    checked.free(two);
    AllocOutcome.Allocated a = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(CHUNK)));
    assertFalse(model.isStitched(a.handle()));
    assertEquals(5, model.chunksOf(a.handle())[0], "the two-chunk block (chunks 5 and 6) is the best fit");
    assertEquals(0L, model.extraMetrics().get("stitches"));
  }

  @Test
  void theStitchedPoolEvictsTheLeastRecentlyFreedBlockPastItsBound() {
    StitchingAllocator model = build(REGION, Map.of("max-stitched", "1"));
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    fillAndFreeEveryOther(checked);
    long a = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(4 * MiB))).handle();
    long b = assertInstanceOf(AllocOutcome.Allocated.class, checked.allocate(request(6 * MiB))).handle();
    long calls = model.extraMetrics().get("vmm_calls");
    checked.free(a);
    checked.free(b);
    assertEquals(List.of(3), model.cachedSizes());
    assertEquals(1L, model.extraMetrics().get("stitched_evicted"));
    assertEquals(calls + 3, model.extraMetrics().get("vmm_calls"), "two unmaps and an address free");
  }

  @Test
  void requestsAboveTheRegionAreTooLargeAndAboveTheFreeChunksNoMemory() {
    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    assertEquals(OomReason.TOO_LARGE,
        assertInstanceOf(AllocOutcome.OutOfMemory.class, checked.allocate(request(40 * MiB + 1))).reason());
    assertEquals(OomReason.TOO_LARGE,
        assertInstanceOf(AllocOutcome.OutOfMemory.class, checked.allocate(request(Long.MAX_VALUE))).reason());
    checked.allocate(request(30 * MiB));
    assertEquals(OomReason.NO_MEMORY,
        assertInstanceOf(AllocOutcome.OutOfMemory.class, checked.allocate(request(10 * MiB + 1))).reason());
    assertTrue(checked.allocate(request(10 * MiB)).succeeded());
  }

  @Test
  void freeingEverythingReturnsEveryChunkAndDoubleFreeIsMisuse() {
    StitchingAllocator model = build(REGION, Map.of());
    CheckedAllocator checked = new CheckedAllocator(model, REGION);
    List<Long> handles = fillAndFreeEveryOther(checked);
    checked.allocate(request(7 * MiB));
    checked.freeAll();
    assertEquals(0, model.stats().allocatedBytes());
    assertEquals(20 * CHUNK, model.freeBytes());
    for (SegmentLayout s : model.layout()) {
      for (SegmentLayout.Block b : s.blocks()) {
        assertEquals(SegmentLayout.State.INACTIVE, b.state());
      }
    }
    assertThrows(AllocatorMisuseException.class, () -> model.free(handles.get(1)));
    assertThrows(AllocatorMisuseException.class, () -> model.free(12345));
  }

  @Test
  void aCalibrationReplacesTheDriverCallCost() {
    Calibration cheap = new Calibration("h100.json", "test", null, null, Map.of(StitchingAllocator.NAME, Map.of("device_alloc_ns", 1_000L)));
    StitchingAllocator model = build(REGION, Map.of(), cheap);
    model.allocate(request(3 * CHUNK)); // a reserve, three creates, three maps
    assertEquals(7L, model.extraMetrics().get("vmm_calls"));
    long nanos = model.stats().modelledNanos();
    assertTrue(nanos >= 7_000 && nanos < 8_000, nanos + " ns");
  }

  @Test
  void badOptionsAreRefused() {
    assertThrows(InputException.class, () -> build(REGION, Map.of("max-stitched", "-1")));
    assertThrows(InputException.class, () -> build(REGION, Map.of("max-stitched", "10000000")));
  }

  /**
   * A naive reference: every chunk held by at most one live allocation, each allocation holding
   * {@code ceil(size / 2 MiB)} chunks, and a request refused exactly when it needs more chunks than
   * the region has left beside the live allocations. Two runs of the same churn agree exactly.
   */
  @Test
  void aRandomChurnAgreesWithNaiveChunkCountingAndIsDeterministic() {
    Region region = new Region("kv", 3 * Bytes.GiB, Bytes.GiB);
    List<String> first = churn(region, 7L);
    assertEquals(first, churn(region, 7L));
  }

  private static List<String> churn(Region region, long seed) {
    StitchingAllocator model = build(region, Map.of("max-stitched", "8"));
    CheckedAllocator checked = new CheckedAllocator(model, region);
    int chunkCount = model.chunkCount();
    SplittableRandom random = new SplittableRandom(seed);
    Map<Long, Integer> chunksOfHandle = new HashMap<>();
    List<String> trace = new ArrayList<>();
    int used = 0;
    int stitched = 0;
    for (int op = 0; op < 4_000; op++) {
      if (checked.liveHandles().isEmpty() || random.nextInt(100) < 55) {
        long size = 1 + random.nextLong(random.nextInt(4) == 0 ? 120 * MiB : 9 * MiB);
        int need = (int) Bytes.ceilDiv(size, CHUNK);
        AllocOutcome o = checked.allocate(request(size));
        assertEquals(need <= chunkCount - used, o.succeeded(), "request of " + size + " B with " + used + " chunks used");
        if (o instanceof AllocOutcome.Allocated a) {
          chunksOfHandle.put(a.handle(), need);
          used += need;
          stitched += model.isStitched(a.handle()) ? 1 : 0;
          trace.add(a.handle() + "@" + a.extents());
        } else {
          trace.add("oom " + size);
        }
      } else {
        long h = checked.liveHandles().get(random.nextInt(checked.liveHandles().size()));
        checked.free(h);
        used -= chunksOfHandle.remove(h);
      }
      BitSet held = new BitSet();
      int count = 0;
      for (long h : checked.liveHandles()) {
        for (int c : model.chunksOf(h)) {
          assertFalse(held.get(c), "chunk " + c + " held twice");
          held.set(c);
          count++;
        }
      }
      assertEquals(used, count);
      assertEquals((long) (chunkCount - used) * CHUNK, model.freeBytes());
    }
    assertTrue(stitched > 20, "only " + stitched + " stitched allocations");
    trace.add(model.extraMetrics().toString());
    trace.add(model.stats().toString());
    return trace;
  }

  @Test
  void theRegistryBuildsItAsAVirtualModel() {
    Allocator a = AllocatorRegistry.create(
        new AllocatorContext(StitchingAllocator.NAME, REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of()));
    assertInstanceOf(StitchingAllocator.class, a);
    assertTrue(a.virtualSpace().isPresent());
  }
}

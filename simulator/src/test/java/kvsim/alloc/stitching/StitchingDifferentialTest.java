package kvsim.alloc.stitching;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.LatencyModel;
import kvsim.core.Bytes;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The stitching model against {@link NaiveStitching}, event by event through random churns: the same
 * requests served or refused, the same virtual address and the same chunks in the same order for
 * each allocation, the same counts of stitches, reuses, evictions and driver calls, and the model's
 * invariants after every event.
 */
class StitchingDifferentialTest {

  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
  void theModelMakesTheNaiveModelsChoicesThroughARandomChurn(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int maxStitched = (int) (seed % 4) * 3; // 0, 3, 6, 9
    Region region = new Region("kv", 512 * Bytes.MiB, (128 + seed * 16) * Bytes.MiB + (seed % 2) * Bytes.MiB);
    StitchingAllocator model = new StitchingAllocator(region, maxStitched, StitchingAllocator.DEFAULT_LATENCY);
    NaiveStitching naive = new NaiveStitching(model.chunkCount(), maxStitched, StitchingAllocator.VIRTUAL_BASE_BYTES);
    Map<Long, Long> handleOf = new HashMap<>();
    List<Long> ids = new ArrayList<>();
    int stitched = 0;
    for (int op = 0; op < 3_000; op++) {
      if (ids.isEmpty() || random.nextInt(100) < 55) {
        long size = 1 + random.nextLong(random.nextInt(5) == 0 ? 40 * Bytes.MiB : 7 * Bytes.MiB);
        AllocOutcome o = model.allocate(new AllocRequest(size, Tag.KV, random.nextBoolean(), 0));
        long id = naive.allocate(size);
        assertEquals(id != 0, o.succeeded(), "op " + op + ": request of " + size + " B");
        if (o instanceof AllocOutcome.Allocated a) {
          NaiveStitching.Live expected = naive.live.get(id);
          assertEquals(expected.virtualAddress(), a.extents().offsetBytes(0), "op " + op);
          assertArrayEquals(expected.chunks(), model.chunksOf(a.handle()), "op " + op);
          assertEquals(expected.stitched() != null, model.isStitched(a.handle()));
          stitched += expected.stitched() != null ? 1 : 0;
          handleOf.put(id, a.handle());
          ids.add(id);
        }
      } else {
        long id = ids.remove(random.nextInt(ids.size()));
        model.free(handleOf.remove(id));
        naive.free(id);
      }
      model.checkInvariants();
      Map<String, Long> extra = model.extraMetrics();
      assertEquals(naive.stitches, extra.get("stitches"), "op " + op);
      assertEquals(naive.reuses, extra.get("stitch_reuses"), "op " + op);
      assertEquals(naive.evicted, extra.get("stitched_evicted"), "op " + op);
      assertEquals(naive.calls, extra.get("vmm_calls"), "op " + op);
      assertEquals((long) naive.pool.size(), extra.get("stitched_cached"), "op " + op);
      assertEquals((long) naive.segments.size(), extra.get("segments"), "op " + op);
      assertEquals(naive.reserved.cardinality() * NaiveStitching.CHUNK, model.stats().reservedBytes(), "op " + op);
    }
    assertEquals(true, stitched > 30, "only " + stitched + " stitched allocations");
    if (maxStitched > 0) {
      assertEquals(true, naive.reuses > 0, "no stitched block was reused");
    }
  }

  @Test
  void latencyIsChargedPerDriverCall() {
    LatencyModel l = new LatencyModel(0, 0, 0, 0, 1, 1_000);
    StitchingAllocator model = new StitchingAllocator(new Region("kv", 0, 64 * Bytes.MiB), 1, l);
    long h = ((AllocOutcome.Allocated) model.allocate(AllocRequest.of(4 * Bytes.MiB, Tag.KV))).handle();
    assertEquals(5, model.stats().modelledNanos()); // a reserve, two creates, two maps
    model.free(h);
    assertEquals(5, model.stats().modelledNanos()); // a primitive block's free calls nothing
  }
}

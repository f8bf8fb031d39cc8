package kvsim.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.Extents;
import kvsim.alloc.firstfit.FirstFitAllocator;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import kvsim.trace.EventSource;
import kvsim.trace.TraceEvent;
import org.junit.jupiter.api.Test;

/** What the replay engine tells its listener at frees, and what it remembers of refused allocations. */
class ReplayEngineTest {
  private static final long MiB = 1L << 20;

  /** A fixed list of events; {@code freesRefused} as a file (true) or a closed-loop generator (false) says. */
  private static EventSource source(boolean freesRefused, TraceEvent... events) {
    ArrayDeque<TraceEvent> left = new ArrayDeque<>(List.of(events));
    return new EventSource() {
      @Override
      public TraceEvent next() {
        return left.poll();
      }

      @Override
      public boolean freesRefused() {
        return freesRefused;
      }

      @Override
      public String name() {
        return "test";
      }

      @Override
      public Map<String, Object> describe() {
        return Map.of();
      }
    };
  }

  private static ReplayEngine.Result run(EventSource source, AllocatorListener listener) throws Exception {
    FirstFitAllocator ff = new FirstFitAllocator(new Region("kv", 0, 16 * MiB), 512);
    return ReplayEngine.run(new RegionRouter(ff), source, new ReplayEngine.Options(true, 0, listener, null));
  }

  /** Records every free as (id, requested bytes, extents), and the extents each allocation got. */
  private static final class Frees implements AllocatorListener {
    final boolean reads;
    final Map<Long, Extents> placed = new HashMap<>();
    final List<Object[]> frees = new ArrayList<>();

    Frees(boolean reads) {
      this.reads = reads;
    }

    @Override
    public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
      placed.put(id, extents);
    }

    @Override
    public void freed(long id, long requestedBytes, long stream, Extents extents) {
      frees.add(new Object[] {id, requestedBytes, extents});
    }

    @Override
    public boolean readsFreeDetails() {
      return reads;
    }
  }

  private static EventSource allocThenFree() {
    return source(true,
        TraceEvent.alloc(0, 7, 3 * MiB + 5, Tag.KV, true, 0),
        TraceEvent.alloc(1, 8, MiB, Tag.KV, true, 0),
        TraceEvent.free(2, 7, 0));
  }

  @Test
  void aListenerThatReadsFreeDetailsGetsTheRequestedSizeAndTheExtents() throws Exception {
    Frees reads = new Frees(true);
    run(allocThenFree(), reads);
    assertEquals(1, reads.frees.size());
    Object[] f = reads.frees.get(0);
    assertEquals(7L, f[0]);
    assertEquals(3 * MiB + 5, f[1]);
    Extents x = (Extents) f[2];
    Extents placed = reads.placed.get(7L);
    assertEquals(placed.count(), x.count());
    assertEquals(placed.offsetBytes(0), x.offsetBytes(0));
    assertEquals(placed.sizeBytes(0), x.sizeBytes(0));
  }

  @Test
  void aListenerThatDoesNotReadThemGetsZeroAndNull() throws Exception {
    Frees skips = new Frees(false);
    run(allocThenFree(), skips);
    assertEquals(1, skips.frees.size());
    assertEquals(0L, skips.frees.get(0)[1]);
    assertNull(skips.frees.get(0)[2]);
  }

  @Test
  void twoListenersGetTheDetailsWhenEitherReadsThem() throws Exception {
    Frees skips = new Frees(false);
    Frees reads = new Frees(true);
    AllocatorListener both = AllocatorListener.both(skips, reads);
    assertTrue(both.readsFreeDetails());
    run(allocThenFree(), both);
    assertEquals(3 * MiB + 5, skips.frees.get(0)[1]);
    assertEquals(3 * MiB + 5, reads.frees.get(0)[1]);
    assertEquals(false, AllocatorListener.both(skips, new Frees(false)).readsFreeDetails());
  }

  /** 20 MiB never fits the 16 MiB region: a refusal. */
  private static TraceEvent tooBig(long t, long id) {
    return TraceEvent.alloc(t, id, 20 * MiB, Tag.KV, true, 0);
  }

  @Test
  void aFileMayFreeARefusedAllocationAndTheFreeIsCounted() throws Exception {
    ReplayEngine.Result r = run(source(true, tooBig(0, 1), TraceEvent.free(1, 1, 0)), null);
    assertEquals(1L, r.metrics().counters().get("frees_of_refused_count"));
    assertEquals(1L, r.metrics().counters().get("oom_count"));
  }

  @Test
  void aClosedLoopSourceThatFreesARefusedAllocationIsRefused() throws Exception {
    // The engine keeps nothing for a generator's refusals, so such a free names an id never live.
    InputException e = assertThrows(InputException.class, () -> run(source(false, tooBig(0, 1), TraceEvent.free(1, 1, 0)), null));
    assertTrue(e.getMessage().contains("free of id 1, which is not live"), e.getMessage());
  }

  @Test
  void aRefusedAllocationWithTheIdOfALiveOneIsADuplicateEitherWay() {
    for (boolean freesRefused : new boolean[] {true, false}) {
      EventSource s = source(freesRefused, TraceEvent.alloc(0, 1, MiB, Tag.KV, true, 0), tooBig(1, 1));
      InputException e = assertThrows(InputException.class, () -> run(s, null));
      assertTrue(e.getMessage().contains("id 1 is already live"), e.getMessage());
    }
  }

  /** Replays {@code trace}, a binary trace, with first fit on a small device, decoded ahead or in place. */
  private static ReplayEngine.Result replayBinary(byte[] trace, boolean decodeAhead) throws Exception {
    try (kvsim.trace.L1BinaryReader r = kvsim.trace.L1BinaryReader.open("churn.kvt", new java.io.ByteArrayInputStream(trace))) {
      if (decodeAhead) {
        r.decodeAhead();
      }
      FirstFitAllocator ff = new FirstFitAllocator(new Region("kv", 0, 256 * MiB), 512);
      return ReplayEngine.run(new RegionRouter(ff), r, new ReplayEngine.Options(false, 7, null, null));
    }
  }

  @Test
  void aBinaryTraceDecodedAheadReplaysAsOneDecodedInPlace() throws Exception {
    // churn with refusals and frees of refused ids, over several of the decoder's chunks and the file's blocks
    kvsim.workload.ChurnGenerator g = new kvsim.workload.ChurnGenerator(new kvsim.core.OptionMap("churn", Map.of(
        "ops", "30000", "seed", "5", "min-size-mib", "1", "max-size-mib", "16", "free-probability", "0.45")));
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (kvsim.trace.L1TraceWriter w = kvsim.trace.L1TraceWriter.open(bytes, g.describe(), true)) {
      TraceEvent e;
      while ((e = g.next()) != null) {
        w.write(e);
      }
    }
    ReplayEngine.Result inPlace = replayBinary(bytes.toByteArray(), false);
    ReplayEngine.Result ahead = replayBinary(bytes.toByteArray(), true);
    assertEquals(30000, inPlace.metrics().events());
    assertTrue(inPlace.metrics().oomCount() > 0 && inPlace.metrics().counters().get("frees_of_refused_count") > 0, "the trace exercises refusals");
    assertEquals(inPlace.metrics().counters(), ahead.metrics().counters());
    assertEquals(inPlace.metrics().summaries(), ahead.metrics().summaries());
    assertEquals(inPlace.metrics().samples().size(), ahead.metrics().samples().size());
    for (int i = 0; i < inPlace.metrics().samples().size(); i++) {
      org.junit.jupiter.api.Assertions.assertArrayEquals(inPlace.metrics().samples().get(i), ahead.metrics().samples().get(i), "row " + i);
    }
  }
}

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
    return replayBinary(trace, decodeAhead, null);
  }

  private static ReplayEngine.Result replayBinary(byte[] trace, boolean decodeAhead, AllocatorListener listener) throws Exception {
    try (kvsim.trace.L1BinaryReader r = kvsim.trace.L1BinaryReader.open("churn.kvt", new java.io.ByteArrayInputStream(trace))) {
      if (decodeAhead) {
        r.decodeAhead();
      }
      FirstFitAllocator ff = new FirstFitAllocator(new Region("kv", 0, 256 * MiB), 512);
      return ReplayEngine.run(new RegionRouter(ff), r, new ReplayEngine.Options(false, 7, listener, null));
    }
  }

  /** Writes {@code events} as a binary trace. */
  private static byte[] binaryTrace(Iterable<TraceEvent> events) throws Exception {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (kvsim.trace.L1TraceWriter w = kvsim.trace.L1TraceWriter.open(bytes, Map.of("generator", "test"), true)) {
      for (TraceEvent e : events) {
        w.write(e);
      }
    }
    return bytes.toByteArray();
  }

  /** Everything a listener hears, one line each. */
  private static final class Log implements AllocatorListener {
    final List<String> lines = new ArrayList<>();

    @Override
    public void time(long timeNanos) {
      lines.add("t " + timeNanos);
    }

    @Override
    public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
      lines.add("alloc " + id + " " + request + " " + extents.offsetBytes(0) + " " + allocatedBytes);
    }

    @Override
    public void freed(long id, long requestedBytes, long stream, Extents extents) {
      lines.add("free " + id + " " + requestedBytes + " " + stream + " " + extents.offsetBytes(0));
    }

    @Override
    public boolean readsFreeDetails() {
      return true;
    }

    @Override
    public void refused(long id, AllocRequest request, kvsim.alloc.AllocOutcome.OutOfMemory outcome) {
      lines.add("refused " + id + " " + request + " " + outcome.reason());
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
    Log heardInPlace = new Log();
    Log heardAhead = new Log();
    ReplayEngine.Result inPlace = replayBinary(bytes.toByteArray(), false, heardInPlace);
    ReplayEngine.Result ahead = replayBinary(bytes.toByteArray(), true, heardAhead);
    assertEquals(heardInPlace.lines, heardAhead.lines, "the listener hears the same");
    assertEquals(30000, inPlace.metrics().events());
    assertTrue(inPlace.metrics().oomCount() > 0 && inPlace.metrics().counters().get("frees_of_refused_count") > 0, "the trace exercises refusals");
    assertEquals(inPlace.metrics().counters(), ahead.metrics().counters());
    assertEquals(inPlace.metrics().summaries(), ahead.metrics().summaries());
    assertEquals(inPlace.metrics().samples().size(), ahead.metrics().samples().size());
    for (int i = 0; i < inPlace.metrics().samples().size(); i++) {
      org.junit.jupiter.api.Assertions.assertArrayEquals(inPlace.metrics().samples().get(i), ahead.metrics().samples().get(i), "row " + i);
    }
  }

  @Test
  void aBinaryTraceReadInPlaceReportsALiveIdErrorAsOneDecodedInPlace() throws Exception {
    // long enough to be read as the decoder's rows, with the bad event, the last, in a later chunk
    List<TraceEvent> events = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      events.add(TraceEvent.alloc(2 * i, i, MiB, Tag.KV, true, 0));
      events.add(TraceEvent.free(2 * i + 1, i, 0));
    }
    List<TraceEvent> doubleFree = new ArrayList<>(events);
    doubleFree.add(TraceEvent.free(40_000, 19_999, 0));
    List<TraceEvent> liveAgain = new ArrayList<>(events);
    liveAgain.add(TraceEvent.alloc(40_000, 5, MiB, Tag.KV, true, 0));
    liveAgain.add(TraceEvent.alloc(40_000, 5, MiB, Tag.KV, true, 0));
    for (Map.Entry<String, List<TraceEvent>> c : Map.of("free of id 19999", doubleFree, "id 5 is already live", liveAgain).entrySet()) {
      byte[] trace = binaryTrace(c.getValue());
      InputException inPlace = assertThrows(InputException.class, () -> replayBinary(trace, false));
      InputException ahead = assertThrows(InputException.class, () -> replayBinary(trace, true));
      assertTrue(inPlace.getMessage().contains(c.getKey()) && inPlace.getMessage().contains(":" + c.getValue().size() + ":"), inPlace.getMessage());
      assertEquals(inPlace.getMessage(), ahead.getMessage());
    }
  }
}

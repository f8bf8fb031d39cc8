package kvsim.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.caching.TieBreak;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.devicemodel.Region;
import kvsim.testing.SharedData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** torch-inspect's fragmentation picture. */
class SnapshotInspectorTest {
  private static final long MiB = 1L << 20;

  @ParameterizedTest(name = "{0}: reserved and allocated totals equal the sums over the file's segments")
  @ValueSource(strings = {"sketchkv2_llm_inference_state.pickle", "flexgen_opt1.3b_oom_state.pickle", "cs336_nothanmin_memory_snapshot.pickle"})
  void totalsEqualTheSumsOverTheSegments(String name) throws Exception {
    TorchSnapshot snap = SnapshotReader.read(SharedData.require("torch-snapshots/" + name));
    long reserved = snap.segments().stream().mapToLong(TorchSnapshot.Segment::totalSize).sum();
    long allocated = snap.segments().stream().mapToLong(TorchSnapshot.Segment::allocatedSize).sum();
    SnapshotInspector.Totals t = SnapshotInspector.totals(snap, -1, null);
    assertEquals(reserved, t.reserved());
    assertEquals(allocated, t.allocated());
    assertEquals(reserved - snap.segments().stream().mapToLong(TorchSnapshot.Segment::activeSize).sum(), t.free());
    SnapshotInspector.Totals small = SnapshotInspector.totals(snap, -1, "small");
    SnapshotInspector.Totals large = SnapshotInspector.totals(snap, -1, "large");
    assertEquals(reserved, small.reserved() + large.reserved(), "the pools partition the segments");
    Map<String, Object> json = SnapshotInspector.toJson(snap);
    @SuppressWarnings("unchecked")
    Map<String, Object> totals = (Map<String, Object>) json.get("totals");
    assertEquals(reserved, totals.get("reserved_bytes"));
    assertEquals(allocated, totals.get("allocated_bytes"));
    String text = SnapshotInspector.toText(snap);
    assertTrue(text.contains("by segment") && text.contains("by pool"), text);
  }

  @Test
  void stateOnlySnapshotsAreRecognised() throws Exception {
    TorchSnapshot sketch = SnapshotReader.read(SharedData.require("torch-snapshots/sketchkv2_llm_inference_state.pickle"));
    assertFalse(sketch.hasHistory());
    TorchSnapshot flexgen = SnapshotReader.read(SharedData.require("torch-snapshots/flexgen_opt1.3b_oom_state.pickle"));
    assertFalse(flexgen.hasHistory());
    assertTrue(flexgen.segments().get(0).blocks().get(0).address() == flexgen.segments().get(0).address(), "addresses computed for old blocks");
  }

  @Test
  void fragmentationFiguresFollowTheirDefinitions() throws Exception {
    CachingAllocator m = new CachingAllocator(TorchAllocConf.defaults(), TieBreak.ADDRESS, new Region("all", 0, 1L << 30));
    MiniRun run = new MiniRun(m);
    var events = List.of(
        kvsim.trace.TraceEvent.alloc(0, 0, 5 * MiB, kvsim.core.Tag.TEMP, false, 0),
        kvsim.trace.TraceEvent.alloc(0, 1, 5 * MiB, kvsim.core.Tag.TEMP, false, 0),
        kvsim.trace.TraceEvent.alloc(0, 2, 5 * MiB, kvsim.core.Tag.TEMP, false, 0),
        kvsim.trace.TraceEvent.free(0, 0, 0),
        kvsim.trace.TraceEvent.alloc(0, 3, 40 * MiB, kvsim.core.Tag.TEMP, false, 0));
    run.run(events);
    TorchSnapshot snap = SnapshotReader.read("t.pickle", run.pickle());
    SnapshotInspector.Totals t = SnapshotInspector.totals(snap, 0, null);
    // Segment 1 (20 MiB): free 5 MiB, 5, 5, free 5 MiB tail; segment 2: 40 MiB allocated.
    assertEquals(60 * MiB, t.reserved());
    assertEquals(50 * MiB, t.allocated());
    assertEquals(10 * MiB, t.free());
    assertEquals(10 * MiB, t.inactiveSplit());
    assertEquals(5 * MiB, t.largestFree());
    assertEquals(0.5, t.externalFragmentation(), 1e-12);
    SnapshotInspector.Totals small = SnapshotInspector.totals(snap, 0, "small");
    assertNull(small.externalFragmentation(), "nothing free: undefined, never NaN");
  }
}

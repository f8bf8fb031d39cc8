package kvsim.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.caching.TieBreak;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.slab.SlabAllocator;
import kvsim.devicemodel.Region;
import kvsim.trace.L1TraceReader;
import kvsim.trace.TraceEvent;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Export (recorder + pickle writer) and import (reader + importer) agree with each other. */
class SnapshotRoundTripTest {
  private static final long MiB = 1L << 20;

  private static CachingAllocator caching(String conf, long regionBytes) {
    return new CachingAllocator(TorchAllocConf.parse(conf), TieBreak.ADDRESS, new Region("all", 0, regionBytes));
  }

  /** Imports a pickle and returns its alloc/free events with ids renumbered by first appearance. */
  private static List<String> imported(byte[] pickle) throws Exception {
    TorchSnapshot snap = SnapshotReader.read("export.pickle", pickle);
    ByteArrayOutputStream trace = new ByteArrayOutputStream();
    SnapshotImporter.write(snap, SnapshotImporter.chooseDevice(snap, -1), trace);
    List<String> out = new ArrayList<>();
    Map<Long, Integer> ids = new HashMap<>();
    try (L1TraceReader r = L1TraceReader.open("import.jsonl", new ByteArrayInputStream(trace.toByteArray()))) {
      for (TraceEvent e; (e = r.next()) != null; ) {
        if (e.op() != TraceEvent.Op.ANNOTATE) {
          out.add(canonical(e, ids));
        }
      }
    }
    return out;
  }

  private static String canonical(TraceEvent e, Map<Long, Integer> ids) {
    if (e.op() == TraceEvent.Op.ALLOC) {
      ids.put(e.id(), ids.size());
      return "alloc #" + ids.get(e.id()) + " " + e.sizeBytes() + " B stream " + e.stream();
    }
    return "free #" + ids.get(e.id());
  }

  private static List<String> original(List<TraceEvent> served) {
    Map<Long, Integer> ids = new HashMap<>();
    List<String> out = new ArrayList<>();
    for (TraceEvent e : served) {
      out.add(canonical(e, ids));
    }
    return out;
  }

  @ParameterizedTest(name = "a churn run on pytorch-caching with ''{0}'' re-imports to the same events")
  @ValueSource(strings = {"", "expandable_segments:True", "max_split_size_mb:40"})
  void anExportedChurnRunReimportsToTheSameEventSequence(String conf) throws Exception {
    MiniRun run = new MiniRun(caching(conf, 512 * MiB)).run(MiniRun.churn(42, 3000, 48 * MiB));
    assertTrue(run.refused > 0, "the device is small enough to refuse some requests");
    List<String> back = imported(run.pickle());
    assertEquals(original(run.served), back);
  }

  @Test
  void anArenaModelsRegionCountsAsASegmentFromTheStart() throws Exception {
    MiniRun run = new MiniRun(new SlabAllocator(new Region("all", 0, 256 * MiB), 2 * MiB));
    run.run(MiniRun.churn(7, 500, MiB));
    byte[] pickle = run.pickle();
    TorchSnapshot snap = SnapshotReader.read("slab.pickle", pickle);
    assertEquals(1, snap.segments().size());
    assertEquals(256 * MiB, snap.segments().get(0).totalSize());
    assertTrue(snap.traceOf(0).stream().noneMatch(e -> e.action().startsWith("segment_")));
    assertEquals(original(run.served), imported(pickle));
  }

  @ParameterizedTest(name = "a pytorch-caching run with ''{0}'' verifies completely under torch-replay")
  @ValueSource(strings = {"", "expandable_segments:True", "max_split_size_mb:40", "roundup_power2_divisions:[1:4,>:8]"})
  void anExportedCachingRunReplaysWithEveryDecisionMatching(String conf) throws Exception {
    long region = 512 * MiB;
    MiniRun run = new MiniRun(caching(conf, region)).run(MiniRun.churn(3, 4000, 40 * MiB));
    TorchSnapshot snap = SnapshotReader.read("export.pickle", run.pickle());
    assertTrue(snap.traceOf(0).stream().anyMatch(e -> e.action().equals("oom")), "the run hit the device limit");
    String released = conf.contains("expandable") ? "segment_unmap" : "segment_free";
    assertTrue(snap.traceOf(0).stream().anyMatch(e -> e.action().equals(released)), "the retry ladder released memory");
    ReplayReport r = ReplayVerifier.verify(snap, new ReplayVerifier.Options(null, TieBreak.ADDRESS, region, -1, false));
    assertNull(r.firstDivergence(), () -> String.valueOf(r.firstDivergence()));
    assertTrue(r.allMatched());
    assertEquals(run.served.stream().filter(e -> e.op() == TraceEvent.Op.ALLOC).count(), r.allocations());
  }

  @Test
  void theSettingsOfAnExportAreTheModelsOwn() throws Exception {
    MiniRun run = new MiniRun(caching("max_split_size_mb:64,roundup_power2_divisions:[256:1,512:2,>:8]", 512 * MiB));
    run.run(MiniRun.churn(1, 50, 8 * MiB));
    TorchSnapshot snap = SnapshotReader.read("export.pickle", run.pickle());
    TorchAllocConf back = SnapshotSettings.conf(snap);
    assertEquals(64 * MiB, back.maxSplitSizeBytes());
    assertEquals(8, back.roundupPower2Divisions()[15]);
    assertEquals(2, back.roundupPower2Divisions()[9]);
  }
}

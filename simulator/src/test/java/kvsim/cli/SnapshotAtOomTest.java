package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.metrics.MemoryMap;
import kvsim.report.MemoryMapFile;
import kvsim.testing.CliRun;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code replay}/{@code compare --snapshot-at-oom FILE[:frag]}: the file, the stderr line without OOM, the report and map, bad input. */
class SnapshotAtOomTest {
  @TempDir Path dir;

  private static final String OOMING = "churn:ops=2000,seed=4";

  private CliRun replay(Path out, String... more) {
    List<String> args = new java.util.ArrayList<>(List.of("replay", OOMING, "--device", "2GiB", "--quiet", "-o", out.toString()));
    args.addAll(List.of(more));
    return CliRun.of(args.toArray(new String[0]));
  }

  @Test
  void aRunThatOomsWritesTheSnapshotMarksTheMapAndLinksIt() throws Exception {
    Path pickle = dir.resolve("snap.pickle");
    Path res = dir.resolve("res");
    CliRun run = replay(res, "-a", "first-fit", "--snapshot-at-oom", pickle.toString()).ok();
    assertTrue(run.out().contains("snapshot at first OOM: " + pickle + " (first-fit, event "), run.out());
    TorchSnapshot back = SnapshotReader.read(pickle);
    List<TorchSnapshot.Entry> trace = back.traceOf(0);
    TorchSnapshot.Entry last = trace.get(trace.size() - 1);
    assertEquals("oom", last.action());

    List<MemoryMap> maps = MemoryMapFile.read(res);
    MemoryMap.OomSnapshot mark = maps.get(0).oomSnapshot();
    assertNotNull(mark);
    assertEquals("../snap.pickle", mark.file());
    assertEquals(last.size(), mark.sizeBytes());
    assertEquals(last.timeMicros(), mark.timeNanos() / 1000);
    // The marked event is one whose bin holds a refusal, and no earlier bin holds one.
    long[] ooms = maps.get(0).oomCounts();
    int bin = (int) ((mark.event() - 1) / maps.get(0).binEvents());
    assertTrue(ooms[bin] > 0, "bin " + bin + " of event " + mark.event());
    for (int k = 0; k < bin; k++) {
      assertEquals(0, ooms[k], "bin " + k + " before the first OOM");
    }
    String svg = Files.readString(res.resolve("memory-map.svg"));
    assertTrue(svg.contains("data-oom='first-fit event=" + mark.event() + " time_ns=" + mark.timeNanos() + " size_bytes=" + mark.sizeBytes()
        + " reason=" + mark.reason() + " file=../snap.pickle'"), "the SVG marks the moment");
    String html = Files.readString(res.resolve("report.html"));
    assertTrue(html.contains("first-fit: Snapshot at first OOM: <a href=\"../snap.pickle\">../snap.pickle</a>, open in memory_viz"), "the report links it");
  }

  @Test
  void withoutTheOptionTheMapHasNoMark() throws Exception {
    Path res = dir.resolve("plain");
    replay(res, "-a", "first-fit").ok();
    assertNull(MemoryMapFile.read(res).get(0).oomSnapshot());
    assertFalse(Files.readString(res.resolve("memory-map.json")).contains("snapshot_at_oom"));
    assertFalse(Files.readString(res.resolve("memory-map.svg")).contains("data-oom"));
  }

  @Test
  void twoRunsWriteTheSameBytes() throws Exception {
    Path a = dir.resolve("a.pickle");
    Path b = dir.resolve("b.pickle");
    replay(dir.resolve("ra"), "-a", "pytorch-caching", "--snapshot-at-oom", a + ":frag").ok();
    replay(dir.resolve("rb"), "-a", "pytorch-caching", "--snapshot-at-oom", b + ":frag").ok();
    assertArrayEquals(Files.readAllBytes(a), Files.readAllBytes(b));
    assertEquals("fragmentation", MemoryMapFile.read(dir.resolve("ra")).get(0).oomSnapshot().reason());
  }

  @Test
  void severalAllocatorsGetOneFileEachAndOneWithoutOomGetsALine() throws Exception {
    Path pickle = dir.resolve("s.pickle");
    CliRun run = replay(dir.resolve("res"), "-a", "first-fit,paged", "--snapshot-at-oom", pickle + ":frag").ok();
    assertTrue(Files.exists(dir.resolve("s-first-fit.pickle")));
    // paged never fragments: no file, and exactly one line saying so.
    assertFalse(Files.exists(dir.resolve("s-paged.pickle")));
    assertEquals("kvsim: paged had no fragmentation OOM in this run: no snapshot written to " + dir.resolve("s-paged.pickle") + "\n", run.err());
  }

  @Test
  void aRunWithoutOomWritesNoFileAndSaysSo() throws Exception {
    Path pickle = dir.resolve("none.pickle");
    CliRun run = CliRun.of("replay", "churn:ops=300", "-a", "paged", "--quiet", "-o", dir.resolve("res").toString(), "--snapshot-at-oom", pickle.toString()).ok();
    assertFalse(Files.exists(pickle));
    assertEquals("kvsim: paged had no OOM in this run: no snapshot written to " + pickle + "\n", run.err());
    assertNull(MemoryMapFile.read(dir.resolve("res")).get(0).oomSnapshot());
  }

  @Test
  void compareTakesTheOptionToo() throws Exception {
    Path pickle = dir.resolve("c.pickle");
    CliRun.of("compare", OOMING, "-a", "buddy", "--device", "2GiB", "--quiet", "-o", dir.resolve("res").toString(), "--snapshot-at-oom", pickle.toString()).ok();
    assertEquals("oom", last(SnapshotReader.read(pickle)).action());
  }

  private static TorchSnapshot.Entry last(TorchSnapshot s) {
    List<TorchSnapshot.Entry> t = s.traceOf(0);
    return t.get(t.size() - 1);
  }

  @Test
  void aFileInAFolderThatCannotBeMadeIsRefusedBeforeTheRun() throws Exception {
    Path plainFile = Files.writeString(dir.resolve("file.txt"), "x");
    Path res = dir.resolve("res");
    CliRun run = replay(res, "-a", "first-fit", "--snapshot-at-oom", plainFile.resolve("snap.pickle").toString());
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --snapshot-at-oom " + plainFile.resolve("snap.pickle") + ": cannot create its folder " + plainFile + " (" + plainFile
        + " is not a folder)\n", run.err());
    assertFalse(Files.exists(res), "nothing ran");
  }

  @Test
  void aFileInAReadOnlyFolderIsRefusedBeforeTheRun() throws Exception {
    Path ro = Files.createDirectory(dir.resolve("ro"));
    assertTrue(ro.toFile().setWritable(false, false));
    org.junit.jupiter.api.Assumptions.assumeFalse(Files.isWritable(ro), "this user writes into read-only folders (root)");
    CliRun run = replay(dir.resolve("res"), "-a", "first-fit", "--snapshot-at-oom", ro.resolve("s.pickle").toString());
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --snapshot-at-oom " + ro.resolve("s.pickle") + ": the folder " + ro + " is not writable\n", run.err());
  }

  @Test
  void badValuesAreRefused() throws Exception {
    CliRun run = replay(dir.resolve("r1"), "-a", "first-fit", "--snapshot-at-oom", ":frag");
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --snapshot-at-oom :frag: expected FILE or FILE:frag, with a file name\n", run.err());
    run = CliRun.of("replay", "churn:ops=100", "--seeds", "1..2", "-a", "first-fit", "--quiet", "-o", dir.resolve("r2").toString(), "--snapshot-at-oom",
        dir.resolve("x.pickle").toString());
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --snapshot-at-oom: not with --seeds (a sweep over seeds keeps no run's state); run one seed\n", run.err());
    run = replay(dir.resolve("r4"), "-a", "first-fit", "--snapshot-at-oom", dir.resolve("same.pickle").toString(), "--torch-snapshot",
        dir.resolve("same.pickle").toString());
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --snapshot-at-oom " + dir.resolve("same.pickle") + ": is also the --torch-snapshot file; give each its own\n", run.err());
    // A file that is not a kvsim snapshot is not replaced without --force.
    Path mine = Files.writeString(dir.resolve("mine.pickle"), "my data");
    run = replay(dir.resolve("r3"), "-a", "first-fit", "--snapshot-at-oom", mine.toString());
    assertEquals(2, run.exitCode());
    assertEquals("my data", Files.readString(mine));
    assertFalse(Files.exists(dir.resolve("r3")));
  }
}

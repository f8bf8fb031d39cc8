package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.testing.CliRun;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code serving --snapshot-at-oom}: a snapshot per system that ran out of KV memory, a line for one that did not, bad input. */
class ServingSnapshotAtOomTest {
  @TempDir Path dir;

  private static final String CROWD = "requests:preset=sharegpt,rate=20,count=150";

  private CliRun serving(String systems, Path pickle, String... more) {
    List<String> args = new java.util.ArrayList<>(List.of("serving", CROWD, "--system", systems, "--kv-memory", "8GiB", "--quiet", "-o",
        dir.resolve("res-" + pickle.getFileName()).toString(), "--snapshot-at-oom", pickle.toString()));
    args.addAll(List.of(more));
    return CliRun.of(args.toArray(new String[0]));
  }

  @Test
  void aSystemThatPreemptsGetsASnapshotOneThatDoesNotGetsALine() throws Exception {
    Path pickle = dir.resolve("kv.pickle");
    CliRun run = serving("vllm,orca-max", pickle).ok();
    Path vllm = dir.resolve("kv-vllm.pickle");
    assertTrue(run.out().contains("snapshot at first OOM: " + vllm + " (vllm, at "), run.out());
    TorchSnapshot s = SnapshotReader.read(vllm);
    assertEquals(1, s.segments().size());
    TorchSnapshot.Segment pool = s.segments().get(0);
    assertEquals(8L << 30, pool.totalSize() + (8L << 30) % pool.blocks().get(0).size(), "the pool of whole blocks in 8 GiB");
    List<TorchSnapshot.Entry> trace = s.traceOf(0);
    assertEquals(1, trace.size());
    assertEquals("oom", trace.get(0).action());
    long free = pool.blocks().stream().filter(b -> !b.allocated()).mapToLong(TorchSnapshot.Block::size).sum();
    assertEquals(free, trace.get(0).deviceFree());
    assertTrue(trace.get(0).size() > free, "more was asked than was free");
    assertFalse(Files.exists(dir.resolve("kv-orca-max.pickle")));
    assertEquals("kvsim: orca-max had no OOM in this run: no snapshot written to " + dir.resolve("kv-orca-max.pickle") + "\n", run.err());
    // The folder records the snapshot and its report links it, relative to the folder; nothing for orca-max.
    Path folder = dir.resolve("res-kv.pickle");
    String links = Files.readString(folder.resolve("snapshots-at-oom.json"));
    com.fasterxml.jackson.databind.JsonNode rows = new com.fasterxml.jackson.databind.ObjectMapper().readTree(links).get("snapshots");
    assertEquals(1, rows.size(), links);
    assertEquals("vllm", rows.get(0).get("system").asText());
    assertEquals("../kv-vllm.pickle", rows.get(0).get("file").asText());
    assertEquals(trace.get(0).size(), rows.get(0).get("size_bytes").asLong());
    String report = Files.readString(folder.resolve("report.html"));
    assertTrue(report.contains("vllm: Snapshot at first OOM: <a href=\"../kv-vllm.pickle\">../kv-vllm.pickle</a>, open in memory_viz (at "), report);
    assertFalse(report.contains("orca-max: Snapshot at first OOM"), report);
  }

  @Test
  void withoutTheOptionAServingFolderHasNoSnapshotLinks() throws Exception {
    Path folder = dir.resolve("plain");
    CliRun.of("serving", CROWD, "--system", "vllm", "--kv-memory", "8GiB", "--quiet", "-o", folder.toString()).ok();
    assertFalse(Files.exists(folder.resolve("snapshots-at-oom.json")));
    assertFalse(Files.readString(folder.resolve("report.html")).contains("Snapshot at first OOM"));
  }

  @Test
  void twoRunsWriteTheSameBytes() throws Exception {
    serving("vattention", dir.resolve("a.pickle")).ok();
    serving("vattention", dir.resolve("b.pickle")).ok();
    assertArrayEquals(Files.readAllBytes(dir.resolve("a.pickle")), Files.readAllBytes(dir.resolve("b.pickle")));
  }

  @Test
  void aBlockPoolHasNoFragmentationOom() throws Exception {
    Path pickle = dir.resolve("f.pickle");
    assertEquals("kvsim: vllm had no fragmentation OOM in this run: no snapshot written to " + pickle + "\n",
        CliRun.of("serving", CROWD, "--system", "vllm", "--kv-memory", "8GiB", "--quiet", "-o", dir.resolve("r2").toString(), "--snapshot-at-oom", pickle + ":frag")
            .ok().err());
    assertFalse(Files.exists(pickle));
  }

  @Test
  void aGridOrAnUnwritableFolderIsRefusedBeforeTheRun() throws Exception {
    CliRun run = serving("vllm", dir.resolve("g.pickle"), "--set", "block-size=16,32");
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: --snapshot-at-oom: writes one snapshot per system, not per grid cell; leave out --set, or run each on its own\n", run.err());
    Path plainFile = Files.writeString(dir.resolve("file.txt"), "x");
    run = serving("vllm", plainFile.resolve("s.pickle"));
    assertEquals(2, run.exitCode());
    assertTrue(run.err().startsWith("kvsim: error: --snapshot-at-oom " + plainFile.resolve("s.pickle") + ": cannot create its folder"), run.err());
    assertFalse(Files.exists(dir.resolve("res-s.pickle")), "nothing ran");
  }
}

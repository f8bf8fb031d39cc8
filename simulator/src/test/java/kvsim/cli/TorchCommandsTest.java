package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.caching.TieBreak;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import kvsim.testing.CliRun;
import kvsim.testing.SharedData;
import kvsim.torch.PickleWriter;
import kvsim.torch.SnapshotRecorder;
import kvsim.trace.L1TraceReader;
import kvsim.trace.TraceEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The torch-replay, torch-inspect and import torch-snapshot commands. */
class TorchCommandsTest {
  private static final long MiB = 1L << 20;
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  /** Records a short pytorch-caching run as a snapshot file. */
  private Path recorded(String name) throws Exception {
    CachingAllocator m = new CachingAllocator(TorchAllocConf.defaults(), TieBreak.ADDRESS, new Region("all", 0, 1L << 30));
    SnapshotRecorder rec = SnapshotRecorder.recording(m);
    List<long[]> live = new ArrayList<>();
    long[] sizes = {1000, 5 * MiB, 12 * MiB, 300_000, 3 * MiB, 25 * MiB};
    for (int round = 0; round < 3; round++) {
      for (long s : sizes) {
        rec.time((long) round * 1_000_000);
        AllocRequest r = new AllocRequest(s + round, Tag.TEMP, false, 0);
        AllocOutcome.Allocated a = (AllocOutcome.Allocated) m.allocate(r);
        rec.allocated(live.size(), r, a.extents(), a.allocatedBytes());
        live.add(new long[] {a.handle(), s + round});
      }
      for (int i = 0; i < live.size(); i += 2) {
        long[] l = live.get(i);
        if (l[0] >= 0) {
          var ex = m.extentsOf(l[0]);
          m.free(l[0]);
          rec.freed(i, l[1], 0, ex);
          l[0] = -1;
        }
      }
    }
    Path file = dir.resolve(name);
    rec.write(file);
    return file;
  }

  @Test
  void torchReplayVerifiesARecordingAndPrintsJson() throws Exception {
    Path file = recorded("run.pickle");
    CliRun run = CliRun.of("torch-replay", file.toString(), "--verify", "--json").ok();
    JsonNode j = JSON.readTree(run.out());
    assertEquals(18, j.get("allocations").asLong());
    assertEquals(18, j.get("address_matches").asLong());
    assertEquals(j.get("segment_decisions").asLong(), j.get("segment_matches").asLong());
    assertTrue(j.get("first_divergence").isNull());
    CliRun text = CliRun.of("torch-replay", file.toString()).ok();
    assertTrue(text.out().contains("address matches           18 (100.00 %)"), text.out());
  }

  @Test
  void torchReplayExitsOneAtADivergenceAndNamesTheEvent() throws Exception {
    Path file = recorded("run.pickle");
    // Replaying with other options changes the decisions: 4 divisions round 300,000 B differently.
    CliRun run = CliRun.of("torch-replay", file.toString(), "--verify", "--json", "--torch-alloc-conf", "roundup_power2_divisions:16");
    assertEquals(1, run.exitCode(), run.err());
    JsonNode d = JSON.readTree(run.out()).get("first_divergence");
    assertFalse(d.isNull());
    assertTrue(d.get("event_index").asLong() >= 0);
    assertFalse(d.get("what").asText().isEmpty());
  }

  @Test
  void theMedium512TrainingSnapshotStopsAtEvent179() {
    Path file = SharedData.require("torch-snapshots/cs336_wedsonlin_medium_512_training.pickle");
    CliRun run = CliRun.of("torch-replay", "--verify", file.toString());
    assertEquals(1, run.exitCode());
    assertTrue(run.out().contains("first divergence at event 179"), run.out());
  }

  @Test
  void torchReplayRefusesAStateOnlySnapshot() {
    Path file = SharedData.require("torch-snapshots/sketchkv2_llm_inference_state.pickle");
    CliRun run = CliRun.of("torch-replay", file.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("no allocation history"), run.err());
  }

  @Test
  void torchInspectPrintsTheTotalsOfAStateOnlySnapshot() throws Exception {
    Path file = SharedData.require("torch-snapshots/flexgen_opt1.3b_oom_state.pickle");
    CliRun run = CliRun.of("torch-inspect", "--json", file.toString()).ok();
    JsonNode t = JSON.readTree(run.out()).get("totals");
    assertEquals(11844714496L, t.get("reserved_bytes").asLong());
    assertEquals(11840159744L, t.get("allocated_bytes").asLong());
    CliRun text = CliRun.of("torch-inspect", file.toString()).ok();
    assertTrue(text.out().contains("(state only)"), text.out());
  }

  @Test
  void importWritesAnL1TraceThatTheReaderAccepts() throws Exception {
    Path file = recorded("run.pickle");
    Path out = dir.resolve("t.jsonl");
    CliRun run = CliRun.of("import", "torch-snapshot", file.toString(), "-o", out.toString()).ok();
    assertTrue(run.out().contains("18 allocations"), run.out());
    int allocs = 0;
    int annotations = 0;
    try (L1TraceReader r = L1TraceReader.open(out)) {
      assertEquals("torch-snapshot", r.header().get("source"));
      for (TraceEvent e; (e = r.next()) != null; ) {
        if (e.op() == TraceEvent.Op.ALLOC) {
          allocs++;
          assertEquals(Tag.TEMP, e.tag());
          assertFalse(e.splittable());
          assertTrue(e.addressBytes() >= 0);
        } else if (e.op() == TraceEvent.Op.ANNOTATE) {
          annotations++;
        }
      }
    }
    assertEquals(18, allocs);
    assertTrue(annotations >= 1, "segment_alloc entries are kept");
  }

  @Test
  void importWritesABinaryTraceForAKvtNameThatConvertsToTheSameJsonl() throws Exception {
    Path file = recorded("run.pickle");
    Path json = dir.resolve("t.jsonl");
    Path bin = dir.resolve("t.kvt");
    CliRun.of("import", "torch-snapshot", file.toString(), "-o", json.toString()).ok();
    CliRun.of("import", "torch-snapshot", file.toString(), "-o", bin.toString()).ok();
    assertEquals(kvsim.trace.BinaryTraceFormat.Kind.L1_BINARY, kvsim.trace.BinaryTraceFormat.sniff(bin));
    Path back = dir.resolve("back.jsonl");
    CliRun.of("convert", bin.toString(), back.toString()).ok();
    assertEquals(Files.readString(json), Files.readString(back), "addresses, streams, tags and annotations survive");
  }

  @Test
  void importOfARealSnapshotAllocatesTheBlocksLiveAtTheStartFirst() throws Exception {
    Path file = SharedData.require("torch-snapshots/cs336_wedsonlin_medium_128_training.pickle");
    Path out = dir.resolve("t.jsonl");
    CliRun run = CliRun.of("import", "torch-snapshot", file.toString(), "-o", out.toString()).ok();
    assertTrue(run.out().contains("6526 allocations, 6305 frees"), run.out());
    try (L1TraceReader r = L1TraceReader.open(out)) {
      long prelude = ((Number) r.header().get("prelude_allocations")).longValue();
      assertTrue(prelude > 0);
      long n = 0;
      while (r.next() != null) {
        n++;
      }
      assertEquals(prelude + 1 + 6526 + 6305, n, "prelude, recording_start, allocs and frees (no segment events here)");
    }
  }

  @Test
  void aDangerousPickleIsRefusedWithExitTwoAndNoOutput() throws Exception {
    Path evil = dir.resolve("evil.pickle");
    Files.write(evil, "cos\nsystem\n(S'echo pwned'\ntR.".getBytes(StandardCharsets.US_ASCII));
    Path out = dir.resolve("t.jsonl");
    CliRun run = CliRun.of("import", "torch-snapshot", evil.toString(), "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("refused: opcode GLOBAL"), run.err());
    assertFalse(Files.exists(out), "no partial output");
    assertEquals(2, CliRun.of("torch-inspect", evil.toString()).exitCode());
  }

  @Test
  void aPickleThatIsNoSnapshotIsABadInput() throws Exception {
    Path p = dir.resolve("list.pickle");
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    PickleWriter.write(Map.of("segments", List.of(Map.of("address", 0))), b);
    Files.write(p, b.toByteArray());
    CliRun run = CliRun.of("torch-inspect", p.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("segments[0]: missing 'total_size'"), run.err());
    assertEquals(2, CliRun.of("torch-inspect", dir.resolve("absent.pickle").toString()).exitCode());
  }

  @Test
  void badOptionsAreUsageErrors() throws Exception {
    Path file = recorded("run.pickle");
    CliRun run = CliRun.of("torch-replay", file.toString(), "--torch-alloc-conf", "max_split_size_mb:2");
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("too small"), run.err());
    assertEquals(2, CliRun.of("torch-replay", file.toString(), "--tie-break", "newest").exitCode());
    assertEquals(2, CliRun.of("import").exitCode());
  }
}

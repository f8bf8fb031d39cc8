package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.testing.CliRun;
import kvsim.trace.L1TraceReader;
import kvsim.trace.TraceEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code replay --torch-snapshot}: exported runs re-import to their events and verify under torch-replay. */
class TorchSnapshotExportTest {
  @TempDir Path dir;

  private static List<TraceEvent> read(Path trace) throws Exception {
    List<TraceEvent> out = new ArrayList<>();
    try (L1TraceReader r = L1TraceReader.open(trace)) {
      for (TraceEvent e; (e = r.next()) != null; ) {
        out.add(e);
      }
    }
    return out;
  }

  @ParameterizedTest(name = "a churn replay on pytorch-caching ''{0}'' re-imports to the same event sequence")
  @ValueSource(strings = {"", "expandable_segments:True"})
  void anExportedChurnRunReimportsToTheSameEventSequence(String conf) throws Exception {
    Path trace = dir.resolve("churn.jsonl");
    CliRun.of("generate", "churn", "--ops=3000", "--seed=5", "-o", trace.toString()).ok();
    Path pickle = dir.resolve("run.pickle");
    List<String> args = new ArrayList<>(List.of("replay", trace.toString(), "-a", "pytorch-caching", "-o", dir.resolve("res").toString(), "--quiet", "--device", "16GiB", "--torch-snapshot", pickle.toString()));
    if (!conf.isEmpty()) {
      args.add("--torch-alloc-conf");
      args.add(conf);
    }
    CliRun run = CliRun.of(args.toArray(new String[0])).ok();
    assertTrue(run.out().contains("torch snapshot: " + pickle), run.out());
    Path back = dir.resolve("back.jsonl");
    CliRun.of("import", "torch-snapshot", pickle.toString(), "-o", back.toString()).ok();

    List<TraceEvent> original = read(trace);
    List<TraceEvent> imported = new ArrayList<>();
    for (TraceEvent e : read(back)) {
      if (e.op() != TraceEvent.Op.ANNOTATE || "oom".equals(e.action())) {
        imported.add(e);
      }
    }
    // Walk both: each original alloc is either the next imported alloc (same size and stream) or
    // was refused (the import holds an oom there); frees of served allocations follow in order.
    Map<Long, Long> importedIdOf = new HashMap<>();
    Set<Long> refused = new HashSet<>();
    int k = 0;
    for (TraceEvent e : original) {
      if (e.op() == TraceEvent.Op.ALLOC) {
        TraceEvent m = imported.get(k++);
        if (m.op() == TraceEvent.Op.ANNOTATE) {
          refused.add(e.id());
          continue;
        }
        assertEquals(TraceEvent.Op.ALLOC, m.op(), "event " + k);
        assertEquals(e.sizeBytes(), m.sizeBytes(), "event " + k);
        assertEquals(e.stream(), m.stream(), "event " + k);
        importedIdOf.put(e.id(), m.id());
      } else if (e.op() == TraceEvent.Op.FREE && !refused.contains(e.id())) {
        TraceEvent m = imported.get(k++);
        assertEquals(TraceEvent.Op.FREE, m.op(), "event " + k);
        assertEquals(importedIdOf.get(e.id()), m.id(), "event " + k);
      }
    }
    assertEquals(imported.size(), k, "nothing left over in the import");
    assertTrue(!refused.isEmpty(), "the churn outgrows the device, so some requests are refused");

    CliRun verify = CliRun.of("torch-replay", "--verify", "--json", pickle.toString()).ok();
    JsonNode j = new ObjectMapper().readTree(verify.out());
    assertEquals(j.get("allocations").asLong(), j.get("address_matches").asLong());
    assertEquals(j.get("segment_decisions").asLong(), j.get("segment_matches").asLong());
    assertTrue(j.get("devices").get(0).get("final_state_matches").asBoolean());
  }

  @Test
  void severalAllocatorsWriteOneSnapshotEach() throws Exception {
    Path pickle = dir.resolve("run.pickle");
    CliRun.of("replay", "churn:ops=300,seed=2", "-a", "pytorch-caching,first-fit", "-o", dir.resolve("res").toString(), "--quiet", "--torch-snapshot", pickle.toString()).ok();
    assertTrue(Files.exists(dir.resolve("run-pytorch-caching.pickle")));
    assertTrue(Files.exists(dir.resolve("run-first-fit.pickle")));
    CliRun inspect = CliRun.of("torch-inspect", "--json", dir.resolve("run-first-fit.pickle").toString()).ok();
    JsonNode t = new ObjectMapper().readTree(inspect.out()).get("totals");
    assertEquals(1, t.get("segments").asLong(), "an arena model's region is one segment");
  }

  @Test
  void aWorkloadSpecWithTheConfStringWritesASnapshotOfTheAllocatorItNames() throws Exception {
    Path yaml = dir.resolve("w.yaml");
    Files.writeString(yaml, String.join("\n",
        "workload: churn",
        "params: {ops: 800, seed: 3}",
        "device: 16GiB",
        "allocators: [pytorch-caching]",
        "torch-alloc-conf: \"expandable_segments:True,max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,>:8]\"",
        ""));
    Path pickle = dir.resolve("w.pickle");
    CliRun.of("replay", yaml.toString(), "-o", dir.resolve("res").toString(), "--quiet", "--torch-snapshot", pickle.toString()).ok();
    CliRun verify = CliRun.of("torch-replay", "--verify", "--json", pickle.toString()).ok();
    JsonNode d = new ObjectMapper().readTree(verify.out()).get("devices").get(0);
    assertTrue(d.get("torch_alloc_conf").asText().contains("expandable_segments:True"), d.toString());
    assertTrue(d.get("torch_alloc_conf").asText().contains("max_split_size_mb:512"), d.toString());
    assertEquals(d.get("allocations").asLong(), d.get("address_matches").asLong());
  }
}

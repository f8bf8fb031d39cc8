package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim serving}: a table and a byte-identical summary per input; bad options are exit 2 with nothing written. */
class ServingCommandTest {
  @TempDir Path dir;

  @Test
  void runsAGeneratorAndWritesTheSameSummaryTwice() throws IOException {
    Path a = dir.resolve("a");
    Path b = dir.resolve("b");
    String[] common = {"serving", "requests:preset=azure-code,rate=8,count=300", "--model", "llama-3-8b", "--kv-memory", "4GiB", "--check", "-q"};
    CliRun run = CliRun.of(concat(common, "-o", a.toString())).ok();
    assertTrue(run.out().contains("vllm "), run.out());
    CliRun.of(concat(common, "-o", b.toString())).ok();
    assertEquals(Files.readString(a.resolve("summary.json")), Files.readString(b.resolve("summary.json")));
    JsonNode s = new ObjectMapper().readTree(a.resolve("summary.json").toFile());
    assertEquals("kvsim-serving-summary", s.get("format").asText());
    JsonNode vllm = s.get("systems").get(0);
    assertEquals("vllm", vllm.get("system").asText());
    assertEquals(300, vllm.get("requests_arrived").asLong());
    assertEquals(300, vllm.get("requests_finished").asLong() + vllm.get("requests_rejected").asLong());
    double sum = 0;
    for (String c : new String[] {"token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle"}) {
      sum += vllm.get("kv_breakdown").get(c).get("mean").asDouble();
    }
    assertEquals(1.0, sum, 1e-9);
    assertTrue(Files.exists(a.resolve(".kvsim-result")));
    assertEquals(Files.readString(a.resolve("timeseries.csv")), Files.readString(b.resolve("timeseries.csv")));
    assertEquals(Files.readString(a.resolve("kv-breakdown.svg")), Files.readString(b.resolve("kv-breakdown.svg")));
    assertTrue(Files.size(a.resolve("kv-breakdown.png")) > 0);
    java.util.List<String> lines = Files.readAllLines(a.resolve("timeseries.csv"));
    assertEquals("system,iteration,t_ns,running,waiting,batch_size,scheduled_tokens,preemptions,finished,"
        + "token_states,reserved_future,internal_fragmentation,external_fragmentation,idle", lines.get(0));
    assertTrue(lines.size() > 10 && lines.size() <= 2 * 2048 + 2, "rows: " + lines.size());
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      double share = 0;
      for (int i = f.length - 5; i < f.length; i++) {
        share += Double.parseDouble(f[i]);
      }
      assertEquals(1.0, share, 1e-5, line);
    }
  }

  @Test
  void tooLittleKvMemoryForOneSequenceIsBadInput() {
    Path out = dir.resolve("out");
    CliRun run = CliRun.of("serving", "requests:count=5", "--model", "opt-13b", "--kv-memory", "1GiB", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("fewer than max_model_len 2048"), run.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void anUnknownSystemIsNamed() {
    CliRun run = CliRun.of("serving", "requests:count=5", "--system", "orca");
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: unknown system 'orca' (known: vllm, vllm-v0, orca-max, orca-pow2, orca-oracle, vattention, hf-naive)", run.err().strip());
  }

  @Test
  void theOrcaBaselinesAndHfNaiveRunWithTheirParts() throws IOException {
    Path out = dir.resolve("orca");
    CliRun run = CliRun.of("serving", "requests:preset=sharegpt,rate=2,count=40", "--system", "orca-max,orca-pow2,orca-oracle,hf-naive",
        "--model", "opt-13b", "--device", "a100-40", "--kv-memory", "12GiB", "--check", "-q", "-o", out.toString()).ok();
    assertTrue(run.out().contains("orca-oracle "), run.out());
    JsonNode systems = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems");
    String[] reservations = {"max", "pow2", "oracle", "grow"};
    for (int i = 0; i < 4; i++) {
      JsonNode sys = systems.get(i);
      long finished = sys.get("requests_finished").asLong();
      assertEquals(40, finished + sys.get("requests_rejected").asLong(), sys.get("system").asText());
      assertEquals(0, sys.get("preemptions").asLong());
      assertEquals(reservations[i], sys.get("parts").get("reservation").asText());
      assertEquals(i < 3 ? "buddy" : "pytorch-caching", sys.get("parts").get("allocator").asText());
      assertEquals(finished, sys.get("kv_manager").get("reservations").asLong());
    }
    assertTrue(systems.get(3).get("kv_manager").get("copies").asLong() > 0, "hf-naive grows by copying");
  }

  @Test
  void anL1GeneratorIsNoRequestWorkload() {
    CliRun run = CliRun.of("serving", "churn:ops=10");
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("churn generates allocator events, not LLM requests"), run.err());
  }

  @Test
  void parallelSamplesAndBeamsRunOnEverySystemAndReportTheirGroups() throws IOException {
    Path trace = dir.resolve("n.jsonl");
    Files.writeString(trace, "{\"format\":\"kvsim-requests\",\"version\":1}\n"
        + "{\"id\":0,\"t\":0,\"prompt_tokens\":40,\"output_tokens\":30,\"n\":3}\n"
        + "{\"id\":1,\"t\":1000,\"prompt_tokens\":20,\"output_tokens\":25,\"beam_width\":4}\n");
    Path out = dir.resolve("out");
    CliRun run = CliRun.of("serving", trace.toString(), "--system", "vllm,vllm-v0,orca-oracle,hf-naive", "--kv-memory", "4GiB", "--max-model-len", "1024", "--check", "-q",
        "-o", out.toString()).ok();
    JsonNode systems = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems");
    for (JsonNode sys : systems) {
      String name = sys.get("system").asText();
      assertEquals(2, sys.get("requests_finished").asLong(), name);
      assertEquals(3 * 30 + 4 * 25, sys.get("output_tokens").asLong(), name + ": every sequence's tokens");
      JsonNode g = sys.get("sequence_groups");
      assertEquals(7, g.get("sequences").asLong(), name);
      assertEquals(2, g.get("requests_multi_sequence").asLong(), name);
    }
    assertTrue(systems.get(1).get("sequence_groups").get("cow_copies").asLong() > 0, "v0 copies shared blocks on write");
    assertTrue(systems.get(1).get("sequence_groups").get("sharing_saving").asDouble() > 0, "v0 shares the prompt");
    assertEquals(2 + 3, systems.get(2).get("sequence_groups").get("fork_copies").asLong() - systems.get(2).get("sequence_groups").get("beam_replacements").asLong(),
        "orca copies the prompt into each other sample and beam, and a beam into each replaced one");
    assertTrue(run.out().contains("vllm-v0"), run.out());
  }

  @Test
  void theEmittedTraceReplaysOnTheSameAllocatorWithTheSameRefusals() throws IOException {
    Path out = dir.resolve("out");
    Path ops = dir.resolve("ops.jsonl");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=120,n=2", "--system", "orca-oracle,vllm", "--model", "opt-13b", "--device", "a100-40",
        "--kv-memory", "6GiB", "-q", "--emit-trace", ops.toString(), "-o", out.toString()).ok();
    assertFalse(Files.exists(ops), "with several systems, one file per system");
    JsonNode systems = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems");
    JsonNode orca = systems.get(0).get("kv_manager");
    assertTrue(orca.get("reservations_refused").asLong() > 0, "the run meets refusals");

    JsonNode buddy = replay(dir.resolve("ops-orca-oracle.jsonl"), "buddy");
    // A group's reservation that fails part-way frees the buffers it got: allocations the summary's
    // reservations (whole groups) do not count.
    assertTrue(buddy.get("alloc_count").asLong() >= orca.get("reservations").asLong());
    assertEquals(orca.get("reservations_refused").asLong(), buddy.get("oom_count").asLong());
    assertEquals(orca.get("fragmentation_refusals").asLong(), buddy.get("fragmentation_oom_count").asLong());
    assertEquals(0, buddy.get("metrics").get("live_allocations").get("final").asLong(), "every buffer is freed");

    JsonNode paged = replay(dir.resolve("ops-vllm.jsonl"), "paged");
    assertEquals(0, paged.get("oom_count").asLong(), "the block manager never asks for a block it does not have");
    assertEquals(paged.get("alloc_count").asLong(), paged.get("free_count").asLong(), "every block taken is released");
    long blocks = 6L * 1024 * 1024 * 1024 / (16 * 819200);
    assertTrue(paged.get("metrics").get("live_allocations").get("peak").asLong() <= blocks - 1);
  }

  private JsonNode replay(Path trace, String allocator) throws IOException {
    Path out = dir.resolve("replay-" + allocator);
    CliRun.of("replay", trace.toString(), "-a", allocator, "--quiet", "-o", out.toString()).ok();
    return new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("allocators").get(0);
  }

  @Test
  void theNaivePlanPutsActivationsWithTheKvAndAnActivationOomAbortsTheBatch() throws IOException {
    Path out = dir.resolve("out");
    Path ops = dir.resolve("ops.jsonl");
    CliRun.of("serving", "requests:preset=sharegpt,rate=2,count=300", "--system", "orca-oracle", "--plan", "naive", "--model", "opt-13b",
        "--device", "a100-40", "--kv-memory", "12GiB", "--check", "-q", "--emit-trace", ops.toString(), "-o", out.toString()).ok();
    JsonNode s = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertEquals("naive", s.get("plan").asText());
    JsonNode orca = s.get("systems").get(0);
    assertEquals("naive", orca.get("parts").get("plan").asText());
    assertTrue(orca.get("activation_oom_count").asLong() > 0, "a full buddy region refuses a batch's activations");
    assertEquals(300, orca.get("requests_finished").asLong() + orca.get("requests_rejected").asLong() + orca.get("requests_aborted").asLong(),
        "every request finishes, is rejected or is aborted, once");
    assertTrue(Files.readString(ops).contains("\"tag\":\"activation\""), "the trace holds the activations");
    JsonNode buddy = replay(ops, "buddy");
    assertEquals(orca.get("kv_manager").get("reservations_refused").asLong() + orca.get("activation_oom_count").asLong(),
        buddy.get("oom_count").asLong(), "the replay meets the same refusals, KV and activations");
  }

  @Test
  void hfNaiveUsesTheNaivePlanAndPagedSystemsRefuseIt() throws IOException {
    Path out = dir.resolve("out");
    CliRun.of("serving", "requests:preset=sharegpt,rate=2,count=20", "--system", "hf-naive", "--model", "opt-13b", "--device", "a100-40",
        "--kv-memory", "12GiB", "-q", "-o", out.toString()).ok();
    JsonNode naive = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems").get(0);
    assertEquals("naive", naive.get("parts").get("plan").asText());
    assertEquals(0, naive.get("activation_oom_count").asLong());
    Path out2 = dir.resolve("out2");
    CliRun run = CliRun.of("serving", "requests:count=5", "--system", "vllm", "--plan", "naive", "-o", out2.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("--plan: naive: vllm keeps its KV in a block pool"), run.err());
    assertFalse(Files.exists(out2));
  }

  @Test
  void samplesAndABeamAtOnceAreRefused() throws IOException {
    Path trace = dir.resolve("nb.jsonl");
    Files.writeString(trace, "{\"format\":\"kvsim-requests\",\"version\":1}\n{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":5,\"n\":2,\"beam_width\":2}\n");
    Path out = dir.resolve("out");
    CliRun run = CliRun.of("serving", trace.toString(), "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("nb.jsonl:2: beam_width:"), run.err());
    assertFalse(Files.exists(out));
  }

  private static String[] concat(String[] a, String... b) {
    String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}

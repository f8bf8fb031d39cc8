package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Serving options mean what they say: a given KV size must fit the device beside the weights and
 * activations, and {@code --seed} seeds the workload (the beam selection has {@code --beam-seed}).
 */
class HonestServingTest {
  @TempDir Path dir;

  private JsonNode summary(Path folder) throws IOException {
    return new ObjectMapper().readTree(folder.resolve("summary.json").toFile());
  }

  @Test
  void aKvMemoryBesideWeightsLargerThanTheDeviceIsExitTwoWithTheNumbers() {
    Path out = dir.resolve("70b");
    CliRun run = CliRun.of("serving", "requests:count=5", "--model", "llama-3-70b", "--device", "h100-80", "--kv-memory", "40GiB", "-q",
        "-o", out.toString());
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertEquals("kvsim: error: --kv-memory: 40GiB (40.00 GiB) of KV memory beside llama-3-70b's weights (131.42 GiB) and activations"
        + " (224.00 MiB, 2048 tokens) needs 171.64 GiB, more than h100-80's 80.00 GiB; the weights and activations alone do not fit:"
        + " give a larger --device", run.err().strip());
    assertFalse(Files.exists(out));

    CliRun capacity = CliRun.of("capacity", "requests:count=5", "--model", "llama-2-7b", "--kv-memory", "70GiB", "--slo", "e2e.mean<=1s",
        "-o", out.toString());
    assertEquals(2, capacity.exitCode(), capacity.out() + capacity.err());
    assertTrue(capacity.err().contains("needs 82.63 GiB, more than h100-80's 80.00 GiB; at most 67.37 GiB of KV memory fits"), capacity.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void everyGridCellsKvMemoryIsChecked() {
    Path out = dir.resolve("grid");
    CliRun run = CliRun.of("serving", "requests:count=5", "--set", "kv-memory=12GiB,70GiB", "-q", "-o", out.toString());
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: --set kv-memory=70GiB: 70GiB (70.00 GiB) of KV memory beside llama-2-7b's weights"), run.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void theNaivePlanCountsNoActivationsBesideTheKv() throws IOException {
    // llama-2-7b: 80 GiB − 12.55 GiB of weights leaves 69,068 MiB; the two-pool plan keeps 86 MiB of
    // activations apart (68,982 MiB left), the naive plan puts them into the KV region.
    CliRun paged = CliRun.of("serving", "requests:count=3", "--system", "vllm", "--kv-memory", "69000MiB", "-q", "-o", dir.resolve("p").toString());
    assertEquals(2, paged.exitCode(), paged.out() + paged.err());
    assertTrue(paged.err().contains("at most 67.37 GiB of KV memory fits"), paged.err());
    Path naive = dir.resolve("n");
    CliRun.of("serving", "requests:count=3", "--system", "hf-naive", "--kv-memory", "69000MiB", "-q", "-o", naive.toString()).ok();
    assertEquals(69000L << 20, summary(naive).get("kv_memory_bytes").asLong());
  }

  @Test
  void aSuitesKvMemoryThatDoesNotFitIsReportedAtItsLine() throws IOException {
    Path suite = dir.resolve("big.yaml");
    Files.writeString(suite, """
        version: 1
        watch:
          serving:
            - {metric: requests_finished, better: higher}
        scenarios:
          - name: big
            serving: requests:count=5,seed=1
            systems: [vllm]
            model: llama-3-70b
            kv-memory: 40GiB
        """);
    CliRun run = CliRun.of("regress", suite.toString(), "--baseline", dir.resolve("b").toString(), "--update", "--quiet");
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + suite + ":10: scenarios[0].kv-memory: 40GiB (40.00 GiB) of KV memory beside"), run.err());
  }

  @Test
  void seedSeedsTheWorkloadGeneratorAsASweepSeedDoes() throws IOException {
    Path a = dir.resolve("a");
    Path b = dir.resolve("b");
    Path c = dir.resolve("c");
    CliRun.of("serving", "requests:preset=sharegpt,count=40,rate=4", "--seed", "7", "-q", "-o", a.toString()).ok();
    CliRun.of("serving", "requests:preset=sharegpt,count=40,rate=4", "--seed", "8", "-q", "-o", b.toString()).ok();
    CliRun.of("serving", "requests:preset=sharegpt,count=40,rate=4,seed=7", "-q", "-o", c.toString()).ok();
    JsonNode sa = summary(a);
    assertEquals("requests:preset=sharegpt,count=40,rate=4,seed=7", sa.get("workload").asText());
    assertFalse(sa.has("beam_seed"), sa.toString());
    JsonNode va = sa.get("systems").get(0);
    JsonNode vb = summary(b).get("systems").get(0);
    assertNotEquals(va.get("output_tokens").asLong(), vb.get("output_tokens").asLong(), "another seed draws other lengths");
    assertEquals(va.get("output_tokens").asLong(), summary(c).get("systems").get(0).get("output_tokens").asLong(), "--seed 7 is seed=7");
    assertEquals(Files.readString(a.resolve("timeseries.csv")), Files.readString(c.resolve("timeseries.csv")));
  }

  @Test
  void beamSeedIsEchoedAndLeavesTheWorkloadAsWritten() throws IOException {
    Path a = dir.resolve("a");
    CliRun.of("serving", "requests:count=10,rate=4,beam=3", "--system", "vllm-v0", "--beam-seed", "5", "-q", "-o", a.toString()).ok();
    JsonNode s = summary(a);
    assertEquals(5, s.get("beam_seed").asLong());
    assertEquals("requests:count=10,rate=4,beam=3", s.get("workload").asText());
  }

  @Test
  void seedOnARecordedTraceOrTwiceIsExitTwoAndWritesNothing() throws IOException {
    Path trace = dir.resolve("t.jsonl");
    CliRun.of("generate", "requests", "--count", "5", "-o", trace.toString()).ok();
    Path out = dir.resolve("out");
    CliRun recorded = CliRun.of("serving", trace.toString(), "--seed", "3", "-q", "-o", out.toString());
    assertEquals(2, recorded.exitCode(), recorded.out() + recorded.err());
    assertEquals("kvsim: error: --seed: has no effect on the recorded trace " + trace + ": its requests and times are as recorded"
        + " (--seed seeds a requests: or lengths: workload; --beam-seed the beam selection)", recorded.err().strip());
    assertFalse(Files.exists(out));
    CliRun burst = CliRun.of("capacity", "burstgpt:../workloads/burstgpt-sample.csv,zero-output=drop", "--seed", "3", "--slo", "e2e.mean<=1s",
        "-o", out.toString());
    assertEquals(2, burst.exitCode(), burst.out() + burst.err());
    assertTrue(burst.err().contains("--seed: has no effect on the recorded trace burstgpt:"), burst.err());
    CliRun twice = CliRun.of("serving", "requests:count=5,seed=2", "--seed", "3", "-q", "-o", out.toString());
    assertEquals(2, twice.exitCode(), twice.out() + twice.err());
    assertTrue(twice.err().contains("--seed: the workload requests:count=5,seed=2 fixes its own seed; remove seed= from it or --seed"), twice.err());
    assertFalse(Files.exists(out));
  }
}

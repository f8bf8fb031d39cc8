package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.testing.CliRun;
import kvsim.testing.SharedData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim reproduce}: the folder it writes, its JSON, and its refusals. */
class ReproduceCommandTest {
  @TempDir Path tmp;

  @Test
  void seed000ChurnAgreesWithTheArticlesCodeInDistribution() throws Exception {
    Path dir = tmp.resolve("churn");
    CliRun run = CliRun.of("reproduce", "seed000-churn", "--json", "-o", dir.toString()).ok();
    JsonNode n = new ObjectMapper().readTree(run.out());
    // The article's Python gives a median peak of 0.985 and 309.9 failed allocations at 5,000 operations.
    assertEquals(0.985, n.get("5000").get("peak_external_fragmentation_median").asDouble(), 0.01);
    assertEquals(309.9, n.get("5000").get("failed_allocations_mean").asDouble(), 15.0);
    assertEquals(0.059, n.get("1000").get("peak_external_fragmentation_median").asDouble(), 0.01);
    for (String f : new String[] {"README.md", "report.html", "reproduction.json", "ops-5000/summary.json", "ops-5000/report.html"}) {
      assertTrue(Files.isRegularFile(dir.resolve(f)), f + " missing");
    }
    assertTrue(Files.readString(dir.resolve("README.md")).contains("not given"), "the article's text column says its numbers are not here");
  }

  @Test
  void vllmFig2GivesTheFourUsesOfUsedMemoryPerSystemSummingToOne() throws Exception {
    CliRun run = CliRun.of("reproduce", "vllm-fig2", "--json", "-o", tmp.resolve("fig2").toString()).ok();
    JsonNode n = new ObjectMapper().readTree(run.out());
    for (String system : new String[] {"orca-max", "orca-pow2", "orca-oracle", "vllm"}) {
      for (String window : new String[] {"used_memory_steady", "used_memory_whole_run"}) {
        JsonNode f = n.get(system).get(window);
        double sum = f.get("token_states").asDouble() + f.get("reserved_future").asDouble() + f.get("internal_fragmentation").asDouble()
            + f.get("external_fragmentation").asDouble();
        assertEquals(1.0, sum, 1e-9, system + " " + window);
      }
      double idle = n.get(system).get("idle_steady").asDouble();
      assertTrue(idle >= 0 && idle < 1, system + ": idle share " + idle);
    }
    // Orca reserves for the future and vLLM only a block: the paper's ordering of token states.
    JsonNode vllm = n.get("vllm").get("used_memory_steady");
    JsonNode oracle = n.get("orca-oracle").get("used_memory_steady");
    JsonNode max = n.get("orca-max").get("used_memory_steady");
    assertTrue(vllm.get("token_states").asDouble() > oracle.get("token_states").asDouble());
    assertTrue(oracle.get("token_states").asDouble() > max.get("token_states").asDouble());
  }

  @Test
  void anUnknownNameIsBadInputAndWritesNothing() {
    CliRun run = CliRun.of("reproduce", "fig99", "-o", tmp.resolve("x").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("unknown reproduction 'fig99'"), run.err());
    assertTrue(Files.notExists(tmp.resolve("x")));
  }

  @Test
  void torchSnapshotsWithoutTheSnapshotsIsBadInputAndWritesNothing() {
    CliRun run = CliRun.of("reproduce", "torch-snapshots", "--snapshots", tmp.resolve("none").toString(), "-o", tmp.resolve("t").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("none: no such folder"), run.err());
    assertTrue(Files.notExists(tmp.resolve("t")));
  }

  @Test
  void torchSnapshotsReplaysEverySharedSnapshot() throws Exception {
    Path shared = SharedData.require("torch-snapshots");
    CliRun run = CliRun.of("reproduce", "torch-snapshots", "--snapshots", shared.toString(), "--json", "-o", tmp.resolve("t").toString()).ok();
    JsonNode n = new ObjectMapper().readTree(run.out());
    JsonNode training = n.get("cs336_wedsonlin_medium_128_training.pickle");
    assertEquals(training.get("allocations").asLong(), training.get("address_matches").asLong(), "this recording replays exactly");
    assertTrue(n.get("flexgen_opt1.3b_oom_state.pickle").get("allocations").isNull(), "a state-only snapshot has nothing to replay");
  }
}

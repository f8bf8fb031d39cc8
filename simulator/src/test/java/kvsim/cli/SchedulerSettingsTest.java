package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.serving.VllmV1Scheduler;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The settings {@code scheduler-reserve-full-isl} and {@code async-scheduling} (vLLM v1's
 * full-prompt admission gate and asynchronous scheduling): given as options and {@code --set},
 * read by the vLLM v1 systems only, echoed in the summary with the vLLM modelled.
 */
class SchedulerSettingsTest {
  @TempDir Path dir;

  private static final String WORKLOAD = "requests:preset=sharegpt,rate=20,count=60";

  private static void assertOneLineError(CliRun run, String message) {
    assertEquals(2, run.exitCode(), run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    assertTrue(err.startsWith("kvsim: error: " + message), err);
  }

  @Test
  void theSummaryEchoesBothSettingsAndTheVllmModelled() throws IOException {
    Path on = dir.resolve("on");
    Path off = dir.resolve("off");
    CliRun.of("serving", WORKLOAD, "--model", "opt-13b", "--device", "a100-40", "--kv-memory", "2GiB", "--check", "-q", "-o", on.toString()).ok();
    CliRun.of("serving", WORKLOAD, "--model", "opt-13b", "--device", "a100-40", "--kv-memory", "2GiB", "--check", "-q", "-o", off.toString(),
        "--scheduler-reserve-full-isl", "false", "--async-scheduling", "false").ok();
    ObjectMapper json = new ObjectMapper();
    JsonNode pOn = json.readTree(on.resolve("summary.json").toFile()).get("systems").get(0).get("parts");
    JsonNode pOff = json.readTree(off.resolve("summary.json").toFile()).get("systems").get(0).get("parts");
    assertTrue(pOn.get("scheduler_reserve_full_isl").asBoolean(), pOn.toString());
    assertTrue(pOn.get("async_scheduling").asBoolean(), pOn.toString());
    assertFalse(pOff.get("scheduler_reserve_full_isl").asBoolean(), pOff.toString());
    assertFalse(pOff.get("async_scheduling").asBoolean(), pOff.toString());
    assertEquals(VllmV1Scheduler.UPSTREAM, pOn.get("models").asText());
  }

  @Test
  void aValueOtherThanTrueOrFalseIsRefusedWhereItWasGiven() {
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--scheduler-reserve-full-isl", "yes", "-q"),
        "--scheduler-reserve-full-isl: unknown scheduler-reserve-full-isl 'yes' (known: true, false)");
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--set", "async-scheduling=true,1", "-q"), "--set async-scheduling=1: unknown async-scheduling '1'");
  }

  @Test
  void systemsWithoutVllmV1sSchedulerDoNotReadThem() {
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--system", "orca-max", "--async-scheduling", "false", "-q"),
        "--async-scheduling false: orca-max does not read async-scheduling (vllm, vattention do)");
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--system", "vllm-v0", "--set", "scheduler-reserve-full-isl=true,false", "-q"),
        "--set scheduler-reserve-full-isl=true,false: vllm-v0 does not read scheduler-reserve-full-isl (vllm, vattention do)");
  }

  @Test
  void aWhatIfGridRunsTheGateOnAndOff() throws IOException {
    Path out = dir.resolve("grid");
    CliRun run = CliRun.of("serving", WORKLOAD, "--model", "opt-13b", "--device", "a100-40", "--kv-memory", "2GiB", "-q", "-o", out.toString(),
        "--set", "scheduler-reserve-full-isl=true,false").ok();
    assertTrue(run.out().contains("scheduler-reserve-full-isl"), run.out());
    assertTrue(Files.exists(out), "the grid wrote its folder");
  }
}

package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --tensor-parallel} and the multi-GPU presets on the command line: one-line errors for what cannot be split, the presets listed. */
class TensorParallelCommandTest {
  private static final String WORKLOAD = "requests:preset=vllm-sharegpt,rate=1,count=10,seed=1";

  @TempDir Path tmp;

  private static void assertOneLineError(CliRun run, String message) {
    assertEquals(2, run.exitCode(), run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    assertEquals("kvsim: error: " + message, err);
  }

  @Test
  void aDegreeOtherThanThePresetsIsOneLineAtTheOption() {
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--model", "opt-66b", "--device", "4xa100-40", "--tensor-parallel", "2", "-o", tmp.resolve("a").toString()),
        "--tensor-parallel: 2 contradicts --device 4xa100-40, which is 4 GPUs; give 4 or a single-GPU device (a100-40)");
  }

  @Test
  void aDegreeThatDoesNotDivideTheHeadsOrExceedsANodeIsOneLine() {
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--model", "opt-13b", "--device", "a100-80", "--tensor-parallel", "3", "-o", tmp.resolve("b").toString()),
        "--tensor-parallel: opt-13b has 40 attention heads, which 3 GPUs cannot split evenly (the degree must divide them)");
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--model", "opt-66b", "--device", "a100-40", "--tensor-parallel", "16", "-o", tmp.resolve("c").toString()),
        "--tensor-parallel: 16 GPUs: kvsim models one node of at most 8 GPUs (pipeline parallelism and several nodes are not modelled)");
    assertOneLineError(CliRun.of("serving", WORKLOAD, "--model", "opt-66b", "--device", "4xa100-40", "--cost-model", "profile", "-o", tmp.resolve("d").toString()),
        "--cost-model: the built-in profile tables were measured at tensor-parallel degree 1; a run on 4 GPUs takes measured-roofline or roofline (README, \"Several GPUs\")");
  }

  @Test
  void aSplitRunWritesItsResultsAndListShowsThePresets() {
    CliRun run = CliRun.of("serving", WORKLOAD, "--model", "opt-66b", "--device", "4xa100-40", "-q", "-o", tmp.resolve("ok").toString());
    assertEquals(0, run.exitCode(), run.err());
    CliRun list = CliRun.of("list");
    assertTrue(list.out().contains("2xh100-80, 4xa100-40, 4xh100-80, 8xa100-80, 8xh100-80"), list.out());
    assertTrue(list.out().contains("opt-66b") && list.out().contains("opt-175b"), list.out());
  }
}

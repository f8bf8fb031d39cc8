package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Validate first, then run: {@code sweep}, {@code regress}, {@code serving} and {@code capacity}
 * check every cell before the first runs, so bad input is exit status 2 with one line naming the
 * file, line and field, and leaves no folder behind, whether the output is given with {@code -o}
 * or is the default {@code results/runs/} under the working folder.
 */
class ValidateFirstTest {
  @TempDir Path tmp;

  private Path write(String name, String text) throws IOException {
    Path f = tmp.resolve(name);
    Files.writeString(f, text.replace("\\n", "\n"));
    return f;
  }

  private static void assertOneLineError(CliRun run, String start, String contains) {
    assertEquals(2, run.exitCode(), run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    assertTrue(err.startsWith("kvsim: error: " + start), err);
    assertTrue(err.contains(contains), err);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "unknown allocator | workloads: [\"churn:ops=50\"]\\nallocators: [first-fit, nosuch-alloc]\\n"
            + " | grid.yaml:2: allocators: | unknown allocator 'nosuch-alloc'",
        "missing trace | workloads: [\"churn:ops=50\", missing.jsonl]\\nallocators: [first-fit]\\n"
            + " | grid.yaml:1: workloads: | missing.jsonl: no such trace file",
        "bad value after good cells | workloads: [\"churn:ops=50\"]\\nallocators: [first-fit, best-fit]\\nset:\\n  first-fit.alignment: [512, banana]\\n"
            + " | grid.yaml:4: set.first-fit.alignment: | option alignment='banana': not a size",
        "alignment not a power of two | workloads: [\"churn:ops=50\"]\\nallocators: [first-fit]\\nset:\\n  first-fit.alignment:\\n    - 512\\n    - 3\\n"
            + " | grid.yaml:6: set.first-fit.alignment: | option alignment='3': must be a power of two",
        "option of an allocator not in the grid | workloads: [\"churn:ops=50\"]\\nallocators: [first-fit]\\nset: {best-fit.alignment: [4KiB]}\\n"
            + " | grid.yaml:3: set.best-fit.alignment: | 'best-fit' is not among the grid's allocators [first-fit]",
        "unknown device | workloads: [\"churn:ops=50\"]\\nallocators: [first-fit]\\ndevice:\\n  - h100-80\\n  - h900\\n"
            + " | grid.yaml:5: device: | unknown device 'h900'",
        "serving key a system does not read | workloads: [\"requests:count=10\"]\\nsystems: [vllm-v0, vllm]\\nset: {watermark: [0.01, 0.05]}\\n"
            + " | grid.yaml:3: set.watermark: | vllm does not read watermark (vllm-v0 does)",
        "serving value not a number | workloads: [\"requests:count=10\"]\\nsystems: [vllm]\\nset:\\n  block-size: [16, banana]\\n"
            + " | grid.yaml:4: set.block-size: | 'banana' is not a whole number",
        "serving plan a system cannot take | workloads: [\"requests:count=10\"]\\nsystems: [vllm]\\nset:\\n  plan: [two-pool, naive]\\n"
            + " | grid.yaml:4: set.plan: | vllm keeps its KV in a block pool",
        "combination a build refuses | workloads: [\"requests:count=10\"]\\nsystems: [orca-max]\\nmodel: opt-13b\\nset:\\n  kv-memory: [12GiB, 1700MiB]\\n"
            + " | grid.yaml:5: set.kv-memory: | gives one sequence at most 1310 tokens",
      })
  void aBadGridIsExitTwoAtItsLineAndLeavesNoFolder(String label, String grid, String where, String problem) throws IOException {
    Path g = write("grid.yaml", grid);
    Path out = tmp.resolve("out");
    CliRun run = CliRun.of("sweep", g.toString(), "-o", out.toString(), "-q");
    assertOneLineError(run, tmp + "/" + where.strip() + " ", problem.strip());
    assertFalse(Files.exists(out), "no result folder");
  }

  @Test
  void aBadSuiteOrSetIsExitTwoAtItsLineAndWritesNoBaseline() throws IOException {
    Path baselines = tmp.resolve("baselines");
    Path serving = write("serving.yaml", "version: 1\\nwatch:\\n  serving:\\n    - {metric: preemptions, better: lower}\\nscenarios:\\n"
        + "  - name: s\\n    serving: requests:count=10\\n    systems: [vllm, orca-max]\\n    block-size: 8\\n");
    assertOneLineError(CliRun.of("regress", serving.toString(), "--baseline", baselines.toString(), "--update", "--quiet"),
        serving + ":9: scenarios[0].block-size: orca-max does not read block-size (vllm, vllm-v0 do)", "");
    String l1 = "version: 1\\nwatch:\\n  allocators:\\n    - {metric: oom_count, better: lower}\\nscenarios:\\n"
        + "  - name: a\\n    workload: churn:ops=50\\n    allocators: [first-fit]\\n";
    Path option = write("option.yaml", l1 + "    options: {first-fit: {alignment: 3}}\\n");
    assertOneLineError(CliRun.of("regress", option.toString(), "--baseline", baselines.toString(), "--update", "--quiet"),
        option + ":9: scenarios[0].options.first-fit.alignment: ", "option alignment='3': must be a power of two");
    Path good = write("good.yaml", l1);
    assertOneLineError(CliRun.of("regress", good.toString(), "--baseline", baselines.toString(), "--update", "--quiet", "--set", "first-fit.alignment=3"),
        "--set first-fit.alignment=3: ", "must be a power of two");
    assertFalse(Files.exists(baselines), "no baseline folder");
    CliRun.of("regress", good.toString(), "--baseline", baselines.toString(), "--update", "--quiet").ok();
    assertTrue(Files.exists(baselines.resolve("good/a.json")), "the same suite without the mistake records its baseline");
  }

  @Test
  void servingAndCapacityGridsRefuseAKeyASystemDoesNotReadAndWriteNothing() {
    Path out = tmp.resolve("out");
    assertOneLineError(CliRun.of("serving", "requests:count=10", "--set", "watermark=0.05", "-q", "-o", out.toString()),
        "--set watermark=0.05: vllm does not read watermark (vllm-v0 does)", "");
    assertOneLineError(CliRun.of("serving", "requests:count=10", "--system", "vllm-v0,vllm", "--set", "watermark=0.01,0.05", "-q", "-o", out.toString()),
        "--set watermark=0.01,0.05: vllm does not read watermark", "");
    assertOneLineError(CliRun.of("capacity", "requests:count=10", "--slo", "ttft.p50<=1s", "--system", "vllm,orca-max", "--set", "block-size=8,16",
        "-o", out.toString()), "--set block-size=8,16: orca-max does not read block-size", "");
    assertOneLineError(CliRun.of("capacity", "requests:count=10", "--slo", "ttft.p50<=1s", "--system", "orca-max", "--set", "buddy.min-block=3MiB",
        "-o", out.toString()), "--set buddy.min-block: allocator buddy: option min-block='3MiB': must be a power of two", "");
    assertFalse(Files.exists(out), "no result folder");
  }

  /**
   * Runs kvsim in a child JVM whose working folder is {@code dir}, where the default result folders
   * ({@code results/runs/…}) go; returns its exit status and standard error.
   */
  private static CliRun inFolder(Path dir, String... args) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"), KvSim.class.getName()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    p.getOutputStream().close();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM finished");
    return new CliRun(p.exitValue(), "", err);
  }

  @Test
  void nothingIsLeftUnderTheDefaultResultsFolderEither() throws IOException, InterruptedException {
    write("grid.yaml", "workloads: [\"churn:ops=50\"]\\nallocators: [first-fit, best-fit]\\nset:\\n  first-fit.alignment: [512, banana]\\n");
    assertOneLineError(inFolder(tmp, "sweep", "grid.yaml", "-q"), "grid.yaml:4: set.first-fit.alignment: ", "not a size");
    assertOneLineError(inFolder(tmp, "serving", "requests:count=10", "--set", "watermark=0.05", "-q"), "--set watermark=0.05: vllm does not read", "");
    assertOneLineError(inFolder(tmp, "capacity", "requests:count=10", "--slo", "ttft.p50<=1s", "--system", "orca-max", "--set", "block-size=8"),
        "--set block-size=8: orca-max does not read block-size", "");
    assertFalse(Files.exists(tmp.resolve("results")), "no results folder in the working folder");
    // The same command line with a good grid makes its folder there: the check above could fail.
    write("grid.yaml", "workloads: [\"churn:ops=50\"]\\nallocators: [first-fit, best-fit]\\nset:\\n  first-fit.alignment: [512, 4KiB]\\n");
    CliRun good = inFolder(tmp, "sweep", "grid.yaml", "-q");
    assertEquals(0, good.exitCode(), good.err());
    try (Stream<Path> runs = Files.list(tmp.resolve("results/runs"))) {
      List<Path> folders = runs.toList();
      assertEquals(1, folders.size(), folders.toString());
      assertTrue(folders.get(0).getFileName().toString().endsWith("-sweep-grid"), folders.toString());
    }
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "serving|--watermark|0.05|vllm|--watermark 0.05: vllm does not read watermark (vllm-v0 does)",
      "serving|--swap-space|8GiB|vllm,vllm-v0|--swap-space 8GiB: vllm does not read swap-space (vllm-v0 does)",
      "capacity|--block-size|8|orca-max|--block-size 8: orca-max does not read block-size (vllm, vllm-v0 do)",
      "serving|--max-num-seqs|4|hf-naive|--max-num-seqs 4: hf-naive does not read max-num-seqs"})
  void aPlainServingOptionASystemWouldIgnoreIsRefused(String command, String option, String value, String systems, String message) {
    Path out = tmp.resolve("out-" + option.substring(2));
    List<String> args = new ArrayList<>(List.of(command, "requests:count=5", option, value, "--system", systems, "-o", out.toString()));
    if (command.equals("capacity")) {
      args.addAll(List.of("--slo", "ttft.p50<=1s"));
    } else {
      args.add("-q");
    }
    CliRun r = CliRun.of(args.toArray(String[]::new));
    assertEquals(2, r.exitCode(), r.err());
    assertTrue(r.err().startsWith("kvsim: error: " + message), r.err());
    assertFalse(Files.exists(out));
  }
}

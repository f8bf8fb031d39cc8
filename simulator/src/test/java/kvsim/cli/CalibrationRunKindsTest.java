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
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One calibration file for every run kind: a file that lowers the forward pass's efficiencies slows
 * {@code kvsim serving}, lowers {@code kvsim capacity}'s rates and changes a sweep cell and a
 * regression scenario, and every result names the file; without one, nothing is echoed. A file
 * with an unknown field stops each command with exit status 2 naming the field.
 */
class CalibrationRunKindsTest {
  private static final String WORKLOAD = "requests:preset=sharegpt,rate=8,count=60";
  private static final String[] SETUP = {"--model", "opt-13b", "--device", "a100-40", "--kv-memory", "12GiB"};

  @TempDir Path dir;
  private Path slow;
  private Path bad;

  @BeforeEach
  void calibrationFiles() throws IOException {
    slow = Files.writeString(dir.resolve("slow.json"), """
        {"format": "kvsim-calibration", "version": 2, "device": "NVIDIA A100-SXM4-40GB", "date": "2026-11-25",
         "forward": {"compute_efficiency": 0.2, "memory_efficiency": 0.3}}
        """);
    bad = Files.writeString(dir.resolve("bad.json"), """
        {"format": "kvsim-calibration", "version": 2,
         "forward": {"efficency": 0.5}}
        """);
  }

  private static String[] args(String command, String workload, String... rest) {
    String[] out = new String[2 + SETUP.length + rest.length];
    out[0] = command;
    out[1] = workload;
    System.arraycopy(SETUP, 0, out, 2, SETUP.length);
    System.arraycopy(rest, 0, out, 2 + SETUP.length, rest.length);
    return out;
  }

  private static JsonNode json(Path file) throws IOException {
    return new ObjectMapper().readTree(file.toFile());
  }

  @Test
  void servingLatenciesFollowTheForwardEfficiencyAndTheSummaryNamesTheFile() throws IOException {
    Path plain = dir.resolve("plain");
    Path calibrated = dir.resolve("calibrated");
    CliRun.of(args("serving", WORKLOAD, "-o", plain.toString(), "--quiet")).ok();
    CliRun run = CliRun.of(args("serving", WORKLOAD, "--calibration", slow.toString(), "-o", calibrated.toString(), "--quiet")).ok();
    assertFalse(run.err().contains("warning"), "an A100 calibration on an A100 is not warned about: " + run.err());
    JsonNode a = json(plain.resolve("summary.json"));
    JsonNode b = json(calibrated.resolve("summary.json"));
    double before = a.get("systems").get(0).get("tpot_seconds").get("mean").asDouble();
    double after = b.get("systems").get(0).get("tpot_seconds").get("mean").asDouble();
    // Decode is bandwidth-bound: 0.3 of peak HBM bandwidth instead of 0.8 makes each token about 8/3 as slow.
    assertTrue(after > 2 * before, before + " s per token before, " + after + " after");
    // The configuration echo stands at the top of a serving summary.
    assertEquals("slow.json", b.get("calibration").get("file").asText());
    assertEquals("NVIDIA A100-SXM4-40GB", b.get("calibration").get("device").asText());
    assertEquals("2026-11-25", b.get("calibration").get("date").asText());
    assertEquals(0.2, b.get("calibration").get("forward").get("compute_efficiency").asDouble());
    assertTrue(a.path("calibration").isMissingNode(), "a run without a calibration echoes none");
  }

  @Test
  void aCalibrationFileWithTheRooflinesDefaultsGivesTheSameResultsAsThePlainRoofline() throws IOException {
    // A forward section chooses the roofline with its efficiencies (CostModels); the run without a file is told to use the plain roofline.
    Path defaults = Files.writeString(dir.resolve("defaults.json"), """
        {"format": "kvsim-calibration", "version": 2, "forward": {"compute_efficiency": 0.5, "memory_efficiency": 0.8},
         "copies": {"hbm_efficiency": 0.8, "host_link_efficiency": 1.0}}
        """);
    Path plain = dir.resolve("plain");
    Path same = dir.resolve("same");
    String[] systems = {"--system", "vllm,vllm-v0,orca-pow2,hf-naive"};
    CliRun.of(args("serving", WORKLOAD + ",n=2", systems[0], systems[1], "--cost-model", "roofline", "-o", plain.toString(), "--quiet")).ok();
    CliRun.of(args("serving", WORKLOAD + ",n=2", systems[0], systems[1], "--calibration", defaults.toString(), "-o", same.toString(), "--quiet")).ok();
    JsonNode a = json(plain.resolve("summary.json"));
    JsonNode b = json(same.resolve("summary.json"));
    assertEquals(a.get("systems"), b.get("systems"));
  }

  @Test
  void capacityRatesFollowTheForwardEfficiency() throws IOException {
    String[] search = {"--system", "vllm", "--slo", "normalized_latency.mean<=0.2s", "--slo", "rejected.fraction<=0.6", "--max-rate", "10", "--steps", "3",
        "--json"};
    CliRun plain = CliRun.of(args("capacity", "requests:preset=sharegpt,count=60", concat(search, "-o", dir.resolve("a").toString()))).ok();
    CliRun slowed = CliRun.of(args("capacity", "requests:preset=sharegpt,count=60",
        concat(search, "--calibration", slow.toString(), "-o", dir.resolve("b").toString()))).ok();
    double before = new ObjectMapper().readTree(plain.out()).get("systems").get("vllm").get("max_rate_rps").asDouble();
    double after = new ObjectMapper().readTree(slowed.out()).get("systems").get("vllm").get("max_rate_rps").asDouble();
    assertTrue(after < before, before + " req/s before, " + after + " after");
    assertEquals("slow.json", json(dir.resolve("b").resolve("summary.json")).get("calibration").get("file").asText());
  }

  @Test
  void aSweepCellChangesWithTheGridsCalibrationAndTheTableNamesIt() throws IOException {
    String grid = "workloads: \"" + WORKLOAD + "\"\nsystems: [vllm]\nmodel: opt-13b\ndevice: a100-40\nset: {kv-memory: [12GiB]}\n";
    Path plain = Files.writeString(dir.resolve("plain.yaml"), grid);
    Path calibrated = Files.writeString(dir.resolve("calibrated.yaml"), grid + "calibration: slow.json\n");
    CliRun.of("sweep", plain.toString(), "-o", dir.resolve("p").toString(), "-q").ok();
    CliRun.of("sweep", calibrated.toString(), "-o", dir.resolve("c").toString(), "-q").ok();
    JsonNode a = json(dir.resolve("p").resolve("sweep.json"));
    JsonNode b = json(dir.resolve("c").resolve("sweep.json"));
    double before = a.get("rows").get(0).get("tpot_seconds.mean").asDouble();
    double after = b.get("rows").get(0).get("tpot_seconds.mean").asDouble();
    assertTrue(after > 2 * before, before + " s per token before, " + after + " after");
    assertEquals("slow.json", b.get("config").get("calibration").get("file").asText());
    assertTrue(a.get("config").path("calibration").isMissingNode());
  }

  @Test
  void aRegressionScenarioTakesItsCalibrationAndItEntersTheDigest() throws IOException {
    String suite = "version: 1\nwatch:\n  serving:\n    - {metric: tpot_seconds.mean, better: lower}\nscenarios:\n"
        + "  - name: small\n    serving: " + WORKLOAD + "\n    systems: [vllm]\n    model: opt-13b\n    device: a100-40\n    kv-memory: 12GiB\n";
    Path file = Files.writeString(dir.resolve("tiny.yaml"), suite);
    Path baselines = dir.resolve("baselines");
    CliRun.of("regress", file.toString(), "--baseline", baselines.toString(), "--update", "--quiet").ok();
    Files.writeString(file, suite + "    calibration: slow.json\n");
    CliRun run = CliRun.of("regress", file.toString(), "--baseline", baselines.toString(), "--quiet");
    assertNotEquals(0, run.exitCode(), run.out() + run.err());
    assertTrue((run.out() + run.err()).contains("small"), run.out() + run.err());
    CliRun.of("regress", file.toString(), "--baseline", dir.resolve("calibrated").toString(), "--update", "--quiet").ok();
    JsonNode recorded = json(dir.resolve("calibrated").resolve("tiny").resolve("small.json"));
    JsonNode plain = json(baselines.resolve("tiny").resolve("small.json"));
    assertNotEquals(plain.get("scenario_digest"), recorded.get("scenario_digest"), "the calibration's content is part of the scenario's digest");
  }

  @Test
  void anUnknownFieldStopsEveryRunKindWithStatus2NamingTheField() throws IOException {
    String expected = bad + ":2: forward.efficency: unknown field (known: compute_efficiency, memory_efficiency)";
    CliRun serving = CliRun.of(args("serving", WORKLOAD, "--calibration", bad.toString(), "-o", dir.resolve("s").toString()));
    assertEquals(2, serving.exitCode());
    assertEquals("kvsim: error: " + expected + "\n", serving.err());
    assertFalse(Files.exists(dir.resolve("s")), "no partial output");
    CliRun capacity = CliRun.of(args("capacity", WORKLOAD, "--calibration", bad.toString(), "--slo", "ttft.p90<=1s", "-o", dir.resolve("c").toString()));
    assertEquals(2, capacity.exitCode());
    assertTrue(capacity.err().contains(expected), capacity.err());
    CliRun replay = CliRun.of("replay", "churn:ops=100", "-a", "slab", "--calibration", bad.toString(), "-o", dir.resolve("r").toString());
    assertEquals(2, replay.exitCode());
    assertTrue(replay.err().contains(expected), replay.err());
    Path grid = Files.writeString(dir.resolve("grid.yaml"), "workloads: \"" + WORKLOAD + "\"\nsystems: [vllm]\ncalibration: bad.json\n");
    CliRun sweep = CliRun.of("sweep", grid.toString(), "-o", dir.resolve("w").toString());
    assertEquals(2, sweep.exitCode());
    assertTrue(sweep.err().contains(expected), sweep.err());
    Path missing = Files.writeString(dir.resolve("missing.yaml"), "workloads: \"" + WORKLOAD + "\"\nsystems: [vllm]\ncalibration: nowhere.json\n");
    CliRun noFile = CliRun.of("sweep", missing.toString(), "-o", dir.resolve("m").toString());
    assertEquals(2, noFile.exitCode());
    assertTrue(noFile.err().contains("missing.yaml:3: calibration: "), noFile.err());
    Path suite = Files.writeString(dir.resolve("suite.yaml"), "version: 1\nwatch:\n  serving:\n    - {metric: tpot_seconds.mean, better: lower}\n"
        + "scenarios:\n  - name: small\n    serving: " + WORKLOAD + "\n    systems: [vllm]\n    calibration: bad.json\n");
    CliRun regress = CliRun.of("regress", suite.toString(), "--baseline", dir.resolve("b").toString(), "--update", "--quiet");
    assertEquals(2, regress.exitCode());
    assertTrue(regress.err().contains(expected), regress.err());
  }

  @Test
  void aCalibrationMeasuredOnAnotherGpuIsWarnedAboutOnStderr() throws IOException {
    CliRun run = CliRun.of("serving", WORKLOAD, "--model", "opt-13b", "--device", "h100-80", "--kv-memory", "12GiB", "--calibration", slow.toString(),
        "-o", dir.resolve("h").toString(), "--quiet").ok();
    assertTrue(run.err().contains("kvsim: warning: calibration slow.json was measured on 'NVIDIA A100-SXM4-40GB', not on the run's device h100-80"),
        run.err());
  }

  private static String[] concat(String[] a, String... b) {
    String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}

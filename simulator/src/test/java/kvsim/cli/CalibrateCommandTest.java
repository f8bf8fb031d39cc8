package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.alloc.Calibration;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.CostModels;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.ProfileTable;
import kvsim.run.CalibrationFile;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim calibrate}, the version 3 calibration file it writes, and the cost-model echo of serving runs. */
class CalibrateCommandTest {
  private static final String WORKLOAD = "requests:preset=sharegpt,rate=8,count=40";
  @TempDir Path dir;

  private Path fixture() throws IOException {
    return Files.writeString(dir.resolve("mlp.csv"), kvsim.devicemodel.ProfileCostModelTestAccess.fixture(new long[] {1, 2, 4, 8, 16, 512, 1024, 2048},
        new int[] {1}));
  }

  @Test
  void calibrateWritesAVersion3FileThatReadsBackAsItsTable() throws IOException {
    fixture();
    Path out = dir.resolve("cal.json");
    CliRun run = CliRun.of("calibrate", dir.toString(), "--model", "llama-2-7b", "--device", "a100-80", "-o", out.toString()).ok();
    assertTrue(run.out().contains("held-out error"), run.out());
    assertTrue(run.out().contains("prefill iteration    profile"), run.out());
    assertTrue(run.out().contains("decode iteration     fitted-roofline"), run.out());
    Calibration c = CalibrationFile.read(out);
    ProfileTable t = c.cost().profile();
    assertEquals(8, t.tokens().length);
    assertEquals("llama-2-7b", t.model());
    assertEquals(kvsim.devicemodel.ProfileReader.read(dir, ModelPreset.parse("llama-2-7b"), DeviceSpec.parse("a100-80"), t.source()).table(), t,
        "the file's table is the profile's reduction");
    assertEquals(4_000_000L, c.cost().engineOverheadNanos());
    assertEquals(265.0, c.cost().perSequenceLayerNanos());
    // Its predictor times a pass as the same table built in would.
    var fromFile = c.cost().forwardTime(ModelPreset.parse("llama-2-7b"), DeviceSpec.parse("a100-80"), "cal.json");
    var direct = new kvsim.devicemodel.ProfileForwardTime(t, ModelPreset.parse("llama-2-7b"), DeviceSpec.parse("a100-80"),
        kvsim.devicemodel.ProfileFit.efficiencies(t, DeviceSpec.parse("a100-80")), kvsim.devicemodel.EngineTerms.MEASURED, "x");
    assertEquals(direct.forwardNanos(300, 20, 123_456_789L, 22), fromFile.forwardNanos(300, 20, 123_456_789L, 22));
    // Writing again over its own output is allowed; over a file of the user's it is not.
    CliRun.of("calibrate", dir.toString(), "--model", "llama-2-7b", "--device", "a100-80", "-o", out.toString()).ok();
    Path mine = Files.writeString(dir.resolve("notes.txt"), "mine");
    assertEquals(2, CliRun.of("calibrate", dir.toString(), "--model", "llama-2-7b", "--device", "a100-80", "-o", mine.toString()).exitCode());
    assertEquals("mine", Files.readString(mine));
  }

  @Test
  void badCalibrateInputsExitTwoWithOneLine() throws IOException {
    fixture();
    CliRun model = CliRun.of("calibrate", dir.toString(), "--model", "llama-9", "--device", "a100-80");
    assertEquals(2, model.exitCode());
    assertTrue(model.err().startsWith("kvsim: error: --model: unknown model 'llama-9'"), model.err());
    CliRun device = CliRun.of("calibrate", dir.toString(), "--model", "llama-2-7b", "--device", "80GiB");
    assertEquals(2, device.exitCode());
    assertTrue(device.err().contains("--device: '80GiB' is not a device preset"), device.err());
    CliRun other = CliRun.of("calibrate", dir.toString(), "--model", "llama-3-8b", "--device", "a100-80");
    assertEquals(2, other.exitCode());
    assertTrue(other.err().contains("mlp.csv:2: n_expanded_embd: 11008 is not llama-3-8b's 14336"), other.err());
    CliRun none = CliRun.of("calibrate", dir.resolve("nothing").toString(), "--model", "llama-2-7b", "--device", "a100-80");
    assertEquals(2, none.exitCode());
    assertTrue(none.err().contains("no such profile"), none.err());
    // A profile that beats the device's peak is of another device.
    Files.writeString(dir.resolve("fast.csv"), kvsim.devicemodel.ProfileCostModelTestAccess.fixture(new long[] {1, 8, 1024, 2048}, new int[] {1}, 1e-4));
    CliRun fast = CliRun.of("calibrate", dir.resolve("fast.csv").toString(), "--model", "llama-2-7b", "--device", "a40");
    assertEquals(2, fast.exitCode(), fast.err());
    assertTrue(fast.err().contains("is it a profile of another device?"), fast.err());
  }

  @Test
  void version3FieldsAreCheckedAndVersions1And2StillRead() throws IOException {
    Path v1 = Files.writeString(dir.resolve("v1.json"), "{\"format\": \"kvsim-calibration\", \"version\": 1, \"latency\": {\"slab\": {\"alloc_base_ns\": 25}}}");
    assertEquals(25L, CalibrationFile.read(v1).latency().get("slab").get("alloc_base_ns"));
    Path v2 = Files.writeString(dir.resolve("v2.json"), "{\"format\": \"kvsim-calibration\", \"version\": 2, \"forward\": {\"memory_efficiency\": 0.5}}");
    assertEquals(0.5, CalibrationFile.read(v2).cost().memoryEfficiency());
    assertNull(CalibrationFile.read(v2).cost().profile());
    Path v2with3 = Files.writeString(dir.resolve("v23.json"), "{\"format\": \"kvsim-calibration\", \"version\": 2,\n \"forward\": {\"engine_overhead_ns\": 5}}");
    assertEquals(v2with3 + ":2: forward.engine_overhead_ns: a version 3 field: give \"version\": 3",
        assertThrows(InputException.class, () -> CalibrationFile.read(v2with3)).getMessage());
    Path negative = Files.writeString(dir.resolve("neg.json"), "{\"format\": \"kvsim-calibration\", \"version\": 3,\n \"forward\": {\"per_sequence_layer_ns\": -1}}");
    assertEquals(negative + ":2: forward.per_sequence_layer_ns: must be a number of nanoseconds >= 0, got -1",
        assertThrows(InputException.class, () -> CalibrationFile.read(negative)).getMessage());
    Path badProfile = Files.writeString(dir.resolve("prof.json"), "{\"format\": \"kvsim-calibration\", \"version\": 3,\n \"forward\": {\"profile\": {\"model\": \"llama-2-7b\","
        + " \"device\": \"a100-80\", \"source\": \"s\",\n \"shape\": {\"n_head\": 32, \"n_kv_head\": 32, \"n_embd\": 4096, \"n_expanded_embd\": 11008, \"use_gated_mlp\": true},"
        + "\n \"num_tokens\": [1, 8], \"linear_ns\": [1, 2], \"norm_ns\": [1, 2], \"activation_ns\": [1], \"elementwise_ns\": [1, 2], \"emb_ns\": [1, 2]}}}");
    assertEquals(badProfile + ":4: forward.profile.activation_ns: expected an array of one number per token count (2)",
        assertThrows(InputException.class, () -> CalibrationFile.read(badProfile)).getMessage());
    Path unknown = Files.writeString(dir.resolve("unk.json"), "{\"format\": \"kvsim-calibration\", \"version\": 3,\n \"forward\": {\"overhead\": 1}}");
    assertTrue(assertThrows(InputException.class, () -> CalibrationFile.read(unknown)).getMessage().startsWith(unknown + ":2: forward.overhead: unknown field"));
  }

  @Test
  void everyServingRunSaysWhichPredictorTimedIt() throws IOException {
    Path out = dir.resolve("run");
    CliRun.of("serving", WORKLOAD, "--set", "cost-model=roofline,profile", "--quiet", "-o", out.toString()).ok();
    JsonNode s = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    JsonNode roofline = s.get("systems").get(0);
    JsonNode profile = s.get("systems").get(1);
    assertEquals("roofline", roofline.get("cell").get("cost-model").asText());
    assertEquals("roofline", roofline.get("parts").get("cost_model").get("forward").asText());
    assertEquals(0, roofline.get("parts").get("cost_model").get("engine_overhead_ns").asLong());
    assertEquals("profile", profile.get("parts").get("cost_model").get("forward").asText());
    assertEquals(CostModels.describe(CostModels.table(ModelPreset.parse("llama-2-7b"), DeviceSpec.parse("h100-80"))),
        profile.get("parts").get("cost_model").get("source").asText());
    assertEquals(4_000_000, profile.get("parts").get("cost_model").get("engine_overhead_ns").asLong());
    assertNotEquals(roofline.get("tpot_seconds"), profile.get("tpot_seconds"));
    // The default is the profile on the default pair; a model without a table on the H200 keeps the roofline.
    Path plain = dir.resolve("plain");
    CliRun.of("serving", WORKLOAD, "--quiet", "-o", plain.toString()).ok();
    assertEquals("profile", new ObjectMapper().readTree(plain.resolve("summary.json").toFile()).get("systems").get(0).get("parts").get("cost_model").get("forward").asText());
    CliRun bad = CliRun.of("serving", WORKLOAD, "--cost-model", "profile", "--device", "h200-141", "-o", dir.resolve("x").toString());
    assertEquals(2, bad.exitCode());
    assertTrue(bad.err().startsWith("kvsim: error: --cost-model: no built-in profile table of llama-2-7b on h200-141"), bad.err());
    assertFalse(Files.exists(dir.resolve("x")), "no partial output");
  }

  @Test
  void aCapacitySearchSaysWhichPredictorTimedItsProbes() throws IOException {
    Path out = dir.resolve("cap");
    CliRun.of("capacity", "requests:preset=sharegpt,count=30", "--model", "opt-13b", "--device", "a100-40", "--kv-memory", "12GiB", "--system", "vllm",
        "--slo", "normalized_latency.mean<=1s", "--max-rate", "4", "--steps", "2", "-o", out.toString()).ok();
    JsonNode c = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("cost_model");
    assertEquals("measured-roofline", c.get("forward").asText(), c.toString());
    assertTrue(c.get("source").asText().contains("a100 profiles"), c.toString());
  }

  @Test
  void theEngineOverheadOfACalibrationLengthensEveryIteration() throws IOException {
    Path slow = Files.writeString(dir.resolve("slow.json"), "{\"format\": \"kvsim-calibration\", \"version\": 3, \"forward\": {\"engine_overhead_ns\": 100000000}}");
    Path none = Files.writeString(dir.resolve("none.json"), "{\"format\": \"kvsim-calibration\", \"version\": 3, \"forward\": {\"engine_overhead_ns\": 0}}");
    CliRun.of("serving", WORKLOAD, "--calibration", slow.toString(), "--quiet", "-o", dir.resolve("a").toString()).ok();
    CliRun.of("serving", WORKLOAD, "--calibration", none.toString(), "--quiet", "-o", dir.resolve("b").toString()).ok();
    JsonNode a = new ObjectMapper().readTree(dir.resolve("a/summary.json").toFile()).get("systems").get(0);
    JsonNode b = new ObjectMapper().readTree(dir.resolve("b/summary.json").toFile()).get("systems").get(0);
    // 100 ms per iteration: every output token after the first waits at least one iteration.
    assertTrue(a.get("tpot_seconds").get("p50").asDouble() >= 0.1, a.toString());
    assertTrue(b.get("tpot_seconds").get("p50").asDouble() < 0.1, b.toString());
    assertEquals("measured-roofline", a.get("parts").get("cost_model").get("forward").asText());
  }
}

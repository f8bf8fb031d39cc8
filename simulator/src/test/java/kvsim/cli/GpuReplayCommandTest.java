package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;
import kvsim.gpu.device.GpuDevice;
import kvsim.gpu.device.InMemoryDevice;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim gpu replay}: one line and exit 3 without a GPU (this machine); bad input exit 2
 * before the GPU is asked for; on the in-memory device, a replay result folder with the measured
 * files beside the simulated ones that {@code kvsim report} reads.
 */
class GpuReplayCommandTest {
  @TempDir Path tmp;

  private final Supplier<GpuDevice> original = GpuReplayCommand.devices;

  @AfterEach
  void restore() {
    GpuReplayCommand.devices = original;
  }

  @Test
  void withoutAGpuItSaysSoInOneLineAndExits3() {
    Path out = tmp.resolve("run");
    CliRun r = CliRun.of("gpu", "replay", "churn:ops=100", "-o", out.toString());
    assertEquals(3, r.exitCode(), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
    assertTrue(r.err().startsWith("kvsim: error: no GPU here: "), r.err());
    assertEquals("", r.out());
    assertFalse(Files.exists(out), "no partial output");
  }

  @Test
  void badInputExits2WithOneLine() {
    for (List<String> args : List.of(
        List.of("gpu", "replay", "churn:ops=100", "--mode", "paged"),
        List.of("gpu", "replay", "churn:ops=100", "--probe-every", "0"),
        List.of("gpu", "replay", "churn:ops=100", "--mode", "arena", "-a", "no-such"),
        List.of("gpu", "replay", "churn:ops=100", "-a", "first-fit,paged"),
        List.of("gpu", "replay", tmp.resolve("missing.jsonl").toString()))) {
      CliRun r = CliRun.of(args.toArray(String[]::new));
      assertEquals(2, r.exitCode(), args + ": " + r.err());
      assertEquals(1, r.err().lines().count(), args + ": " + r.err());
      assertTrue(r.err().startsWith("kvsim: error: "), r.err());
    }
  }

  @Test
  void aReplayOnADeviceWritesMeasuredBesideModelledAndReportReadsIt() throws IOException {
    GpuReplayCommand.devices = () -> new InMemoryDevice(16L << 30, 2L << 20);
    Path out = tmp.resolve("arena");
    CliRun.of("gpu", "replay", "churn:ops=100,seed=0", "--mode", "arena", "-a", "vattention", "--probe-every", "25", "-o", out.toString()).ok();
    for (String f : List.of("summary.json", "timeseries.csv", "plan.jsonl", "gpu-replay.json", "gpu-comparison.csv", "gpu-calls.csv", "gpu-probes.csv", "report.html")) {
      assertTrue(Files.size(out.resolve(f)) > 0, f);
    }
    String golden = new String(GpuReplayCommandTest.class.getResourceAsStream("/gpu/plan-arena-vattention.jsonl").readAllBytes());
    assertEquals(golden, Files.readString(out.resolve("plan.jsonl")), "the folder's plan is the golden one");
    JsonNode replay = new ObjectMapper().readTree(out.resolve("gpu-replay.json").toFile());
    assertEquals("arena", replay.get("mode").asText());
    assertEquals("in-memory device", replay.get("device").get("name").asText());
    List<String> comparison = Files.readAllLines(out.resolve("gpu-comparison.csv"));
    assertEquals("metric,measured,modelled", comparison.get(0));
    assertTrue(comparison.stream().anyMatch(l -> l.startsWith("oom_count,0,0")), comparison.toString());
    assertTrue(comparison.stream().anyMatch(l -> l.startsWith("peak_external_fragmentation,")), comparison.toString());
    assertEquals(1 + 4, Files.readAllLines(out.resolve("gpu-probes.csv")).size(), "probes at events 25, 50, 75, 100");
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertEquals("vattention", summary.get("allocators").get(0).get("allocator").asText());

    Path report = tmp.resolve("report.html");
    CliRun.of("report", out.toString(), "-o", report.toString()).ok();
    String html = Files.readString(report);
    assertTrue(html.contains("vattention"));
    assertTrue(html.contains("Measured on the GPU beside the model"), "the report shows the measured figures");
    assertTrue(Files.readString(out.resolve("report.html")).contains("Measured on the GPU beside the model"), "so does the folder's own report");
  }

  @Test
  void aWorkloadSpecFileReplaysAsItsGenerator() throws IOException {
    GpuReplayCommand.devices = () -> new InMemoryDevice(16L << 30, 2L << 20);
    Path yaml = tmp.resolve("churn.yaml");
    Files.writeString(yaml, "workload: churn\nparams: {ops: 100}\nseed: 0\n");
    CliRun.of("gpu", "replay", yaml.toString(), "-o", tmp.resolve("from-yaml").toString()).ok();
    CliRun.of("gpu", "replay", "churn:ops=100,seed=0", "-o", tmp.resolve("from-spec").toString()).ok();
    List<String> fromYaml = Files.readAllLines(tmp.resolve("from-yaml").resolve("plan.jsonl"));
    List<String> fromSpec = Files.readAllLines(tmp.resolve("from-spec").resolve("plan.jsonl"));
    assertEquals(fromSpec.subList(1, fromSpec.size()), fromYaml.subList(1, fromYaml.size()), "the same operations after the header");
  }

  @Test
  void aRawReplayOnASmallDeviceCountsItsRefusals() throws IOException {
    GpuReplayCommand.devices = () -> new InMemoryDevice(512L << 20, 2L << 20);
    Path out = tmp.resolve("raw");
    CliRun.of("gpu", "replay", "churn:ops=100,seed=0", "-o", out.toString()).ok();
    JsonNode replay = new ObjectMapper().readTree(out.resolve("gpu-replay.json").toFile());
    assertTrue(replay.get("oom_count").asLong() > 0, replay.toString());
    List<String> calls = Files.readAllLines(out.resolve("gpu-calls.csv"));
    assertEquals(replay.get("oom_count").asLong(), calls.stream().filter(l -> l.endsWith(",true")).count());
    CliRun.of("report", out.toString(), "-o", tmp.resolve("r.html").toString()).ok();
    Files.writeString(out.resolve("gpu-comparison.csv"), "metric,measured,modelled\noom_count,3\n");
    CliRun bad = CliRun.of("report", out.toString(), "-o", tmp.resolve("r2.html").toString());
    assertEquals(2, bad.exitCode(), bad.err());
    assertTrue(bad.err().trim().endsWith("gpu-comparison.csv: line 2: expected 3 fields, got 2"), bad.err());
    assertFalse(Files.exists(tmp.resolve("r2.html")), "no partial output");
  }
}

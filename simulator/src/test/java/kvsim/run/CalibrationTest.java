package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.alloc.Calibration;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.slab.SlabAllocator;
import kvsim.core.InputException;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A calibration file replaces exactly the latencies it measured, for the allocators it names. */
class CalibrationTest {
  @TempDir Path tmp;

  private Path file(String json) throws IOException {
    return Files.writeString(tmp.resolve("h100.json"), json);
  }

  @Test
  void measuredFieldsReplaceDefaultsAndTheRestStay() throws IOException {
    Calibration c = CalibrationFile.read(file("""
        {"format": "kvsim-calibration", "version": 1, "device": "NVIDIA H100 80GB HBM3", "driver": "580.65", "date": "2026-11-23",
         "latency": {"slab": {"alloc_base_ns": 25, "free_per_step_ns": 3}}}
        """));
    assertEquals("NVIDIA H100 80GB HBM3", c.device());
    LatencyModel slab = c.apply("slab", SlabAllocator.DEFAULT_LATENCY);
    assertEquals(new LatencyModel(25, 10, 20, 3, 0, 0), slab);
    assertEquals(SlabAllocator.DEFAULT_LATENCY, c.apply("first-fit", SlabAllocator.DEFAULT_LATENCY));
  }

  @Test
  void aCalibratedRunChargesTheMeasuredLatenciesAndEchoesTheFile() throws IOException {
    Path cal = file("""
        {"format": "kvsim-calibration", "version": 1, "device": "test",
         "latency": {"slab": {"alloc_base_ns": 1000, "alloc_per_step_ns": 0, "free_base_ns": 7, "free_per_step_ns": 0}}}
        """);
    Path plain = tmp.resolve("plain");
    Path calibrated = tmp.resolve("calibrated");
    CliRun.of("replay", "churn:ops=200", "-a", "slab", "-o", plain.toString(), "--quiet").ok();
    CliRun.of("replay", "churn:ops=200", "-a", "slab", "--calibration", cal.toString(), "-o", calibrated.toString(), "--quiet").ok();
    JsonNode a = new ObjectMapper().readTree(plain.resolve("summary.json").toFile()).get("allocators").get(0);
    JsonNode root = new ObjectMapper().readTree(calibrated.resolve("summary.json").toFile());
    JsonNode b = root.get("allocators").get(0);
    long allocs = b.get("alloc_count").asLong();
    long frees = b.get("free_count").asLong();
    assertTrue(allocs > 0 && frees > 0 && b.get("oom_count").asLong() == 0);
    assertEquals(1000 * allocs + 7 * frees, b.get("modelled_allocator_nanos").asLong());
    assertTrue(a.get("modelled_allocator_nanos").asLong() > 20 * (allocs + frees), "the plain run kept slab's defaults");
    assertEquals(a.get("metrics"), b.get("metrics"), "a calibration changes modelled time, not placement");
    assertEquals("h100.json", root.get("calibration").get("file").asText());
    assertEquals(1000, root.get("calibration").get("latency").get("slab").get("alloc_base_ns").asLong());
    assertTrue(new ObjectMapper().readTree(plain.resolve("summary.json").toFile()).path("calibration").isMissingNode());
  }

  @Test
  void badCalibrationFilesNameFileLineAndField() throws IOException {
    Path f = file("{\"format\": \"kvsim-calibration\", \"version\": 1,\n \"latency\": {\"slab\": {\"alloc_base_nz\": 5}}}\n");
    InputException e = assertThrows(InputException.class, () -> CalibrationFile.read(f));
    assertTrue(e.getMessage().startsWith(f + ":2: latency.slab.alloc_base_nz: unknown latency field"), e.getMessage());
    Path g = file("{\"format\": \"kvsim-calibration\", \"version\": 1,\n \"latency\": {\"best-fitt\": {}}}\n");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(g));
    assertTrue(e.getMessage().startsWith(g + ":2: latency.best-fitt: unknown allocator 'best-fitt'"), e.getMessage());
    Path h = file("{\"format\": \"kvsim-calibration\", \"version\": 1, \"latency\": {\"slab\": {\"free_base_ns\": -4}}}\n");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(h));
    assertTrue(e.getMessage().contains("latency.slab.free_base_ns: must be a non-negative whole number"), e.getMessage());
    Path i = file("{\"format\": \"other\", \"version\": 1}\n");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(i));
    assertTrue(e.getMessage().contains("format: expected \"kvsim-calibration\""), e.getMessage());
  }

  // Found by ReaderFuzzTest: an unknown field whose name holds an escaped line break made a two-line message.
  @Test
  void aLineBreakInAnUnknownFieldStaysOnTheMessagesOneLine() throws IOException {
    Path f = file("{\"format\":\"kvsim-calibration\",\"version\":1,\"\\n\":\"\"}");
    InputException e = assertThrows(InputException.class, () -> CalibrationFile.read(f));
    assertEquals(f + ": \\n: unknown field (known: [copies, cuda, date, device, driver, format, forward, latency, samples, version])", e.getMessage());
  }

  // Found probing the readers beside ReaderFuzzTest: an allocator's latencies given as a number, not an object, were
  // silently ignored; so were a second JSON value after the object and a key given twice but once.
  @Test
  void whatIsNotReadIsRefusedNotIgnored() throws IOException {
    Path f = file("{\"format\":\"kvsim-calibration\",\"version\":1,\n \"latency\":{\"slab\":5}}");
    InputException e = assertThrows(InputException.class, () -> CalibrationFile.read(f));
    assertEquals(f + ":2: latency.slab: expected an object of latency fields, got 5", e.getMessage());
    Path g = file("{\"format\":\"kvsim-calibration\",\"version\":1}\n{\"latency\":{}}\n");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(g));
    assertEquals(g + ":2: more than one JSON value: the file is one object", e.getMessage());
    Path d = file("{\"format\":\"kvsim-calibration\",\"version\":1,\n\"latency\":{\"slab\":{\"alloc_base_ns\":1,\"alloc_base_ns\":2}}}");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(d));
    assertEquals(d + ":2: malformed JSON: duplicate field 'alloc_base_ns'", e.getMessage());
    Path h = Files.write(tmp.resolve("h100.json"), new byte[] {'{', (byte) 0xff, '}'});
    e = assertThrows(InputException.class, () -> CalibrationFile.read(h));
    assertEquals(h + ": not UTF-8 text", e.getMessage());
  }

  @Test
  void aVersion2FileGivesForwardCopiesAndLatencyEachOverTheDefaults() throws IOException {
    Calibration c = CalibrationFile.read(file("""
        {"format": "kvsim-calibration", "version": 2, "device": "NVIDIA H100 80GB HBM3", "date": "2026-11-25",
         "forward": {"compute_efficiency": 0.4},
         "copies": {"hbm_efficiency": 0.6, "host_link_efficiency": 0.9},
         "latency": {"paged": {"alloc_base_ns": 30}}}
        """));
    assertEquals(new kvsim.devicemodel.CostCalibration(0.4, null, 0.6, 0.9), c.cost());
    assertEquals(java.util.Map.of("compute_efficiency", 0.4), c.cost().forwardSection());
    assertEquals(30, kvsim.registry.AllocatorRegistry.blockManagerLatency(c).allocBaseNanos());
    assertEquals(kvsim.registry.AllocatorRegistry.blockManagerLatency().freeBaseNanos(), kvsim.registry.AllocatorRegistry.blockManagerLatency(c).freeBaseNanos());
    assertEquals(List.of("file", "device", "driver", "date", "latency", "forward", "copies"), List.copyOf(c.echo().keySet()));
    // A version 1 file reads as before; its echo has no forward or copies.
    Calibration v1 = CalibrationFile.read(file("{\"format\": \"kvsim-calibration\", \"version\": 1, \"latency\": {\"slab\": {}}}"));
    assertTrue(v1.cost().isNone());
    assertEquals(List.of("file", "device", "driver", "date", "latency"), List.copyOf(v1.echo().keySet()));
  }

  @Test
  void anUnknownOrIgnoredFieldIsRefusedNamingFileLineAndField() throws IOException {
    Path f = file("{\"format\": \"kvsim-calibration\", \"version\": 2,\n \"device\": \"x\",\n \"forward\": {\"efficency\": 0.5}}\n");
    InputException e = assertThrows(InputException.class, () -> CalibrationFile.read(f));
    assertEquals(f + ":3: forward.efficency: unknown field (known: compute_efficiency, memory_efficiency)", e.getMessage());
    Path g = file("{\"format\": \"kvsim-calibration\", \"version\": 2,\n \"copies\": {\"hbm_efficiency\": 1.2}}\n");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(g));
    assertEquals(g + ":2: copies.hbm_efficiency: must be a share in (0, 1], got 1.2", e.getMessage());
    Path h = file("{\"format\": \"kvsim-calibration\", \"version\": 1,\n \"forward\": {\"compute_efficiency\": 0.5}}\n");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(h));
    assertEquals(h + ":2: forward: a version 2 section: give \"version\": 2", e.getMessage());
    // The fragmentation comparison version 1 accepted and ignored is refused in either version.
    for (int version : new int[] {1, 2}) {
      Path i = file("{\"format\": \"kvsim-calibration\", \"version\": " + version + ",\n \"fragmentation\": {}}\n");
      e = assertThrows(InputException.class, () -> CalibrationFile.read(i));
      assertTrue(e.getMessage().startsWith(i + ":2: fragmentation: a measured fragmentation comparison is a result, not a cost"), e.getMessage());
    }
    Path j = file("{\"format\": \"kvsim-calibration\", \"version\": 4}");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(j));
    assertEquals(j + ":1: version: this kvsim reads versions 1, 2 and 3", e.getMessage());
    Path k = file("{\"format\": \"kvsim-calibration\", \"version\": 2, \"forward\": 0.5}");
    e = assertThrows(InputException.class, () -> CalibrationFile.read(k));
    assertEquals(k + ":1: forward: expected an object of the fields [compute_efficiency, memory_efficiency]", e.getMessage());
  }

  @Test
  void aCalibrationFromAnotherGpuIsWarnedAboutAndOneFromTheSameIsNot() throws IOException {
    Calibration h100 = CalibrationFile.read(file("{\"format\": \"kvsim-calibration\", \"version\": 2, \"device\": \"NVIDIA H100 80GB HBM3\"}"));
    assertEquals(null, h100.deviceWarning(kvsim.devicemodel.DeviceSpec.parse("h100-80")));
    assertEquals(null, h100.deviceWarning(kvsim.devicemodel.DeviceSpec.parse("40GiB")), "a bare size keeps the H100's bandwidths");
    assertEquals("calibration h100.json was measured on 'NVIDIA H100 80GB HBM3', not on the run's device a100-40; its costs are applied as given",
        h100.deviceWarning(kvsim.devicemodel.DeviceSpec.parse("a100-40")));
    Calibration unnamed = CalibrationFile.read(file("{\"format\": \"kvsim-calibration\", \"version\": 2}"));
    assertEquals(null, unnamed.deviceWarning(kvsim.devicemodel.DeviceSpec.parse("a100-40")));
  }
}

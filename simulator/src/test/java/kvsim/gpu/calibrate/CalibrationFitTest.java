package kvsim.gpu.calibrate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.alloc.Calibration;
import kvsim.devicemodel.DeviceSpec;
import kvsim.run.CalibrationFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CalibrationFit} on a sample file written by hand (synthetic-h100-samples.json: numbers
 * chosen so that each fitted field can be worked out on paper; Note [How a GPU calibration is
 * fitted]), and the file {@link CalibrationWriter} makes of it read back by {@link CalibrationFile}.
 */
class CalibrationFitTest {
  @TempDir Path dir;

  static Path fixture(Path dir) throws IOException {
    Path p = dir.resolve("synthetic-h100-samples.json");
    try (InputStream in = CalibrationFitTest.class.getResourceAsStream("synthetic-h100-samples.json")) {
      Files.copy(in, p);
    }
    return p;
  }

  @Test
  void theFixtureFitsToTheValuesWorkedOutByHand() throws IOException {
    Samples s = SampleFile.read(fixture(dir));
    DeviceSpec h100 = CalibrationFit.presetFor(s.device(), s.totalBytes());
    assertEquals("h100-80", h100.name());
    CalibrationFit.Result fit = CalibrationFit.fit(s, h100);
    // Allocation: the median of the 2 MiB, 32 MiB and 1 GiB medians (41000, 50000, 110000); 512 B and 8 GiB do not count.
    assertEquals(Map.of("device_alloc_ns", 50_000L, "device_free_ns", 33_000L), fit.latency().get("pytorch-caching"));
    // Pages: per-page medians 21000, 25000, 20625 (map) and 10000, 12000, 11000 (unmap).
    assertEquals(Map.of("device_alloc_ns", 21_000L, "device_free_ns", 11_000L), fit.latency().get("vattention"));
    assertEquals(fit.latency().get("vattention"), fit.latency().get("stitching"));
    // 2 × 1 GiB in 805 µs against 3.35 TB/s; (24 GB/s + 20 GB/s) / 2 against 53.5 GB/s.
    assertEquals(0.7963, fit.copies().get("hbm_efficiency"));
    assertEquals(0.4112, fit.copies().get("host_link_efficiency"));
    // GEMM: per shape the median achieved rate at >= 1024 tokens, median over shapes, over 989 TFLOPS; one-token weight reads over 3.35 TB/s.
    assertEquals(0.625, fit.forward().get("compute_efficiency"));
    assertEquals(0.8018, fit.forward().get("memory_efficiency"));
    assertEquals(List.of(), fit.notes());
  }

  @Test
  void aShareAbovePeakIsLeftOutWithANoteNotClamped() throws IOException {
    Samples s = SampleFile.read(fixture(dir));
    // A40's host link is 24 GB/s: still under; its HBM (696 GB/s) is far below the fixture's 2.67 TB/s copies.
    CalibrationFit.Result fit = CalibrationFit.fit(s, DeviceSpec.presets().get("a40"));
    assertNull(fit.copies().get("hbm_efficiency"));
    assertNull(fit.forward().get("memory_efficiency"));
    assertTrue(fit.notes().stream().anyMatch(n -> n.startsWith("copies.hbm_efficiency not fitted: the measurement is 3.833 of a40's peak")), fit.notes().toString());
    assertTrue(fit.notes().stream().anyMatch(n -> n.startsWith("forward.compute_efficiency not fitted: the measurement is 4.129 of a40's peak")),
        fit.notes().toString());
  }

  @Test
  void withoutGemmSamplesMemoryEfficiencyComesFromTheCopyAndSaysSo() throws IOException {
    Samples all = SampleFile.read(fixture(dir));
    Samples noGemm = new Samples(all.device(), all.driver(), all.cuda(), all.date(), all.granularityBytes(), all.totalBytes(),
        all.series().stream().filter(x -> !x.kind().equals("gemm")).toList(), Map.of("gemm", "cuBLAS 12 is not installed"));
    CalibrationFit.Result fit = CalibrationFit.fit(noGemm, DeviceSpec.presets().get("h100-80"));
    assertNull(fit.forward().get("compute_efficiency"));
    assertEquals(0.7963, fit.forward().get("memory_efficiency"));
    assertEquals(List.of("forward efficiencies not fitted: no GEMM samples (cuBLAS 12 is not installed)",
        "forward.memory_efficiency fitted on the device-to-device copy, not on one-token GEMMs (there are none)"), fit.notes());
  }

  @Test
  void anUnknownDeviceGetsLatenciesOnly() throws IOException {
    Samples s = SampleFile.read(fixture(dir));
    CalibrationFit.Result fit = CalibrationFit.fit(s, CalibrationFit.presetFor("Tesla T4", 16L << 30));
    assertEquals(2, fit.latency().get("pytorch-caching").size());
    assertTrue(fit.copies().isEmpty() && fit.forward().isEmpty());
    assertTrue(fit.notes().get(0).startsWith("no device preset for"), fit.notes().toString());
  }

  @Test
  void presetsFollowTheDevicesName() {
    assertEquals("h200-141", CalibrationFit.presetFor("NVIDIA H200", 150_000_000_000L).name());
    assertEquals("h100-80", CalibrationFit.presetFor("NVIDIA H100 80GB HBM3", 85_000_000_000L).name());
    assertEquals("a100-40", CalibrationFit.presetFor("NVIDIA A100-SXM4-40GB", 42_000_000_000L).name());
    assertEquals("a100-80", CalibrationFit.presetFor("NVIDIA A100-SXM4-80GB", 85_000_000_000L).name());
    assertEquals("a40", CalibrationFit.presetFor("NVIDIA A40", 48_000_000_000L).name());
    assertNull(CalibrationFit.presetFor("NVIDIA GeForce RTX 4090", 24_000_000_000L));
  }

  @Test
  void theWrittenFileReadsBackWithItsFieldsAndItsSamples() throws IOException {
    Samples s = SampleFile.read(fixture(dir));
    CalibrationFit.Result fit = CalibrationFit.fit(s, DeviceSpec.presets().get("h100-80"));
    Path out = Files.writeString(dir.resolve("cal.json"), CalibrationWriter.write(s, fit));
    Calibration c = CalibrationFile.read(out);
    assertEquals(s.device(), c.device());
    assertEquals("13.0", c.driver());
    assertEquals("2026-11-26", c.date());
    assertEquals(fit.latency(), c.latency());
    assertEquals(0.625, c.cost().computeEfficiency());
    assertEquals(0.8018, c.cost().memoryEfficiency());
    assertEquals(0.7963, c.cost().hbmCopyEfficiency());
    assertEquals(0.4112, c.cost().hostLinkEfficiency());
    Samples back = SampleFile.read(out);
    assertEquals(s, back, "the raw samples round-trip exactly");
    assertTrue(Files.readString(out).startsWith("{\"format\": \"kvsim-calibration\", \"version\": 3,"));
  }
}

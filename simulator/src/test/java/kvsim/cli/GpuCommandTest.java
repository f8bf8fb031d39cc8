package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.alloc.Calibration;
import kvsim.run.CalibrationFile;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim gpu info} and {@code kvsim gpu calibrate}: exit status 3 with one line on a machine
 * without the NVIDIA driver, bad input still 2 (checked before any GPU is touched), and a refit of
 * recorded samples ({@code --samples}) whose file a serving run accepts.
 */
class GpuCommandTest {
  @TempDir Path dir;

  private static boolean noDriver() {
    return !Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libcuda.so.1")) && !Files.exists(Path.of("/usr/lib64/libcuda.so.1"))
        && !Files.exists(Path.of("/lib/libcuda.so.1")) && !Files.exists(Path.of("/usr/local/nvidia/lib64/libcuda.so.1"));
  }

  private static void assertNoGpu(CliRun run) {
    assertEquals(3, run.exitCode(), run.err());
    assertEquals("kvsim: error: no GPU here: libcuda.so.1 (the NVIDIA driver) is not installed\n", run.err().replace("\r", ""));
    assertEquals("", run.out());
  }

  @Test
  void withoutAGpuEveryGpuCommandExitsThreeWithOneLine() {
    assumeTrue(noDriver(), "this machine has the NVIDIA driver");
    assertNoGpu(CliRun.of("gpu", "info"));
    assertNoGpu(CliRun.of("gpu", "info", "--json"));
    Path out = dir.resolve("cal.json");
    assertNoGpu(CliRun.of("gpu", "calibrate", "-o", out.toString()));
    assertNoGpu(CliRun.of("gpu", "calibrate", "--quick", "--device", "h100-80", "-o", out.toString()));
    assertFalse(Files.exists(out), "no partial output");
  }

  @Test
  void badInputIsStillExitTwoAndComesBeforeTheGpu() throws IOException {
    CliRun device = CliRun.of("gpu", "calibrate", "-o", dir.resolve("c.json").toString(), "--device", "h999");
    assertEquals(2, device.exitCode());
    assertEquals("kvsim: error: --device: 'h999' is not a device preset (one of [a100-40, a100-80, h100-80, h200-141, a40])", device.err().strip());
    CliRun ordinal = CliRun.of("gpu", "info", "--gpu", "-1");
    assertEquals(2, ordinal.exitCode());
    assertEquals("kvsim: error: --gpu: a device ordinal is 0 or more, got -1", ordinal.err().strip());
    CliRun noOutput = CliRun.of("gpu", "calibrate");
    assertEquals(2, noOutput.exitCode());
    assertTrue(noOutput.err().startsWith("kvsim: error: Missing required option: '--output=FILE'"), noOutput.err());
    Path mine = Files.writeString(dir.resolve("notes.txt"), "mine");
    CliRun clobber = CliRun.of("gpu", "calibrate", "-o", mine.toString());
    assertEquals(2, clobber.exitCode(), clobber.err());
    assertEquals("mine", Files.readString(mine));
    CliRun both = CliRun.of("gpu", "calibrate", "--quick", "--samples", "x.json", "-o", dir.resolve("c.json").toString());
    assertEquals(2, both.exitCode());
    assertTrue(both.err().contains("--quick: measures on a GPU; --samples refits recorded samples"), both.err());
    CliRun missing = CliRun.of("gpu", "calibrate", "--samples", dir.resolve("none.json").toString(), "-o", dir.resolve("c.json").toString());
    assertEquals(2, missing.exitCode());
    assertTrue(missing.err().contains("none.json: no such calibration file"), missing.err());
  }

  @Test
  void aRefitOfRecordedSamplesIsAcceptedByAServingRun() throws IOException {
    Path samples = dir.resolve("samples.json");
    try (InputStream in = kvsim.gpu.calibrate.SampleFile.class.getResourceAsStream("synthetic-h100-samples.json")) {
      Files.copy(in, samples);
    }
    Path out = dir.resolve("cal.json");
    CliRun run = CliRun.of("gpu", "calibrate", "--samples", samples.toString(), "-o", out.toString()).ok();
    assertTrue(run.out().contains("fitted against h100-80:"), run.out());
    assertTrue(run.out().contains("latency.pytorch-caching: {device_alloc_ns=50000, device_free_ns=33000}"), run.out());
    assertTrue(run.out().contains("forward.compute_efficiency: 0.625"), run.out());
    Calibration c = CalibrationFile.read(out);
    assertEquals(0.4112, c.cost().hostLinkEfficiency());
    // Against another preset, the shares above its peak are left out and said so.
    Path a40 = dir.resolve("a40.json");
    CliRun other = CliRun.of("gpu", "calibrate", "--samples", samples.toString(), "--device", "a40", "-o", a40.toString()).ok();
    assertTrue(other.out().contains("note: copies.hbm_efficiency not fitted"), other.out());
    Path res = dir.resolve("serving");
    CliRun serving = CliRun.of("serving", "requests:count=5", "--calibration", out.toString(), "-q", "-o", res.toString()).ok();
    assertTrue(Files.exists(res), serving.err());
  }
}

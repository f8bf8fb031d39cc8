package kvsim.gpu.calibrate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.core.InputException;
import kvsim.run.CalibrationFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A calibration file's {@code samples} section: checked by {@link CalibrationFile}, read by {@link SampleFile}; each bad input is one line naming file, line and field. */
class SampleFileTest {
  @TempDir Path dir;

  private String error(String body) throws IOException {
    Path f = Files.writeString(dir.resolve("bad.json"), body);
    return assertThrows(InputException.class, () -> CalibrationFile.read(f)).getMessage();
  }

  private static String v3(String rest) {
    return "{\"format\": \"kvsim-calibration\", \"version\": 3,\n" + rest + "}\n";
  }

  @Test
  void badSampleSectionsAreRefusedWithTheirField() throws IOException {
    String f = dir.resolve("bad.json").toString();
    assertEquals(f + ":2: samples: expected an object of sample kinds [alloc, free, map, unmap, copy_d2d, copy_h2d, copy_d2h, gemm]",
        error(v3(" \"samples\": [1]")));
    assertEquals(f + ":2: samples.allocs: unknown field (known: [alloc, copy_d2d, copy_d2h, copy_h2d, free, gemm, granularity_bytes, map, skipped,"
        + " total_bytes, unmap])", error(v3(" \"samples\": {\"allocs\": []}")));
    assertEquals(f + ":2: samples.alloc: row 0: size_bytes must be a positive whole number, got -5",
        error(v3(" \"samples\": {\"alloc\": [{\"size_bytes\": -5, \"ns\": [1]}]}")));
    assertEquals(f + ":2: samples.alloc: row 0 (samples.alloc[0]): ns must be a non-empty array of nanoseconds",
        error(v3(" \"samples\": {\"alloc\": [{\"size_bytes\": 5, \"ns\": []}]}")));
    assertEquals(f + ":2: samples.map: row 0: ns must hold non-negative whole numbers of nanoseconds, got 1.5",
        error(v3(" \"samples\": {\"map\": [{\"pages\": 1, \"page_bytes\": 2097152, \"ns\": [1.5]}]}")));
    assertEquals(f + ":2: samples.gemm: row 0: expected exactly [inner, ns, outer, tokens], got {\"tokens\":1,\"ns\":[1]}",
        error(v3(" \"samples\": {\"gemm\": [{\"tokens\": 1, \"ns\": [1]}]}")));
    assertEquals(f + ":2: samples.skipped.gemms: expected a sample kind [alloc, free, map, unmap, copy_d2d, copy_h2d, copy_d2h, gemm] with a reason as text",
        error(v3(" \"samples\": {\"skipped\": {\"gemms\": \"no\"}}")));
    assertEquals(f + ":2: cuda: expected text (a CUDA version such as \"12.6\"), got 12.6", error(v3(" \"cuda\": 12.6")));
    assertEquals(f + ":2: samples: a version 3 field: give \"version\": 3",
        error("{\"format\": \"kvsim-calibration\", \"version\": 2,\n \"samples\": {}}"));
  }

  @Test
  void aCalibrationFileWithoutSamplesCannotBeRefitted() throws IOException {
    Path f = Files.writeString(dir.resolve("plain.json"), v3(" \"latency\": {\"slab\": {\"alloc_base_ns\": 25}}"));
    assertEquals(f + ": samples: missing: this calibration file keeps no raw samples to fit",
        assertThrows(InputException.class, () -> SampleFile.read(f)).getMessage());
  }
}

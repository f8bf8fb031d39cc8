package kvsim.gpu.calibrate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link SummaryTable} on the hand-written fixture: one line per series with its median, p99 and rate. */
class SummaryTableTest {
  @TempDir Path dir;

  @Test
  void eachSeriesGetsItsMedianP99AndRate() throws IOException {
    Samples s = SampleFile.read(CalibrationFitTest.fixture(dir));
    String table = SummaryTable.of(s);
    assertEquals(s.series().size() + 1, table.lines().count(), table);
    java.util.List<String> rows = table.lines().map(l -> l.replaceAll(" +", " ")).toList();
    assertTrue(rows.contains("alloc 2.00 MiB 5 41.0 µs 900.0 µs"), table);
    assertTrue(rows.contains("copy_h2d 1.00 GiB 1 44.739 ms 44.739 ms 24.00 GB/s"), table);
    assertTrue(rows.contains("gemm 4096 tokens, 4096×4096 1 220.0 µs 220.0 µs 624.7 TFLOP/s"), table);
    assertTrue(rows.contains("map 16 × 2.00 MiB 3 330.0 µs 340.0 µs"), table);
  }
}

package kvsim.devicemodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.core.InputException;
import kvsim.testing.SharedData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The all-reduce times: the built-in tables' lookup and interpolation, their derivation from the measured CSV, and the ring roofline. */
class AllReduceTest {
  private static final DeviceSpec A100_40 = DeviceSpec.parse("a100-40");
  private static final DeviceSpec A40 = DeviceSpec.parse("a40");

  @TempDir Path dir;

  @Test
  void aMeasuredSizeGivesTheTablesTimeAndBetweenTwoItIsInterpolatedInLogSpace() {
    AllReduce.Table t = AllReduce.builtIn("a100_dgx");
    // The table's rows (all-reduce-a100_dgx.csv): 8 GPUs, 16 MiB 250,500 ns, 24 MiB 374,000 ns.
    assertEquals(250_500, t.nanos(8, 16_777_216), 1e-6);
    assertEquals(374_000, t.nanos(8, 25_165_824), 1e-6);
    // 20 MiB: f = ln(20/16) / ln(24/16) = 0.55034; 250,500 × (374,000 / 250,500)^f = 312,321.6 ns (the straight line would give 312,250).
    assertEquals(312_321.58, t.nanos(8, 20 * 1_048_576L), 0.01);
    // Below the smallest size, the smallest's time (28,500 ns among 8); above the largest, scaled by the bytes.
    assertEquals(28_500, t.nanos(8, 100), 1e-6);
    assertEquals(2 * 617_000, t.nanos(8, 2 * 67_108_864L), 1e-6);
    // A count the node did not measure has no time.
    assertEquals(-1, t.nanos(3, 1_000_000), 0);
  }

  @Test
  void moreGpusAndMoreBytesTakeLongerAtLargeSizesAndTheH100IsFaster() {
    AllReduce.Table a100 = AllReduce.builtIn("a100_dgx");
    AllReduce.Table h100 = AllReduce.builtIn("h100_dgx");
    for (int n : new int[] {2, 4, 8}) {
      assertTrue(a100.nanos(n, 64 << 20) > a100.nanos(n, 8 << 20), "a100 " + n);
      assertTrue(h100.nanos(n, 64 << 20) < a100.nanos(n, 64 << 20), "h100 " + n);
    }
    assertTrue(a100.nanos(8, 64 << 20) > a100.nanos(2, 64 << 20));
  }

  @Test
  void devicesWithoutAMeasuredNodeTakeTheRingRoofline() {
    // The A40 pair over its NVLink bridge: 2 (2 − 1) / 2 × 8 MiB / 56.25 GB/s = 149,131 ns, plus the A100 pair's 2 KiB time, 46,000 ns.
    double bytes = 8 * 1_048_576.0;
    assertEquals(149_131 + 46_000, AllReduce.nanos(A40, 2, bytes), 1);
    // Four A40s reduce over PCIe, the preset's 24 GB/s host link: 2 × 3/4 × 8 MiB / 24e9 = 524,288 ns, plus the A100 4-GPU latency.
    assertEquals(524_288 + AllReduce.builtIn("a100_dgx").nanos(4, 2048), AllReduce.nanos(A40, 4, bytes), 1);
    // The H200 is not measured: NVLink 4, 450 GB/s each way.
    DeviceSpec h200 = DeviceSpec.parse("h200-141");
    assertEquals(2.0 * 7 / 8 * bytes / 450e9 * 1e9 + 28_500, AllReduce.nanos(h200, 8, bytes), 1);
    // An A100 count other than 2, 4 and 8 (OPT-13B's 40 heads split over 5) takes the ring at 300 GB/s and the 8-GPU latency.
    assertEquals(2.0 * 4 / 5 * bytes / 300e9 * 1e9 + 28_500, AllReduce.nanos(A100_40, 5, bytes), 1);
    assertEquals(0, AllReduce.nanos(A100_40, 1, bytes));
    assertTrue(AllReduce.describe(A40, 2).startsWith("ring roofline: 2(N-1)/N x bytes at 56.25 GB/s"), AllReduce.describe(A40, 2));
    assertTrue(AllReduce.describe(A100_40, 4).startsWith("measured: built-in a100_dgx"), AllReduce.describe(A100_40, 4));
  }

  @ParameterizedTest
  @ValueSource(strings = {"a100_dgx", "h100_dgx"})
  void theBuiltInTableIsTheReductionOfTheMeasuredCsv(String node) throws IOException {
    Path csv = SharedData.require("gpu-profiles/network/" + node + "/all_reduce.csv");
    String builtIn;
    try (InputStream in = AllReduce.class.getResourceAsStream("profiles/all-reduce-" + node + ".csv")) {
      builtIn = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertEquals(builtIn, AllReduce.reduce(csv, node));
  }

  @Test
  void theReductionTakesTheMedianOfTheRowsOfOneNode() throws IOException {
    Path csv = dir.resolve("all_reduce.csv");
    StringBuilder b = new StringBuilder(",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node\n");
    int i = 0;
    // One node of 2 GPUs: rows every 8 KiB from 2 KiB to 64 MiB, 0.010 ms below 32 KiB except one noisy 0.050, then 1 µs per KiB.
    for (long size = 2048; size <= 67_108_864L; size += 8192) {
      double ms = size < 32768 ? (size == 10240 ? 0.050 : 0.010) : size / 1024 * 0.001;
      b.append(i++).append(',').append(ms).append(",0,2,").append(size).append(",all_reduce,2\n");
    }
    // Two nodes of one GPU each: not this node's, left out.
    b.append(i).append(",9.0,0,2,2048,all_reduce,1\n");
    Files.writeString(csv, b.toString());
    AllReduce.Table t = AllReduce.read(AllReduce.reduce(csv, "test"), "test");
    // Rows below 32 KiB: 2, 10, 18 and 26 KiB: 0.010, 0.050, 0.010, 0.010 ms, median 10,000 ns.
    assertEquals(10_000, t.nanos(2, 2048), 1e-6);
    // At 1 MiB, the 90 rows from 741,455 to 1,482,910 bytes: the middle two are 1,107,968 and 1,116,160 bytes, 1.082 and
    // 1.090 ms, so 1,086,000 ns.
    assertEquals(1_086_000, t.nanos(2, 1_048_576), 1e-6);
    assertTrue(AllReduce.reduce(csv, "test").contains("# Rows of several nodes (not used): 1."));
  }

  @Test
  void aCsvWithoutTheTimeColumnIsRefusedNamingIt() throws IOException {
    Path csv = dir.resolve("bad.csv");
    Files.writeString(csv, ",num_workers,size,devices_per_node\n0,2,2048,2\n");
    InputException e = assertThrows(InputException.class, () -> AllReduce.reduce(csv, "x"));
    assertEquals(csv + ":1: no column time_stats.all_reduce.median", e.getMessage());
    Files.writeString(csv, ",time_stats.all_reduce.median,num_workers,size,devices_per_node\n0,0.01,2,lots,2\n");
    e = assertThrows(InputException.class, () -> AllReduce.reduce(csv, "x"));
    assertTrue(e.getMessage().startsWith(csv + ":2: "), e.getMessage());
  }
}

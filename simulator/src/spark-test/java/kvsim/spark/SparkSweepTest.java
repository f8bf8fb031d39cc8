package kvsim.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spark engine of {@code kvsim sweep} on {@code local[2]}: the same grid gives the same table,
 * byte for byte, as the local engine, for L1 and serving cells.
 */
class SparkSweepTest {
  @TempDir Path dir;

  @Test
  void sparkOnLocal2GivesTheLocalEnginesTableByteForByte() throws IOException {
    Path grid = dir.resolve("grid.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=400\", \"kv:requests=30,rate=20\"]\nallocators: [first-fit, buddy, paged]\n"
        + "set: {first-fit.alignment: [512, 2MiB]}\nseeds: 1..5\n");
    assertSameTables(grid, 2 * 2 * 3 * 5);
  }

  @Test
  void servingCellsToo() throws IOException {
    Path grid = dir.resolve("serving.yaml");
    Files.writeString(grid, "workloads: [\"requests:count=40,rate=4\"]\nsystems: [vllm, vllm-v0]\nset: {block-size: [16, 32]}\nseeds: [1, 2]\n");
    assertSameTables(grid, 8);
  }

  private void assertSameTables(Path grid, int cells) throws IOException {
    Path local = dir.resolve("local-" + grid.getFileName());
    Path spark = dir.resolve("spark-" + grid.getFileName());
    CliRun.of("sweep", grid.toString(), "-o", local.toString(), "-q").ok();
    CliRun run = CliRun.of("sweep", grid.toString(), "--engine", "spark", "--master", "local[2]", "-o", spark.toString(), "-q").ok();
    assertTrue(run.out().contains("sweep: " + cells + " cells"), run.out());
    for (String f : List.of("sweep.csv", "sweep.json")) {
      assertArrayEquals(Files.readAllBytes(local.resolve(f)), Files.readAllBytes(spark.resolve(f)), f);
    }
  }
}

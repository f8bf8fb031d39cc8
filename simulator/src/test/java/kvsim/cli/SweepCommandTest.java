package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvsim sweep}: one tidy table whatever the thread count, resumed runs, bad grids refused with nothing written. */
class SweepCommandTest {
  @TempDir Path dir;

  private Path grid(String text) throws IOException {
    Path g = dir.resolve("grid.yaml");
    Files.writeString(g, text);
    return g;
  }

  @Test
  void theTableHasOneRowPerCellAndIsTheSameBytesOnOneThreadOrMany() throws IOException {
    Path g = grid("workloads: [\"churn:ops=300\"]\nallocators: [first-fit, best-fit]\nset: {first-fit.alignment: [512, 2MiB]}\nseeds: 1..4\n");
    CliRun many = CliRun.of("sweep", g.toString(), "-o", dir.resolve("many").toString(), "-q").ok();
    assertTrue(many.out().contains("sweep: 16 cells"), many.out());
    CliRun.of("sweep", g.toString(), "-o", dir.resolve("one").toString(), "--threads", "1", "-q").ok();
    for (String f : List.of("sweep.csv", "sweep.json")) {
      assertArrayEquals(Files.readAllBytes(dir.resolve("many").resolve(f)), Files.readAllBytes(dir.resolve("one").resolve(f)), f);
    }
    List<String> csv = Files.readAllLines(dir.resolve("many/sweep.csv"));
    assertEquals(17, csv.size());
    assertTrue(csv.get(0).startsWith("workload,first-fit.alignment,allocator,seed,events,alloc_count,"), csv.get(0));
    assertTrue(csv.get(0).contains(",external_fragmentation.peak,"), csv.get(0));
    assertTrue(csv.get(1).startsWith("churn:ops=300,512,first-fit,1,300,"), csv.get(1));
    JsonNode table = new ObjectMapper().readTree(dir.resolve("many/sweep.json").toFile());
    assertEquals("kvsim-sweep-table", table.get("format").asText());
    assertEquals(16, table.get("rows").size());
    assertEquals(16, table.get("config").get("cells").asInt());
  }

  @Test
  void aSecondRunResumesAndRunsOnlyTheCellsWithoutAResult() throws IOException {
    Path g = grid("workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\nseeds: 1..5\n");
    Path out = dir.resolve("s");
    CliRun.of("sweep", g.toString(), "-o", out.toString(), "-q").ok();
    byte[] first = Files.readAllBytes(out.resolve("sweep.csv"));
    Path someCell;
    try (Stream<Path> cells = Files.list(out.resolve("cells"))) {
      someCell = cells.sorted().findFirst().orElseThrow();
    }
    Files.delete(someCell);
    CliRun again = CliRun.of("sweep", g.toString(), "-o", out.toString()).ok();
    assertTrue(again.err().contains("5 cells, 4 already done, 1 to run"), again.err());
    assertArrayEquals(first, Files.readAllBytes(out.resolve("sweep.csv")));
  }

  @Test
  void aBadGridIsExitTwoWithItsLineAndNothingWritten() throws IOException {
    Path g = grid("workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\nseeds: 1..x\n");
    Path out = dir.resolve("bad");
    CliRun run = CliRun.of("sweep", g.toString(), "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("grid.yaml:3: seeds: 'x' is not a whole number"), run.err());
    assertFalse(Files.exists(out));
    CliRun unknown = CliRun.of("sweep", grid("workloads: [\"churn:ops=3\"]\nallocators: [no-such]\n").toString(), "-o", out.toString());
    assertEquals(2, unknown.exitCode());
    assertTrue(unknown.err().contains("no-such"), unknown.err());
  }

  @Test
  void aFolderOfSomethingElseIsRefusedAndTheSparkEngineNeedsTheSparkBuild() throws IOException {
    Path g = grid("workloads: [\"churn:ops=30\"]\nallocators: [first-fit]\n");
    Path mine = dir.resolve("mine");
    Files.createDirectories(mine);
    Files.writeString(mine.resolve("notes.txt"), "keep me");
    CliRun run = CliRun.of("sweep", g.toString(), "-o", mine.toString());
    assertEquals(2, run.exitCode());
    assertEquals("keep me", Files.readString(mine.resolve("notes.txt")));
    CliRun spark = CliRun.of("sweep", g.toString(), "--engine", "spark", "-o", dir.resolve("sp").toString());
    if (spark.exitCode() == 2) {
      assertTrue(spark.err().contains("--engine spark:"), spark.err());
    }
  }
}

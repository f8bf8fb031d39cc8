package kvsim.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import kvsim.config.GridSpec;
import kvsim.core.InputException;
import kvsim.run.GridSweep;
import kvsim.testing.CliRun;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spark engine of {@code kvsim sweep} on {@code local[2]}: the same grid gives the same table,
 * byte for byte, as the local engine, for L1 and serving cells; one job runs a task per cell; an
 * input the driver reads but an executor cannot ends the run at once with one line.
 */
class SparkSweepTest {
  @TempDir Path dir;

  /**
   * Counts the jobs and tasks of every Spark context of this JVM that names it in {@code
   * spark.extraListeners}, and the most tasks running at once.
   */
  public static final class Jobs extends SparkListener {
    static final AtomicInteger JOBS = new AtomicInteger();
    static final AtomicInteger TASKS = new AtomicInteger();
    static final AtomicInteger RUNNING = new AtomicInteger();
    static final AtomicInteger MOST_RUNNING = new AtomicInteger();

    /** Spark makes it from the context's configuration. */
    public Jobs(SparkConf conf) {}

    @Override
    public void onJobStart(SparkListenerJobStart start) {
      JOBS.incrementAndGet();
    }

    @Override
    public void onTaskStart(SparkListenerTaskStart start) {
      MOST_RUNNING.accumulateAndGet(RUNNING.incrementAndGet(), Math::max);
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      RUNNING.decrementAndGet();
      TASKS.incrementAndGet();
    }
  }

  @AfterEach
  void noListener() {
    System.clearProperty("spark.extraListeners");
  }

  @Test
  void oneJobRunsATaskPerCellTwoAtATime() throws IOException {
    Jobs.JOBS.set(0);
    Jobs.TASKS.set(0);
    Jobs.RUNNING.set(0);
    Jobs.MOST_RUNNING.set(0);
    System.setProperty("spark.extraListeners", Jobs.class.getName());
    GridSweep.GridFile grid = grid("grid.yaml", "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, buddy]\nseeds: 1..12\n");
    List<GridSweep.Cell> cells = GridSweep.cells(grid.spec());
    List<Integer> arrived = new ArrayList<>();
    GridSweep.engine("spark", 1, Map.of("master", "local[2]")).run(grid, cells, (cell, row) -> arrived.add(cell.index()));
    assertEquals(1, Jobs.JOBS.get(), "jobs");
    assertEquals(24, Jobs.TASKS.get(), "tasks");
    // Both cores' first tasks are launched in one round of offers, so both start before either
    // ends; later a task's start may be reported before the end of the task it follows, so more.
    assertTrue(Jobs.MOST_RUNNING.get() >= 2, "tasks running at once on local[2]: " + Jobs.MOST_RUNNING.get());
    assertEquals(24, arrived.size());
    assertEquals(24, arrived.stream().distinct().count(), arrived.toString());
  }

  @Test
  void pastSixtyFourTasksPerCoreCellsShareTasks() throws IOException {
    Jobs.JOBS.set(0);
    Jobs.TASKS.set(0);
    System.setProperty("spark.extraListeners", Jobs.class.getName());
    GridSweep.GridFile grid = grid("grid.yaml", "workloads: [\"churn:ops=50\"]\nallocators: [first-fit]\nseeds: 1..131\n");
    List<GridSweep.Cell> cells = GridSweep.cells(grid.spec());
    List<Integer> arrived = new ArrayList<>();
    GridSweep.engine("spark", 1, Map.of("master", "local[2]")).run(grid, cells, (cell, row) -> arrived.add(cell.index()));
    assertEquals(1, Jobs.JOBS.get(), "jobs");
    assertEquals(2 * SparkSweepEngine.TASKS_PER_CORE, Jobs.TASKS.get(), "tasks: 16 per core of local[2]");
    assertEquals(131, arrived.stream().distinct().count(), arrived.toString());
  }

  @Test
  void cellsAreDealtOnePerTaskOrRoundRobinPastTheLimitWhenAlike() {
    GridSpec g = grid("g.yaml", "workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\nseeds: 1..5\n").spec();
    List<GridSweep.Cell> cells = GridSweep.cells(g);
    long[] alike = {300, 300, 300, 300, 300};
    assertEquals(List.of(List.of(0), List.of(1), List.of(2), List.of(3), List.of(4)), indices(SparkSweepEngine.tasks(cells, 10, alike)));
    assertEquals(List.of(List.of(0, 2, 4), List.of(1, 3)), indices(SparkSweepEngine.tasks(cells, 2, alike)));
    assertEquals(List.of(List.of(0, 2, 4), List.of(1, 3)), indices(SparkSweepEngine.tasks(cells, 2, new long[5])), "no estimates: alike");
  }

  @Test
  void groupedCellsAreBalancedByEstimatedCostLongestFirst() {
    GridSpec g = grid("g.yaml", "workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\nseeds: 1..7\n").spec();
    List<GridSweep.Cell> cells = GridSweep.cells(g);
    // One long cell (6) among short ones: a task of its own, started first; the rest split evenly.
    assertEquals(List.of(List.of(6), List.of(0, 2, 4), List.of(1, 3, 5)),
        indices(SparkSweepEngine.tasks(cells, 3, new long[] {10, 10, 10, 10, 10, 10, 100})));
    // Longest first, each to the lighter task: 7 | 5, 4 -> 9 | 3 -> 10 | 3 -> 12 | 2 -> 12 | 1 on the tie to the first: 13 and 12.
    assertEquals(List.of(List.of(0, 3, 5, 6), List.of(1, 2, 4)),
        indices(SparkSweepEngine.tasks(cells, 2, new long[] {7, 5, 4, 3, 3, 2, 1})));
    // Cells without an estimate (0) count the median of the others (20): 30, 20, 20, 20, 10 -> {30, 20} and {20, 20, 10}.
    assertEquals(List.of(List.of(0, 4), List.of(1, 2, 3)),
        indices(SparkSweepEngine.tasks(cells.subList(0, 5), 2, new long[] {30, 10, 20, 0, 0})));
  }

  @Test
  void aTraceAnExecutorCannotReadEndsTheRunAtOnceWithOneLine() {
    // The driver checks inputs first (GridSweep.validate); the engine alone meets the missing file on its executor.
    GridSweep.GridFile grid = grid("grid.yaml", "workloads: [gone.jsonl]\nallocators: [first-fit, buddy]\n");
    List<GridSweep.Cell> cells = GridSweep.cells(grid.spec());
    List<GridSweep.Cell> stored = new ArrayList<>();
    // local[2,4]: a failed task would be tried 4 times, as on a cluster
    InputException e = assertThrows(InputException.class,
        () -> GridSweep.engine("spark", 1, Map.of("master", "local[2,4]")).run(grid, cells, (cell, row) -> stored.add(cell)));
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertTrue(e.getMessage().contains(dir.resolve("gone.jsonl").toString()), e.getMessage());
    assertTrue(e.getMessage().contains("on Spark executor driver"), e.getMessage());
    assertTrue(stored.isEmpty(), stored.toString());
  }

  @Test
  void tracesAreShippedWithTheJobAndReadFromTheCopies() throws IOException {
    // Two traces of one file name in two folders, of different content, and a link of another name
    // to one of them (Spark names a file by its real path): each shipped under a distinct name.
    Files.createDirectories(dir.resolve("a"));
    Files.createDirectories(dir.resolve("b"));
    CliRun.of("generate", "churn", "--ops=400", "--seed=1", "-o", dir.resolve("a/t.jsonl").toString()).ok();
    CliRun.of("generate", "churn", "--ops=400", "--seed=2", "-o", dir.resolve("b/t.jsonl").toString()).ok();
    Files.createSymbolicLink(dir.resolve("c.jsonl"), dir.resolve("a/t.jsonl"));
    GridSweep.GridFile grid = grid("grid.yaml", "workloads: [a/t.jsonl, b/t.jsonl, c.jsonl]\nallocators: [first-fit]\n"
        + "set: {first-fit.alignment: [512, 1KiB, 2KiB, 4KiB, 8KiB, 16KiB, 32KiB, 64KiB, 128KiB, 2MiB]}\n");
    List<GridSweep.Cell> cells = GridSweep.cells(grid.spec());
    assertEquals(List.of(dir.resolve("a/t.jsonl"), dir.resolve("b/t.jsonl"), dir.resolve("c.jsonl")), GridSweep.inputs(grid.spec()));
    Map<Integer, String> local = new java.util.TreeMap<>();
    GridSweep.local(1).run(grid, cells, (cell, row) -> local.put(cell.index(), row));
    assertTrue(!local.get(0).equals(local.get(10)), "the two traces differ");
    // Once the first row is back the driver's traces are gone: later cells can read only the copies.
    Map<Integer, String> spark = new java.util.TreeMap<>();
    GridSweep.engine("spark", 1, Map.of("master", "local[2]")).run(grid, cells, (cell, row) -> {
      Files.deleteIfExists(dir.resolve("a/t.jsonl"));
      Files.deleteIfExists(dir.resolve("b/t.jsonl"));
      spark.put(cell.index(), row);
    });
    assertEquals(local, spark);
  }

  @Test
  void aShippedTraceMalformedPastItsHeaderIsOneLineNamingTheDriversPath() throws IOException {
    Path trace = dir.resolve("t.jsonl");
    CliRun.of("generate", "churn", "--ops=50", "-o", trace.toString()).ok();
    Files.writeString(trace, Files.readString(trace) + "{not json\n");
    GridSweep.GridFile grid = grid("grid.yaml", "workloads: [t.jsonl]\nallocators: [first-fit]\n");
    InputException e = assertThrows(InputException.class,
        () -> GridSweep.engine("spark", 1, Map.of("master", "local[2,4]")).run(grid, GridSweep.cells(grid.spec()), (cell, row) -> {}));
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertTrue(e.getMessage().startsWith(trace + ":"), e.getMessage());
    assertTrue(e.getMessage().contains("(on Spark executor driver"), e.getMessage());
  }

  @Test
  void aMissingTraceIsExit2WithOneLineBeforeTheJob() throws IOException {
    Path g = dir.resolve("grid.yaml");
    Files.writeString(g, "workloads: [gone.jsonl]\nallocators: [first-fit]\n");
    Path out = dir.resolve("out");
    CliRun run = CliRun.of("sweep", g.toString(), "--engine", "spark", "--master", "local[2]", "-o", out.toString(), "-q");
    assertEquals(2, run.exitCode(), run.err());
    assertEquals(1, run.err().lines().count(), run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + g + ":1: workloads: "), run.err());
    assertTrue(run.err().contains("gone.jsonl"), run.err());
    assertFalse(Files.exists(out), "no result folder");
  }

  @Test
  void aMasterOfNoKnownFormIsExit2WithOneLineBeforeTheFolder() throws IOException {
    Path g = dir.resolve("grid.yaml");
    Files.writeString(g, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\n");
    for (String master : List.of("local[x]", "local[0]", "spark-host:7077")) {
      Path out = dir.resolve("out");
      CliRun run = CliRun.of("sweep", g.toString(), "--engine", "spark", "--master", master, "-o", out.toString(), "-q");
      assertEquals(2, run.exitCode(), run.err());
      assertEquals("kvsim: error: --master " + master + ": not a Spark master URL (local, local[N], local[N,F], local-cluster[N,C,MiB], "
          + "spark://HOST:PORT, yarn, k8s://…)\n", run.err());
      assertFalse(Files.exists(out), "no result folder");
    }
  }

  @Test
  void aMasterUrlSparkCannotParseIsExit2WithOneLine() throws IOException {
    Path g = dir.resolve("grid.yaml");
    Files.writeString(g, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\n");
    CliRun run = CliRun.of("sweep", g.toString(), "--engine", "spark", "--master", "bogus://x", "-o", dir.resolve("out").toString(), "-q");
    assertEquals(2, run.exitCode(), run.err());
    assertEquals("kvsim: error: --master bogus://x: Could not parse Master URL: 'bogus://x'\n", run.err());
  }

  @Test
  void aSinkErrorEndsTheJobAndSurfacesAsItself() {
    GridSweep.GridFile grid = grid("grid.yaml", "workloads: [\"churn:ops=300\"]\nallocators: [first-fit]\nseeds: 1..20\n");
    List<GridSweep.Cell> cells = GridSweep.cells(grid.spec());
    AtomicInteger taken = new AtomicInteger();
    IOException e = assertThrows(IOException.class, () -> GridSweep.engine("spark", 1, Map.of("master", "local[2]")).run(grid, cells, (cell, row) -> {
      if (taken.incrementAndGet() == 3) {
        throw new IOException("disk full");
      }
    }));
    assertEquals("disk full", e.getMessage());
    assertEquals(3, taken.get());
  }

  private GridSweep.GridFile grid(String name, String text) {
    try {
      Path f = dir.resolve(name);
      Files.writeString(f, text);
      return GridSweep.GridFile.read(f);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static List<List<Integer>> indices(List<List<GridSweep.Cell>> tasks) {
    return tasks.stream().map(t -> t.stream().map(GridSweep.Cell::index).toList()).toList();
  }

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

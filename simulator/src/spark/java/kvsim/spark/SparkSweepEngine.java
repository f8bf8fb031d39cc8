package kvsim.spark;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import kvsim.config.GridSpec;
import kvsim.core.InputException;
import kvsim.run.GridSweep;
import org.apache.spark.SimpleFutureAction;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkException;
import org.apache.spark.SparkFiles;
import org.apache.spark.api.java.JavaSparkContext;
import scala.runtime.BoxedUnit;

/**
 * The Apache Spark engine of {@code kvsim sweep --engine spark}: each cell of the grid is one Spark
 * task (Note [A task per cell]), all of them in one job. The driver ships the grid file's text and
 * the cells; a task parses the grid (once per executor JVM and grid), runs its cell with the same
 * code as the local engine ({@link GridSweep#run}) and sends back the row as JSON text, so the
 * table is the same bytes as the local engine's. Each row reaches the driver as its task finishes
 * and is stored there at once (Note [One job, rows as tasks finish]), so an interrupted sweep
 * resumes where it stopped. The files the cells read (traces, request logs, the calibration) are
 * shipped with the job from the driver, which has checked them (Note [Inputs shipped with the
 * job]). A cell whose input an executor cannot read ends the run at once, with one line naming the
 * input and the executor (Note [Input errors on an executor]).
 *
 * <p>The master is {@code --master}, else what {@code spark-submit} set ({@code spark.master}),
 * else {@code local[*]}.
 */
public final class SparkSweepEngine implements GridSweep.EngineProvider {
  /**
   * The most tasks of one sweep; a larger grid deals its cells into this many tasks, balanced by
   * their estimated cost (Note [Tasks balanced by estimated cost]).
   *
   * <p>Note [A task per cell]: the grid used to be cut into 4 × default parallelism slices of
   * consecutive cells (50–150 each in the grids measured), and cells in grid order come in runs of
   * like cost (the seed varies fastest), so one slice of a slow workload held its executor long
   * after the others were idle, and a run stopped mid-way lost every finished cell of its slices.
   * Now each cell is its own task: Spark hands the next cell to whichever executor is free, so a
   * slow cell holds one core and no other cell, and each cell is stored as it finishes. A task
   * costs Spark some work on the driver and on the executor, and some memory while the job runs,
   * so past {@link #TASKS_PER_CORE} tasks per core of the cluster, or past {@value} tasks in all,
   * cells are grouped (Note [Tasks balanced by estimated cost]).
   *
   * <p>Note [Tasks balanced by estimated cost]: grouped cells are dealt longest first. Sorted by
   * their estimated cost ({@link GridSweep#estimatedCost}; a cell without one counts the grid's
   * median), each goes to the task with the least estimated cost so far, the first such task on a
   * tie (the longest-processing-time rule). Tasks are then numbered heaviest first, since Spark
   * starts a job's tasks in that order, so that light ones fill the cores' last gaps. Cells of
   * equal estimates are thus dealt round-robin (cell i to task i mod n), which spreads a run of like
   * cells over every task, and a few long cells among many short ones get tasks of their own,
   * started first. Measured on 2 cores ({@code local[2]}, 400 cells of churn at 200,000
   * operations, interleaved runs): 64 tasks per core took 19.5–20.2 s, 16 per core 17.3–18.3 s,
   * the local engine 13.6–14.8 s. With 16 tasks per core, the last task a core starts is still
   * about 1/16 of its work.
   */
  static final int MAX_TASKS = 10_000;

  /** Tasks per core of the cluster (Spark's default parallelism) past which cells are grouped (Note [Tasks balanced by estimated cost]). */
  static final int TASKS_PER_CORE = 16;

  @Override
  public String name() {
    return "spark";
  }

  @Override
  public GridSweep.Engine create(Map<String, String> options) {
    try {
      Class.forName("org.apache.spark.api.java.JavaSparkContext");
    } catch (ClassNotFoundException | LinkageError e) {
      throw new InputException("--engine spark: Apache Spark is not on the class path; run this jar with spark-submit "
          + "(spark-submit --class kvsim.cli.KvSim kvsim-spark.jar sweep GRID.yaml --engine spark), or use --engine local");
    }
    String master = options.get("master");
    if (master != null && !MASTER.matcher(master).matches()) {
      throw new InputException("--master " + master + ": not a Spark master URL (local, local[N], local[N,F], local-cluster[N,C,MiB], "
          + "spark://HOST:PORT, yarn, k8s://…)");
    }
    return (grid, cells, sink) -> run(master, grid, cells, sink);
  }

  /**
   * The master URLs Spark 4 knows by their form ({@code SparkContext}'s own patterns), checked before
   * the result folder is made; a URL with a scheme is left to Spark and its cluster managers.
   */
  private static final java.util.regex.Pattern MASTER = java.util.regex.Pattern.compile(
      "local|local\\[(\\*|[1-9][0-9]*)(,[1-9][0-9]*)?\\]|local-cluster\\[[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*\\]|yarn|[A-Za-z][A-Za-z0-9+.-]*://.+");

  /**
   * What a task sends back for one cell: its row, or the one-line message of an input error on the
   * executor that ran it.
   *
   * @param index the cell's position in the grid
   * @param rowJson the row, or null after an error
   * @param error the error's message (naming the executor), or null
   */
  record CellResult(int index, String rowJson, String error) implements Serializable {}

  /**
   * Returns the cells dealt into tasks: one cell each, or into {@code maxTasks} tasks balanced by
   * {@code costs} (estimated, 0 for unknown), heaviest task first (Note [Tasks balanced by estimated cost]).
   */
  static List<List<GridSweep.Cell>> tasks(List<GridSweep.Cell> cells, int maxTasks, long[] costs) {
    int n = Math.min(cells.size(), maxTasks);
    long[] known = java.util.Arrays.stream(costs).filter(c -> c > 0).sorted().toArray();
    long median = known.length == 0 ? 1 : known[known.length / 2];
    long[] cost = new long[cells.size()];
    List<Integer> order = new ArrayList<>(cells.size());
    for (int i = 0; i < cost.length; i++) {
      cost[i] = costs[i] > 0 ? costs[i] : median;
      order.add(i);
    }
    order.sort((a, b) -> cost[a] != cost[b] ? Long.compare(cost[b], cost[a]) : Integer.compare(a, b));
    long[] load = new long[n];
    List<List<GridSweep.Cell>> tasks = new ArrayList<>(n);
    java.util.PriorityQueue<Integer> lightest = new java.util.PriorityQueue<>(
        (a, b) -> load[a] != load[b] ? Long.compare(load[a], load[b]) : Integer.compare(a, b));
    for (int t = 0; t < n; t++) {
      tasks.add(new ArrayList<>());
      lightest.add(t);
    }
    for (int i : order) {
      int t = lightest.poll();
      tasks.get(t).add(cells.get(i));
      load[t] += cost[i];
      lightest.add(t);
    }
    List<Integer> byLoad = new ArrayList<>(n);
    for (int t = 0; t < n; t++) {
      byLoad.add(t);
    }
    byLoad.sort((a, b) -> load[a] != load[b] ? Long.compare(load[b], load[a]) : Integer.compare(a, b));
    List<List<GridSweep.Cell>> heaviestFirst = new ArrayList<>(n);
    for (int t : byLoad) {
      tasks.get(t).sort(java.util.Comparator.comparingInt(GridSweep.Cell::index));
      heaviestFirst.add(tasks.get(t));
    }
    return heaviestFirst;
  }

  /*
   * Note [One job, rows as tasks finish]: rows used to come back through RDD.toLocalIterator(),
   * which runs one job per partition, each after the one before, so no two tasks ever ran at once
   * whatever the number of executors (issue 29: a 2-worker cluster took 25.9 s where the local
   * engine took 7.7 s). Now one job (SparkContext.submitJob) covers every task; its result
   * handler, called on Spark's scheduler thread as each task succeeds, only queues the task's rows,
   * and the calling thread takes them from the queue and hands them to the sink, which stores
   * each cell at once. The sink's file writes thus never hold up the scheduler, and a sink error
   * (a full disk) cancels the job and surfaces as itself.
   */
  private static void run(String master, GridSweep.GridFile grid, List<GridSweep.Cell> cells, GridSweep.CellSink sink) throws IOException {
    if (cells.isEmpty()) {
      return;
    }
    SparkConf conf = new SparkConf().setAppName("kvsim sweep " + grid.source()).set("spark.ui.enabled", "false");
    if (master != null) {
      conf.setMaster(master);
    } else if (!conf.contains("spark.master")) {
      conf.setMaster("local[*]");
    }
    Map<Integer, GridSweep.Cell> byIndex = new HashMap<>();
    for (GridSweep.Cell c : cells) {
      byIndex.put(c.index(), c);
    }
    Path staging = Files.createTempDirectory("kvsim-sweep-inputs");
    try (JavaSparkContext sc = context(conf)) {
      sc.setLogLevel("WARN");
      GridSpec spec = grid.spec();
      long[] costs = new long[cells.size()];
      for (int i = 0; i < costs.length; i++) {
        costs[i] = GridSweep.estimatedCost(spec, cells.get(i));
      }
      List<List<GridSweep.Cell>> tasks = tasks(cells, (int) Math.min(MAX_TASKS, (long) TASKS_PER_CORE * sc.defaultParallelism()), costs);
      HashMap<String, String> shipped = ship(sc, GridSweep.inputs(spec), staging);
      List<Object> partitions = new ArrayList<>(tasks.size());
      for (int i = 0; i < tasks.size(); i++) {
        partitions.add(i);
      }
      BlockingQueue<CellResult> arrived = new LinkedBlockingQueue<>();
      scala.Function1<scala.collection.Iterator<List<GridSweep.Cell>>, CellResult[]> task =
          (scala.Function1<scala.collection.Iterator<List<GridSweep.Cell>>, CellResult[]> & Serializable) part -> runTask(grid, shipped, part);
      scala.Function2<Object, CellResult[], BoxedUnit> onResult = (partition, results) -> {
        arrived.addAll(List.of(results));
        return BoxedUnit.UNIT;
      };
      SimpleFutureAction<BoxedUnit> job = sc.sc().submitJob(sc.parallelize(tasks, tasks.size()).rdd(), task,
          scala.jdk.javaapi.CollectionConverters.asScala(partitions).toList(), onResult, () -> BoxedUnit.UNIT);
      try {
        int received = 0;
        while (received < cells.size()) {
          CellResult r = arrived.poll(50, TimeUnit.MILLISECONDS);
          if (r == null) {
            if (job.isCompleted() && arrived.isEmpty()) {
              break; // failed (get() below says why), or every result taken
            }
            continue;
          }
          received++;
          if (r.error() != null) {
            throw new InputException(r.error());
          }
          sink.accept(byIndex.get(r.index()), r.rowJson());
        }
        job.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("sweep interrupted");
      } catch (SparkException e) {
        throw new IOException("the Spark job failed: " + e.getMessage(), e); // not an input's fault: an executor lost 4 times, a bug
      } finally {
        if (!job.isCompleted()) {
          job.cancel();
        }
      }
    } finally {
      deleteStaging(staging);
    }
  }

  /*
   * Note [Inputs shipped with the job]: a trace named in the grid used to be read by each executor
   * at the driver's path, so on a cluster it had to sit at that path on every node, and with it
   * missing on one worker a run failed or succeeded by chance (issue 29). Now the driver, which
   * has checked every input (GridSweep.validate), adds each input file to the job
   * (SparkContext.addFile): Spark copies it once to every executor, and a task reads its copy
   * (SparkFiles.get) in place of the driver's path. Spark keys shipped files by the name of their
   * real path (symbolic links followed), so two inputs of one name (a/t.jsonl, b/t.jsonl) are
   * shipped as hard links (else copies) of distinct names in a folder of the driver's. Rows name
   * the workload as the grid wrote it, never the path read, and an executor's message about its
   * copy is given back the driver's path, so the table and the errors are the local engine's.
   */
  /** Adds each input file to the job; returns its Spark file name by the driver's path. */
  private static HashMap<String, String> ship(JavaSparkContext sc, List<Path> inputs, Path staging) throws IOException {
    HashMap<String, String> shipped = new HashMap<>();
    java.util.Set<String> names = new java.util.HashSet<>();
    for (Path input : inputs) {
      if (!Files.isRegularFile(input)) {
        continue; // the driver's checks passed without it (a folder an importer reads): read in place
      }
      Path file = input.toRealPath(); // Spark names a file by its real path's name, links followed
      String name = file.getFileName().toString();
      if (!names.add(name)) {
        String base = name;
        for (int k = 2; !names.add(name); k++) {
          name = k + "-" + base;
        }
        Path copy = staging.resolve(name); // a hard link keeps its own name; else a copy
        try {
          file = Files.createLink(copy, file);
        } catch (IOException | UnsupportedOperationException e) {
          file = Files.copy(file, copy);
        }
      }
      sc.addFile(file.toString());
      shipped.put(input.toString(), name);
    }
    return shipped;
  }

  private static void deleteStaging(Path staging) throws IOException {
    try (java.util.stream.Stream<Path> links = Files.list(staging)) {
      for (Path link : (Iterable<Path>) links::iterator) {
        Files.deleteIfExists(link);
      }
    }
    Files.deleteIfExists(staging);
  }

  /** Starts Spark; a master URL Spark cannot parse ({@code bogus://x}) is an InputException. */
  private static JavaSparkContext context(SparkConf conf) {
    try {
      return new JavaSparkContext(conf);
    } catch (Exception e) { // Spark throws its checked SparkException undeclared
      Throwable spark = e instanceof SparkException ? e : e.getCause();
      if (spark instanceof SparkException && spark.getMessage() != null && spark.getMessage().startsWith("Could not parse Master URL")) {
        throw new InputException("--master " + conf.get("spark.master") + ": " + spark.getMessage());
      }
      if (e instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException("Spark did not start: " + e.getMessage(), e);
    }
  }

  /** The grid last parsed in this JVM: an executor's tasks of one sweep parse it once. */
  private static volatile Object[] parsed;

  private static GridSpec spec(GridSweep.GridFile grid) {
    Object[] p = parsed;
    if (p != null && p[0].equals(grid)) {
      return (GridSpec) p[1];
    }
    GridSpec spec = grid.spec();
    parsed = new Object[] {grid, spec};
    return spec;
  }

  /**
   * Runs one task's cells on an executor.
   *
   * <p>Note [Input errors on an executor]: the driver has checked every input before the job
   * ({@link GridSweep#validate}) and shipped each input file with the job (Note [Inputs shipped
   * with the job]), so an input error here means that an executor's copy differs (a trace that
   * changed while the job ran, or is malformed past the header the driver read) or that an input
   * read in place (a folder) is not there on this executor's node. Thrown, it would fail the task, which Spark
   * retries (4 attempts on a cluster) before the driver sees some 25 lines of stack trace; the
   * same error on a second attempt teaches nothing. So the task returns it as a result, with the
   * executor's id and host, and the driver ends the run at its first such result: exit 2, one line.
   */
  private static CellResult[] runTask(GridSweep.GridFile grid, Map<String, String> shipped, scala.collection.Iterator<List<GridSweep.Cell>> part) {
    Map<String, String> copies = new HashMap<>(); // the driver's path by this executor's copy
    java.util.function.UnaryOperator<Path> local = path -> {
      String name = shipped.get(path.toString());
      if (name == null) {
        return path;
      }
      String copy = SparkFiles.get(name);
      copies.put(copy, path.toString());
      return Path.of(copy);
    };
    List<CellResult> out = new ArrayList<>();
    while (part.hasNext()) {
      for (GridSweep.Cell c : part.next()) {
        try {
          out.add(new CellResult(c.index(), GridSweep.rowJson(GridSweep.run(spec(grid), c, local)), null));
        } catch (InputException e) {
          String message = e.getMessage();
          for (Map.Entry<String, String> copy : copies.entrySet()) {
            message = message.replace(copy.getKey(), copy.getValue());
          }
          out.add(new CellResult(c.index(), null, message + " (on Spark executor " + executor() + ", cell " + c.key() + ")"));
          return out.toArray(new CellResult[0]);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
    return out.toArray(new CellResult[0]);
  }

  /** Returns this executor's id and host, as Spark's logs and UI name them. */
  private static String executor() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return "?";
    }
    String host = env.blockManager() == null ? null : env.blockManager().blockManagerId().host();
    return env.executorId() + (host == null ? "" : " on " + host);
  }
}

package kvsim.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import kvsim.config.GridSpec;
import kvsim.core.InputException;
import kvsim.run.GridSweep;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The Apache Spark engine of {@code kvsim sweep --engine spark}: each cell of the grid is one Spark
 * task. The driver ships the grid file's text and the cells; each partition parses the grid once,
 * runs its cells with the same code as the local engine ({@link GridSweep#run}) and sends back
 * each row as JSON text, so the table is the same bytes as the local engine's. Rows stream back
 * partition by partition ({@code toLocalIterator}), and each is stored as it arrives, so an
 * interrupted sweep resumes where it stopped.
 *
 * <p>The master is {@code --master}, else what {@code spark-submit} set ({@code spark.master}),
 * else {@code local[*]}.
 */
public final class SparkSweepEngine implements GridSweep.EngineProvider {
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
    return (grid, cells, sink) -> run(master, grid, cells, sink);
  }

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
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.setLogLevel("WARN");
      int slices = Math.max(1, Math.min(cells.size(), sc.defaultParallelism() * 4));
      Iterator<String[]> rows = sc.parallelize(cells, slices)
          .mapPartitions(part -> {
            GridSpec spec = grid.spec();
            List<String[]> out = new ArrayList<>();
            while (part.hasNext()) {
              GridSweep.Cell c = part.next();
              out.add(new String[] {Integer.toString(c.index()), GridSweep.rowJson(GridSweep.run(spec, c))});
            }
            return out.iterator();
          })
          .toLocalIterator();
      java.util.Map<Integer, GridSweep.Cell> byIndex = new java.util.HashMap<>();
      for (GridSweep.Cell c : cells) {
        byIndex.put(c.index(), c);
      }
      while (rows.hasNext()) {
        String[] r = rows.next();
        sink.accept(byIndex.get(Integer.parseInt(r[0])), r[1]);
      }
    }
  }
}

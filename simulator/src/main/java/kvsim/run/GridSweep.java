package kvsim.run;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import kvsim.config.GridSpec;
import kvsim.core.InputException;
import kvsim.registry.WorkloadRegistry;

/**
 * A sweep over a grid ({@link GridSpec}): the cells of the grid's cross product, each one an
 * independent run of one workload on one allocator or serving system with one set of options and
 * one seed, and the row of results each cell gives. Cells are numbered in a fixed order (workload,
 * device, model, the {@code set} options in file order, allocator or system, seed; the last
 * varies fastest), so the table of a sweep never depends on the engine that ran it or on the
 * number of threads.
 *
 * <p>An {@link Engine} runs cells and hands back each cell's row as a JSON text: the local engine
 * on this machine's cores ({@link #local}), others (Apache Spark, in the {@code spark} build) found
 * by name through {@link EngineProvider} and {@link ServiceLoader}. Rows travel as text so every
 * engine's rows are the same bytes.
 */
public final class GridSweep {
  private static final ObjectMapper JSON = new ObjectMapper();

  private GridSweep() {}

  /**
   * One cell: its position in the grid and the values that define it, by column name.
   *
   * @param index position in the grid's fixed order
   * @param params workload, device, model, options, allocator or system, seed
   */
  public record Cell(int index, Map<String, String> params) implements Serializable {
    /** Returns the cell's identity: its parameters as one line, the same in every run of the grid. */
    public String key() {
      StringBuilder sb = new StringBuilder();
      params.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : "|").append(k).append('=').append(v));
      return sb.toString();
    }
  }

  /** Receives the rows of finished cells, one call at a time, in any order. */
  @FunctionalInterface
  public interface CellSink {
    /** Takes the row of {@code cell}, a JSON object. */
    void accept(Cell cell, String rowJson) throws IOException;
  }

  /** Something that runs cells: this machine's threads, or a cluster. */
  public interface Engine {
    /** Runs {@code cells} of {@code grid} and hands each row to {@code sink}. */
    void run(GridFile grid, List<Cell> cells, CellSink sink) throws IOException;
  }

  /** An engine that another build adds (Apache Spark), found through {@link ServiceLoader}. */
  public interface EngineProvider {
    /** Returns the engine's name, as {@code --engine} gives it. */
    String name();

    /** Returns the engine for these options ({@code master} for Spark). */
    Engine create(Map<String, String> options);
  }

  /**
   * A grid as a file's text, which any machine can parse again: what cluster engines ship to
   * their workers.
   *
   * @param source the file as the user named it
   * @param text its content
   * @param dir the folder its relative paths are resolved against
   */
  public record GridFile(String source, String text, String dir) implements Serializable {
    /** Reads a grid file; a missing or unreadable file is an InputException naming it. */
    public static GridFile read(Path file) {
      try {
        return new GridFile(file.toString(), java.nio.file.Files.readString(file, java.nio.charset.StandardCharsets.UTF_8),
            file.toAbsolutePath().getParent().toString());
      } catch (java.nio.file.NoSuchFileException e) {
        throw new InputException(file + ": no such file");
      } catch (IOException e) {
        throw new InputException(file + ": cannot read: " + e.getMessage());
      }
    }

    /** Parses the grid. */
    public GridSpec spec() {
      return GridSpec.parse(source, text, Path.of(dir));
    }
  }

  /** Returns the engine named {@code name}: {@code local}, or one a provider on the class path adds. */
  public static Engine engine(String name, int threads, Map<String, String> options) {
    if (name.equals("local")) {
      return local(threads);
    }
    List<String> known = new ArrayList<>(List.of("local"));
    Iterator<EngineProvider> providers = ServiceLoader.load(EngineProvider.class).iterator();
    while (true) {
      EngineProvider p;
      try {
        if (!providers.hasNext()) {
          break;
        }
        p = providers.next();
      } catch (ServiceConfigurationError e) {
        continue; // a provider listed by a stale build whose classes are gone: as if absent
      }
      if (p.name().equals(name)) {
        return p.create(options);
      }
      known.add(p.name());
    }
    if (name.equals("spark")) {
      throw new InputException("--engine spark: this kvsim was built without Apache Spark; build kvsim-spark.jar with `mvn -Pspark package` and run "
          + "`spark-submit --class kvsim.cli.KvSim simulator/target/kvsim-spark.jar sweep GRID.yaml --engine spark`, or use --engine local");
    }
    throw new InputException("--engine " + name + ": unknown engine (known: " + String.join(", ", known) + ")");
  }

  /** Returns the engine that runs cells on {@code threads} threads of this machine. */
  public static Engine local(int threads) {
    return (grid, cells, sink) -> {
      if (cells.isEmpty()) {
        return;
      }
      GridSpec spec = grid.spec();
      Parallel.map(cells.size(), threads, i -> {
        String row = rowJson(run(spec, cells.get(i)));
        synchronized (sink) {
          sink.accept(cells.get(i), row);
        }
        return null;
      });
    };
  }

  /** Returns the grid's cells in their fixed order; checks the grid's names before anything runs. */
  public static List<Cell> cells(GridSpec g) {
    List<Map<String, String>> partial = new ArrayList<>();
    partial.add(new LinkedHashMap<>());
    partial = cross(partial, "workload", g.workloads());
    partial = cross(partial, "device", g.devices());
    partial = cross(partial, "model", g.models());
    for (Map.Entry<String, List<String>> e : g.sets().entrySet()) {
      partial = cross(partial, e.getKey(), e.getValue());
    }
    partial = cross(partial, g.serving() ? "system" : "allocator", g.serving() ? g.systems() : g.allocators());
    partial = cross(partial, "seed", g.seeds().stream().map(String::valueOf).toList());
    List<Cell> cells = new ArrayList<>();
    for (Map<String, String> p : partial) {
      cells.add(new Cell(cells.size(), p));
    }
    return cells;
  }

  private static List<Map<String, String>> cross(List<Map<String, String>> partial, String column, List<String> values) {
    if (values.isEmpty()) {
      return partial;
    }
    if ((long) partial.size() * values.size() > 50_000_000L) {
      throw new InputException("the grid has more than 50,000,000 cells; split it into several sweeps");
    }
    List<Map<String, String>> out = new ArrayList<>(partial.size() * values.size());
    for (Map<String, String> p : partial) {
      for (String v : values) {
        Map<String, String> m = new LinkedHashMap<>(p);
        m.put(column, v);
        out.add(m);
      }
    }
    return out;
  }

  /**
   * Runs one cell and returns its row: the cell's parameters, then every summary metric of its
   * run, flattened to dotted names ({@code external_fragmentation.peak}).
   */
  public static Map<String, Object> run(GridSpec g, Cell cell) throws IOException {
    Map<String, String> p = cell.params();
    String workload = workload(g, p.get("workload"), p.get("seed"));
    Map<String, Object> summary;
    if (g.serving()) {
      ServingSpec spec = ServingSpec.resolve(new ServingSpec.Request(
          workload, List.of(p.get("system")), p.get("model"), p.get("device"), p.get("kv-memory"),
          doubleOrNull(p.get("gpu-memory-utilization")), intOrNull(p.get("max-model-len")), intOrNull(p.get("max-num-seqs")),
          intOrNull(p.get("max-num-batched-tokens")), intOrNull(p.get("block-size")), p.get("swap-space"), null, p.get("plan"), false,
          doubleOrNull(p.get("watermark")), Map.of()));
      summary = new ServingRunner(1).run(spec, null).get(0).summary();
    } else {
      String allocator = p.get("allocator");
      List<String> settings = new ArrayList<>();
      for (String key : g.sets().keySet()) {
        if (key.startsWith(allocator + ".")) {
          settings.add(key + "=" + p.get(key));
        }
      }
      RunRequest request = new RunRequest(workload, null, null, List.of(allocator), p.get("device"), p.get("model"),
          g.plan().get("weights"), g.plan().get("activations"), settings, null, null, false, 0);
      RunSpec spec = RunSpec.resolve(request, new PrintWriter(PrintWriter.nullWriter()));
      summary = new Runner("", 1).headline(spec, allocator).summary();
    }
    Map<String, Object> row = new LinkedHashMap<>(p);
    flatten("", summary, row, true);
    return row;
  }

  /** The cell's workload as a spec string: trace paths resolved against the grid's folder, the seed added. */
  private static String workload(GridSpec g, String written, String seed) {
    String w = written;
    int colon = w.indexOf(':');
    String head = colon < 0 ? w : w.substring(0, colon);
    boolean generator = WorkloadRegistry.generators().containsKey(head) || WorkloadRegistry.requestGenerators().containsKey(head);
    boolean importer = colon >= 0 && WorkloadRegistry.requestImporters().containsKey(head);
    if (!generator && !importer) {
      w = g.dir().resolve(w).toString();
    } else if (importer) {
      String rest = w.substring(colon + 1);
      int comma = rest.indexOf(',');
      String path = comma < 0 ? rest : rest.substring(0, comma);
      w = head + ":" + g.dir().resolve(path) + (comma < 0 ? "" : rest.substring(comma));
    }
    if (seed == null) {
      return w;
    }
    if (!generator && !"lengths".equals(head)) {
      throw g.origin().error("seeds", "the workload " + written + " is a trace; seeds apply to generators");
    }
    if (w.matches(".*[:,]seed=.*")) {
      throw g.origin().error("seeds", "the workload " + written + " fixes its own seed; remove seed= from it or the seeds field");
    }
    return w + (colon < 0 ? ":" : ",") + "seed=" + seed;
  }

  /**
   * Copies a summary's values into {@code row} under dotted names ({@code ttft.p50}); the entries of
   * {@code metrics} and {@code extra} keep their own names. The allocator or system and its options
   * are the cell's parameters already.
   */
  @SuppressWarnings("unchecked")
  private static void flatten(String prefix, Map<String, Object> m, Map<String, Object> row, boolean top) {
    for (Map.Entry<String, Object> e : m.entrySet()) {
      String key = e.getKey();
      if (top && List.of("allocator", "system", "options", "parts").contains(key)) {
        continue;
      }
      if (e.getValue() instanceof Map<?, ?> sub) {
        String inner = top && (key.equals("metrics") || key.equals("extra")) ? "" : prefix + key + ".";
        flatten(inner, (Map<String, Object>) sub, row, false);
      } else {
        row.put(prefix + key, e.getValue() instanceof List<?> list ? list.toString() : e.getValue());
      }
    }
  }

  /** Returns a row as one line of JSON. */
  public static String rowJson(Map<String, Object> row) {
    try {
      return JSON.writeValueAsString(row);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Integer intOrNull(String s) {
    if (s == null) {
      return null;
    }
    try {
      return Integer.valueOf(s.trim());
    } catch (NumberFormatException e) {
      throw new InputException("a grid option value '" + s + "' is not a whole number");
    }
  }

  private static Double doubleOrNull(String s) {
    if (s == null) {
      return null;
    }
    try {
      return Double.valueOf(s.trim());
    } catch (NumberFormatException e) {
      throw new InputException("a grid option value '" + s + "' is not a number");
    }
  }
}

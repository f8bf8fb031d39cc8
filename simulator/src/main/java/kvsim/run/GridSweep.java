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
import java.util.function.UnaryOperator;
import kvsim.config.GridSpec;
import kvsim.config.ServingSettings;
import kvsim.config.Setting;
import kvsim.config.SettingException;
import kvsim.config.Settings;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.devicemodel.DeviceSpec;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.serving.ServingSystems;

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

  /**
   * Checks every cell of {@code g} as its run will resolve it, before any runs, so that a sweep
   * that cannot finish fails before it writes anything; any problem is an InputException at the
   * grid's file, line and field ({@code grid.yaml:7: set.first-fit.alignment: …}).
   *
   * <p>Note [Validate first, then run]: a sweep used to find a bad allocator name, a missing trace
   * or a bad option value only when a cell reached it, after its result folder was made and other
   * cells had run. Now each value is checked on its own first (names, devices, models, workloads,
   * serving values and whether every system reads each {@code set} key), so an error names the
   * value's own line; then each distinct cell, seeds aside (a seed only picks a generator's
   * stream), is resolved as {@link #run} resolves it: the L1 spec with its allocators built with
   * their options and its trace header read, or the serving spec with its systems built. What
   * only a combination rejects is reported at the line of the field it names, else of the cell's
   * workload, with the cell.
   */
  public static void validate(GridSpec g, List<Cell> cells) {
    List<String> runs = g.serving() ? g.systems() : g.allocators();
    String runField = g.serving() ? "systems" : "allocators";
    for (int i = 0; i < runs.size(); i++) {
      try {
        if (g.serving()) {
          ServingSystems.get(runs.get(i));
        } else {
          AllocatorRegistry.get(runs.get(i));
        }
      } catch (InputException e) {
        throw g.error(runField, i, e.getMessage());
      }
    }
    calibration(g); // a missing calibration file is the grid's error before any cell's
    for (int i = 0; i < g.devices().size(); i++) {
      try {
        if (g.serving()) {
          kvsim.devicemodel.DeviceGroup.parse(g.devices().get(i));
        } else {
          DeviceSpec.parse(g.devices().get(i));
        }
      } catch (IllegalArgumentException e) {
        throw g.error("device", i, e.getMessage());
      }
    }
    for (int i = 0; i < g.models().size(); i++) {
      try {
        ModelPreset.parse(g.models().get(i));
      } catch (IllegalArgumentException e) {
        throw g.error("model", i, e.getMessage());
      }
    }
    for (String key : g.sets().keySet()) {
      checkSetting(g, key);
    }
    String firstSeed = g.seeds().isEmpty() ? null : String.valueOf(g.seeds().get(0));
    for (int i = 0; i < g.workloads().size(); i++) {
      String w = workload(g, g.workloads().get(i), firstSeed, UnaryOperator.identity());
      try {
        if (g.serving()) {
          WorkloadRegistry.resolveRequests(w, Map.of());
        } else {
          WorkloadRegistry.resolve(w, Map.of());
        }
      } catch (InputException e) {
        throw g.error("workloads", i, e.getMessage());
      }
    }
    java.util.Set<String> resolved = new java.util.HashSet<>();
    for (Cell c : cells) {
      Map<String, String> p = new LinkedHashMap<>(c.params());
      p.remove("seed");
      if (resolved.add(p.toString())) {
        try {
          resolve(g, c, true, UnaryOperator.identity());
        } catch (OptionMap.OptionException e) {
          String key = c.params().get("allocator") + "." + e.key();
          throw g.sets().containsKey(key) ? g.error("set." + key, g.sets().get(key).indexOf(c.params().get(key)), e.getMessage())
              : cellError(g, c, e.getMessage());
        } catch (SettingException e) {
          throw e; // at a value of the grid already
        } catch (InputException e) {
          throw cellError(g, c, e.getMessage());
        }
      }
    }
  }

  /**
   * Checks one {@code set} key on its own: an L1 key names an allocator of the grid; a serving key
   * is read by every system of the grid (ServingSystems' Note [Settings each system reads]). A
   * serving key's values were parsed by its setting when the grid was read ({@link GridSpec#parse}).
   */
  private static void checkSetting(GridSpec g, String key) {
    String field = "set." + key;
    if (!g.serving()) {
      String allocator = key.substring(0, key.indexOf('.'));
      if (!g.allocators().contains(allocator)) {
        throw g.error(field, -1, "'" + allocator + "' is not among the grid's allocators " + g.allocators() + ", so no cell would read it");
      }
      return;
    }
    Setting setting = ServingSettings.find(key);
    for (String system : g.systems()) {
      String problem = setting.readsKey().isEmpty() ? null : ServingSystems.notRead(system, setting.readsKey());
      if (problem != null) {
        throw g.error(field, -1, problem + "; its cells would repeat one run, so sweep it over the systems that read it");
      }
    }
  }

  /**
   * An error of a whole cell: the cell's values carry their origins in the grid (a serving cell's
   * {@link Settings}, an L1 cell's {@link RunRequest#withOrigin}), so an error about one of them
   * arrives placed ({@link SettingException}); anything else is reported at the cell's workload,
   * naming the cell.
   */
  private static InputException cellError(GridSpec g, Cell c, String message) {
    Map<String, String> p = new LinkedHashMap<>(c.params());
    p.remove("seed");
    StringBuilder cell = new StringBuilder();
    p.forEach((k, v) -> cell.append(cell.length() == 0 ? "" : ", ").append(k).append('=').append(v));
    return g.error("workloads", g.workloads().indexOf(c.params().get("workload")), message + " (in the cell " + cell + ")");
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
    return run(g, cell, UnaryOperator.identity());
  }

  /**
   * Runs one cell as {@link #run(GridSpec, Cell)} does, reading each input file of {@link #inputs}
   * where {@code local} puts it on this machine (a cluster engine's copy shipped with the job).
   * The row is the same: it names the workload as the grid wrote it, never the path read.
   */
  public static Map<String, Object> run(GridSpec g, Cell cell, UnaryOperator<Path> local) throws IOException {
    Map<String, String> p = cell.params();
    Object spec = resolve(g, cell, false, local);
    Map<String, Object> summary = spec instanceof ServingSpec serving
        ? new ServingRunner(1).run(serving, null).get(0).summary()
        : new Runner("", 1).headline((RunSpec) spec, p.get("allocator")).summary();
    Map<String, Object> row = new LinkedHashMap<>(p);
    flatten("", summary, row, true);
    return row;
  }

  /**
   * A cell's cost estimated before it runs, for an engine that deals cells into batches, in units
   * alike within one grid; 0 where nothing says (Note [Estimated cell cost]).
   *
   * <p>Note [Estimated cell cost]: a generator's size parameter ({@code ops=}, {@code requests=},
   * {@code count=}) is its number of operations or requests; a trace or an imported log counts its
   * file's bytes over 64 (about one event a line of JSON; a {@code .kvt} event is smaller, so a
   * binary trace is underestimated). The allocator, the options and the seed are not weighed: they
   * change a cell's cost many-fold but in ways no formula here would know, and cells that differ
   * only in them are spread over batches anyway. An estimate only has to rank cells roughly: a
   * batch of cells that costs more than its share still ends sooner than one giant cell would.
   */
  public static long estimatedCost(GridSpec g, Cell cell) {
    String w = cell.params().get("workload");
    if (w == null) {
      return 0;
    }
    java.util.regex.Matcher size = ESTIMATE_SIZE.matcher(w);
    if (size.find()) {
      return Long.parseLong(size.group(2).replace("_", ""));
    }
    long[] bytes = {0};
    try {
      workload(g, w, null, file -> {
        try {
          bytes[0] += java.nio.file.Files.size(file);
        } catch (IOException e) {
          // unknown: the engine gives it the grid's median
        }
        return file;
      });
    } catch (RuntimeException e) {
      return 0;
    }
    return bytes[0] / 64;
  }

  private static final java.util.regex.Pattern ESTIMATE_SIZE = java.util.regex.Pattern.compile("[:,](ops|requests|count)=([0-9][0-9_]*)");

  /**
   * Resolves a cell into the spec its run takes: a {@link ServingSpec} of its one system (with
   * {@code check}, built once to see that it can be: {@link ServingGrid#checkBuilds}) or a {@link
   * RunSpec} of its one allocator (built with its options).
   */
  private static Object resolve(GridSpec g, Cell cell, boolean check, UnaryOperator<Path> local) {
    Map<String, String> p = cell.params();
    String workload = workload(g, p.get("workload"), p.get("seed"), local);
    if (g.serving()) {
      Settings settings = Settings.none();
      for (Map.Entry<String, String> e : p.entrySet()) {
        String key = e.getKey();
        boolean field = key.equals("model") || key.equals("device");
        if (field || g.sets().containsKey(key)) {
          List<String> values = field ? (key.equals("model") ? g.models() : g.devices()) : g.sets().get(key);
          String at = field ? key : "set." + key;
          settings = settings.and(ServingSettings.find(key), e.getValue(), g.at(at, values.size() == 1 ? -1 : values.indexOf(e.getValue())));
        }
      }
      if (g.calibration() != null) {
        settings = settings.and(ServingSettings.CALIBRATION, local.apply(calibrationPath(g)).toString(), g.at("calibration", -1));
      }
      ServingSpec spec = ServingSpec.resolve(ServingSpec.Request.of(workload, List.of(p.get("system")), settings));
      if (check) {
        try {
          ServingGrid.checkBuilds(spec);
        } catch (SettingException e) {
          throw e;
        } catch (InputException e) {
          // Note [Builds that find too little KV memory]
          if (spec.kvMemorySource() != null) {
            throw spec.kvMemorySource().error(e.getMessage());
          }
          throw e;
        }
      }
      return spec;
    }
    String allocator = p.get("allocator");
    List<String> settings = new ArrayList<>();
    for (String key : g.sets().keySet()) {
      if (key.startsWith(allocator + ".")) {
        settings.add(key + "=" + p.get(key));
      }
    }
    RunRequest request = RunRequest.of(workload).withAllocators(List.of(allocator)).withDevice(p.get("device")).withModel(p.get("model"))
        .withPlan(g.plan().get("weights"), g.plan().get("activations")).withSettings(settings)
        .withCalibration(g.calibration() == null ? null : local.apply(calibrationPath(g)).toString())
        .withOrigin("--weights", g.at("plan.weights", -1)).withOrigin("--activations", g.at("plan.activations", -1));
    if (p.get("device") != null) {
      request = request.withOrigin("--device", g.at("device", g.devices().indexOf(p.get("device"))));
    }
    if (p.get("model") != null) {
      request = request.withOrigin("--model", g.at("model", g.models().indexOf(p.get("model"))));
    }
    return RunSpec.resolve(request, new PrintWriter(PrintWriter.nullWriter()));
  }

  /** Returns the grid's calibration file, resolved against the grid's folder; the grid must name one. */
  private static java.nio.file.Path calibrationPath(GridSpec g) {
    return g.dir().resolve(g.calibration());
  }

  /**
   * Returns the calibration of every cell of {@code g}, read from its file, or null when the grid
   * names none; a file that is missing (or a folder) is reported at the grid's {@code calibration}
   * line, a problem inside it at the file's own.
   */
  public static kvsim.alloc.Calibration calibration(GridSpec g) {
    if (g.calibration() == null) {
      return null;
    }
    java.nio.file.Path file = calibrationPath(g);
    try {
      return CalibrationFile.read(file);
    } catch (InputException e) {
      throw java.nio.file.Files.isRegularFile(file) ? e : g.error("calibration", -1, e.getMessage());
    }
  }

  /**
   * Returns the files the cells of {@code g} read, resolved against the grid's folder: each trace,
   * each imported request log and the calibration file, once each, in grid order.
   */
  public static List<Path> inputs(GridSpec g) {
    java.util.LinkedHashSet<Path> files = new java.util.LinkedHashSet<>();
    for (String w : g.workloads()) {
      workload(g, w, null, file -> {
        files.add(file);
        return file;
      });
    }
    if (g.calibration() != null) {
      files.add(calibrationPath(g));
    }
    return List.copyOf(files);
  }

  /**
   * The cell's workload as a spec string: trace paths resolved against the grid's folder, then
   * placed by {@code local}, the seed added.
   */
  private static String workload(GridSpec g, String written, String seed, UnaryOperator<Path> local) {
    String w = written;
    int colon = w.indexOf(':');
    String head = colon < 0 ? w : w.substring(0, colon);
    boolean generator = WorkloadRegistry.generators().containsKey(head) || WorkloadRegistry.requestGenerators().containsKey(head);
    boolean importer = colon >= 0 && WorkloadRegistry.requestImporters().containsKey(head);
    if (!generator && !importer) {
      w = local.apply(g.dir().resolve(w)).toString();
    } else if (importer) {
      String rest = w.substring(colon + 1);
      int comma = rest.indexOf(',');
      String path = comma < 0 ? rest : rest.substring(0, comma);
      w = head + ":" + local.apply(g.dir().resolve(path)) + (comma < 0 ? "" : rest.substring(comma));
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
}

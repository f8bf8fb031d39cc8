package kvsim.report;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.Gauge;
import kvsim.metrics.RunMetrics;
import kvsim.metrics.SeedSweep;

/**
 * Reads a result folder back into the values {@link ResultsWriter} took, so that charts, tables and
 * later reports are drawn from a result folder alone, without re-running ({@code report} never
 * imports {@code engine} or {@code alloc}: {@code simulator/ARCHITECTURE.md}, "Layers"). The schema
 * below is format version 1; {@code results/SCHEMA.md} says the same with examples.
 *
 * <p><b>{@code summary.json} of a run</b>, one JSON object:
 *
 * <ul>
 *   <li>{@code "format": "kvsim-summary"}, {@code "version": 1}: the first two fields, checked first.
 *   <li>The configuration echo, carried as written: {@code kvsim_version}, {@code workload} ({@code
 *       spec}, then the generator's parameters or the trace header's description), {@code device}
 *       ({@code name}, {@code capacity_bytes}), {@code model} ({@code name}, {@code
 *       kv_bytes_per_token}), {@code plan} ({@code weights_bytes}, {@code tested_region_bytes},
 *       {@code activations_bytes}, {@code activations_allocator} when there is an activations
 *       region), {@code check}. Every top-level field but the marker and {@code allocators} is
 *       part of the echo.
 *   <li>{@code allocators}: one object per allocator, in the order run, with exactly these fields:
 *       {@code allocator} (registry name, unique), {@code options} (in force, defaults included),
 *       the counters {@link RunMetrics#COUNTERS} (non-negative integers), {@code
 *       activation_oom_count} (integer), {@code modelled_allocator_nanos} (integer, ns), {@code
 *       metrics} (for each of {@link RunMetrics#GAUGES}, an object {@code peak}, {@code mean},
 *       {@code final}) and, when the model reports any, {@code extra} (name: integer).
 *   <li>Gauge values: byte gauges ({@code *_bytes}) and {@code live_allocations} have integer
 *       {@code peak} and {@code final} and a floating-point time-weighted {@code mean}; the
 *       fragmentation ratios are floating-point throughout. A value is null where the gauge was
 *       never defined (a ratio while nothing was allocated, or free); never NaN.
 * </ul>
 *
 * <p><b>{@code summary.json} of a seed sweep</b> (the only file of its folder): {@code "format":
 * "kvsim-sweep-summary"}, {@code "version": 1}, the configuration echo of the first seed's run,
 * {@code seeds} (integers, as given), and {@code allocators}: objects with exactly {@code
 * allocator}, {@code sweep} (per {@link SeedSweep#HEADLINES} name, {@code median}, {@code p10},
 * {@code p90}, {@code mean} and {@code defined}, the seeds that defined it; null where none did) and
 * {@code per_seed} (one object per seed: {@code seed} and each headline's value, null where
 * undefined; counters appear as floating-point numbers).
 *
 * <p><b>{@code timeseries.csv}</b>: the header {@code allocator,event,t_ns,} then {@link
 * RunMetrics#SAMPLE_COLUMNS} ({@code reserved_bytes}, {@code allocated_bytes}, {@code
 * requested_bytes}, {@code free_bytes}, {@code largest_free_bytes}, {@code internal_fragmentation},
 * {@code external_fragmentation}, {@code oom_count}), then one row per sample,
 * rows of one allocator together and allocators in the order of {@code summary.json}; {@code event}
 * (1-based, increasing within an allocator), {@code t_ns} (simulated ns, non-decreasing), the byte
 * columns and {@code oom_count} (refusals so far) are integers; the two fragmentation columns are
 * written {@code %.6f}, empty where undefined. The file has no marker of its own (it stays plain
 * CSV): its version is that of {@code summary.json} beside it.
 *
 * <p><b>{@code timing.json}</b>: {@code "format": "kvsim-timing"}, {@code "version": 1}, and {@code
 * runs}: objects with exactly {@code allocator}, {@code events} (integer), {@code wall_seconds}
 * (floating point) and {@code events_per_second} (integer, rounded), same allocators and order as
 * {@code summary.json}. Wall-clock figures are not deterministic; the other files are.
 *
 * <p>Note [What round-trips]: the files' bytes. Writing what was read gives byte-identical {@code
 * summary.json}, {@code timeseries.csv} and {@code timing.json} for any folder kvsim wrote. The
 * values read from {@code summary.json} and {@code timing.json} equal the values written (Jackson
 * writes a double as the shortest decimal that reads back as the same double; whole gauges were
 * whole; {@code wall_seconds * 1e9} rounds back to the nanoseconds below 2^51 ns, about 26 days;
 * {@code events_per_second} is derived again). Samples do not: the CSV holds ratios to 6 decimals,
 * so a sample read back is the written text's value, not the in-memory double. That is why {@link
 * ResultsWriter} draws its chart from what this class reads back: the chart a run writes and the
 * chart {@link FragmentationChart#redraw} draws from the folder later are the same.
 *
 * <p>Note [Strict reading]: the format marker is checked before anything else, then every field
 * the schema names, with its type; a field the schema does not name is refused, so a newer format
 * is never half-read. Any problem is an {@link InputException} naming the file, the line (CSV
 * only; JSON syntax errors too) and the field, such as {@code allocators[1].metrics.free_bytes.peak}.
 */
public final class ResultsReader {
  /** The run summary's file name. */
  public static final String SUMMARY_FILE = "summary.json";
  /** The time series' file name. */
  public static final String TIMESERIES_FILE = "timeseries.csv";
  /** The wall-clock figures' file name. */
  public static final String TIMING_FILE = "timing.json";
  /** The {@code format} of a run's {@code summary.json}. */
  public static final String RUN_FORMAT = "kvsim-summary";
  /** The {@code format} of a seed sweep's {@code summary.json}. */
  public static final String SWEEP_FORMAT = "kvsim-sweep-summary";
  /** The {@code format} of {@code timing.json}. */
  public static final String TIMING_FORMAT = "kvsim-timing";
  /** The {@code format} of a serving run's {@code summary.json}. */
  public static final String SERVING_FORMAT = "kvsim-serving-summary";
  /** The {@code format} of a capacity search's {@code summary.json}. */
  public static final String CAPACITY_FORMAT = "kvsim-capacity";
  /** The format version this kvsim reads and writes. */
  public static final int VERSION = 1;

  /** The columns of {@code timeseries.csv}. */
  public static final List<String> TIMESERIES_COLUMNS = timeseriesColumns();
  /** The header line of {@code timeseries.csv}. */
  public static final String TIMESERIES_HEADER = String.join(",", TIMESERIES_COLUMNS);

  private static final TypeReference<LinkedHashMap<String, Object>> PLAIN_MAP = new TypeReference<>() {};
  private static final Set<String> SUMMARY_STATS = Set.of("peak", "mean", "final");
  private static final List<String> SWEEP_STATS = List.of("median", "p10", "p90", "mean", "defined");

  private ResultsReader() {}

  private static List<String> timeseriesColumns() {
    List<String> c = new ArrayList<>(List.of("allocator", "event", "t_ns"));
    c.addAll(RunMetrics.SAMPLE_COLUMNS);
    return List.copyOf(c);
  }

  /** Returns whether a time-series column or gauge holds a ratio (written {@code %.6f}, may be undefined). */
  static boolean isFraction(String column) {
    return column.endsWith("fragmentation");
  }

  /**
   * Reads a run's result folder: {@code summary.json}, {@code timeseries.csv} and {@code
   * timing.json} (no timings where a committed folder holds none).
   */
  public static RunResults read(Path dir) {
    requireFolder(dir);
    Path summaryFile = dir.resolve(SUMMARY_FILE);
    Json s = new Json(summaryFile);
    JsonNode root = s.readObject();
    s.checkFormat(root, RUN_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    JsonNode allocs = null;
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "allocators" -> allocs = e.getValue();
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    List<JsonNode> entries = s.array(allocs, "allocators");
    Set<String> seen = new HashSet<>();
    List<String> names = new ArrayList<>();
    List<AllocatorHead> heads = new ArrayList<>();
    for (int i = 0; i < entries.size(); i++) {
      AllocatorHead h = s.allocator(entries.get(i), "allocators[" + i + "]", seen);
      names.add(h.allocator);
      heads.add(h);
    }
    List<List<double[]>> samples = readTimeseries(dir.resolve(TIMESERIES_FILE), names);
    List<AllocatorResult> results = new ArrayList<>();
    for (int i = 0; i < heads.size(); i++) {
      AllocatorHead h = heads.get(i);
      results.add(
          new AllocatorResult(
              h.allocator, h.options, h.counters, h.summaries, h.modelledAllocatorNanos, h.activationOomCount, h.extra, samples.get(i)));
    }
    // A committed folder holds no timing.json (Note [Committed folders] on ResultFolder).
    Path timingFile = dir.resolve(TIMING_FILE);
    boolean none = !Files.exists(timingFile, LinkOption.NOFOLLOW_LINKS) && ResultFolder.isCommitted(dir);
    List<AllocatorResult.Timing> timings = none ? List.of() : readTiming(timingFile, names);
    return new RunResults(config, results, timings);
  }

  /** Reads a seed sweep's result folder (its {@code summary.json}). */
  public static SweepResults readSweep(Path dir) {
    requireFolder(dir);
    Json s = new Json(dir.resolve(SUMMARY_FILE));
    JsonNode root = s.readObject();
    s.checkFormat(root, SWEEP_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    JsonNode seedsNode = null;
    JsonNode allocs = null;
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "seeds" -> seedsNode = e.getValue();
        case "allocators" -> allocs = e.getValue();
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    List<Long> seeds = new ArrayList<>();
    List<JsonNode> seedNodes = s.array(seedsNode, "seeds");
    for (int i = 0; i < seedNodes.size(); i++) {
      seeds.add(s.integer(seedNodes.get(i), "seeds[" + i + "]", false));
    }
    List<SweepResults.Entry> out = new ArrayList<>();
    Set<String> names = new HashSet<>();
    List<JsonNode> entries = s.array(allocs, "allocators");
    for (int i = 0; i < entries.size(); i++) {
      String at = "allocators[" + i + "]";
      JsonNode a = s.object(entries.get(i), at);
      s.onlyFields(a, at, Set.of("allocator", "sweep", "per_seed"));
      String name = s.name(a.get("allocator"), at + ".allocator", names);
      JsonNode sweep = s.object(a.get("sweep"), at + ".sweep");
      s.onlyFields(sweep, at + ".sweep", Set.copyOf(SeedSweep.HEADLINES));
      Map<String, SeedSweep.Stats> stats = new LinkedHashMap<>();
      for (String h : SeedSweep.HEADLINES) {
        stats.put(h, s.sweepStats(sweep.get(h), at + ".sweep." + h));
      }
      List<SeedSweep.Row> rows = new ArrayList<>();
      List<JsonNode> perSeed = s.array(a.get("per_seed"), at + ".per_seed");
      for (int k = 0; k < perSeed.size(); k++) {
        String rowAt = at + ".per_seed[" + k + "]";
        JsonNode row = s.object(perSeed.get(k), rowAt);
        Set<String> fields = new LinkedHashSet<>(SeedSweep.HEADLINES);
        fields.add("seed");
        s.onlyFields(row, rowAt, fields);
        long seed = s.integer(row.get("seed"), rowAt + ".seed", false);
        Map<String, Double> headlines = new LinkedHashMap<>();
        for (String h : SeedSweep.HEADLINES) {
          headlines.put(h, s.numberOrNull(row.get(h), rowAt + "." + h, false));
        }
        rows.add(new SeedSweep.Row(seed, headlines));
      }
      out.add(new SweepResults.Entry(name, stats, rows));
    }
    return new SweepResults(config, seeds, out);
  }

  /** The name of a serving run's latency quantiles file. */
  public static final String QUANTILES_FILE = "latency-quantiles.csv";

  /**
   * Returns the {@code format} of the {@code summary.json} in {@code dir} (a run, a sweep, a serving
   * run or a capacity search), so that a report knows which reader to use.
   */
  public static String formatOf(Path dir) {
    requireFolder(dir);
    Json s = new Json(dir.resolve(SUMMARY_FILE));
    JsonNode f = s.readFormat();
    if (f == null || !f.isTextual()) {
      throw s.error("format", "missing; not a kvsim result folder of a known format (run again to rewrite it)");
    }
    List<String> known = List.of(RUN_FORMAT, SWEEP_FORMAT, SERVING_FORMAT, CAPACITY_FORMAT);
    if (!known.contains(f.textValue())) {
      throw s.error("format", "expected one of " + known + ", found " + f);
    }
    return f.textValue();
  }

  /**
   * Reads a serving run's result folder: {@code summary.json} (marker checked; the entries as
   * written), {@code timeseries.csv} and, where present, {@code latency-quantiles.csv}, whose rows
   * are keyed by each entry's {@link ServingResults#label}. Checked are the markers, {@code
   * systems}, each entry's {@code system}, and for a what-if grid that every entry has a {@code
   * cell} with one listed value per grid key (and {@code kv_memory_bytes}), no two entries the
   * same cell; without a grid no entry has a {@code cell}.
   */
  @SuppressWarnings("unchecked")
  public static ServingResults readServing(Path dir) {
    requireFolder(dir);
    Json s = new Json(dir.resolve(SUMMARY_FILE));
    JsonNode root = s.readObject();
    s.checkFormat(root, SERVING_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    Map<String, List<String>> grid = new LinkedHashMap<>();
    JsonNode systems = null;
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "systems" -> systems = e.getValue();
        case "grid" -> {
          JsonNode g = s.object(e.getValue(), "grid");
          for (Map.Entry<String, JsonNode> k : g.properties()) {
            List<String> values = new ArrayList<>();
            List<JsonNode> vs = s.array(k.getValue(), "grid." + k.getKey());
            for (int i = 0; i < vs.size(); i++) {
              values.add(s.text(vs.get(i), "grid." + k.getKey() + "[" + i + "]"));
            }
            grid.put(k.getKey(), List.copyOf(values));
          }
        }
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    List<Map<String, Object>> entries = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    List<JsonNode> nodes = s.array(systems, "systems");
    for (int i = 0; i < nodes.size(); i++) {
      String at = "systems[" + i + "]";
      JsonNode n = s.object(nodes.get(i), at);
      String system = s.text(n.get("system"), at + ".system");
      Map<String, String> cell = new LinkedHashMap<>();
      if (grid.isEmpty()) {
        if (n.has("cell")) {
          throw s.error(at + ".cell", "a cell without a grid");
        }
      } else {
        JsonNode c = s.object(n.get("cell"), at + ".cell");
        s.onlyFields(c, at + ".cell", grid.keySet());
        for (Map.Entry<String, List<String>> k : grid.entrySet()) {
          String v = s.text(c.get(k.getKey()), at + ".cell." + k.getKey());
          if (!k.getValue().contains(v)) {
            throw s.error(at + ".cell." + k.getKey(), "'" + v + "' is not among the grid's values " + k.getValue());
          }
          cell.put(k.getKey(), v);
        }
        s.integer(n.get("kv_memory_bytes"), at + ".kv_memory_bytes", true);
      }
      if (!seen.add(system + " " + cell)) {
        throw s.error(at, "the system " + system + (cell.isEmpty() ? "" : " with " + cell) + " appears twice");
      }
      entries.add((Map<String, Object>) s.plain(n));
    }
    List<String> names = entries.stream().map(ServingResults::label).toList();
    List<String> columns = new ArrayList<>();
    Map<String, List<double[]>> series = readKeyedCsv(dir.resolve(TIMESERIES_FILE), "system", names, columns);
    Map<String, List<double[]>> quantiles = new LinkedHashMap<>();
    List<String> quantileColumns = new ArrayList<>();
    if (Files.exists(dir.resolve(QUANTILES_FILE))) {
      quantiles = readKeyedCsv(dir.resolve(QUANTILES_FILE), "system", names, quantileColumns);
    }
    return new ServingResults(config, grid, entries, List.copyOf(columns), series, List.copyOf(quantileColumns), quantiles);
  }

  /** Reads a capacity search's {@code summary.json} (marker checked; targets and systems as written). */
  @SuppressWarnings("unchecked")
  public static CapacityResults readCapacity(Path dir) {
    requireFolder(dir);
    Json s = new Json(dir.resolve(SUMMARY_FILE));
    JsonNode root = s.readObject();
    s.checkFormat(root, CAPACITY_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    List<Object> targets = new ArrayList<>();
    List<Map<String, Object>> systems = new ArrayList<>();
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "targets" -> s.array(e.getValue(), "targets").forEach(t -> targets.add(s.plain(t)));
        case "systems" -> {
          List<JsonNode> list = s.array(e.getValue(), "systems");
          for (int i = 0; i < list.size(); i++) {
            JsonNode one = s.object(list.get(i), "systems[" + i + "]");
            s.text(one.get("system"), "systems[" + i + "].system");
            systems.add((Map<String, Object>) s.plain(one));
          }
        }
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    return new CapacityResults(config, targets, systems);
  }

  /**
   * Reads a long-format CSV: the key column {@code key}, then numeric columns (empty: NaN); the rows
   * of each key together, keys among {@code names}. Fills {@code columns} with the numeric columns'
   * names and returns the rows per key, in the order of {@code names}.
   */
  private static Map<String, List<double[]>> readKeyedCsv(Path file, String key, List<String> names, List<String> columns) {
    String src = file.toString();
    if (!Files.isRegularFile(file)) {
      throw InputException.at(src, 0, null, "missing");
    }
    Map<String, List<double[]>> out = new LinkedHashMap<>();
    for (String n : names) {
      out.put(n, new ArrayList<>());
    }
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String header = in.readLine();
      if (header == null || !header.startsWith(key + ",")) {
        throw InputException.at(src, 1, "header", "expected a header beginning " + key + ",");
      }
      List<String> cols = List.of(header.split(","));
      columns.addAll(cols.subList(1, cols.size()));
      long lineNo = 1;
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        lineNo++;
        String[] f = line.split(",", -1);
        if (f.length != cols.size()) {
          throw InputException.at(src, lineNo, null, "expected " + cols.size() + " comma-separated fields, found " + f.length);
        }
        List<double[]> rows = out.get(f[0]);
        if (rows == null) {
          throw InputException.at(src, lineNo, key, "'" + f[0] + "' is not among " + names);
        }
        double[] row = new double[f.length - 1];
        for (int i = 1; i < f.length; i++) {
          row[i - 1] = fraction(src, lineNo, cols.get(i), f[i]);
        }
        rows.add(row);
      }
    } catch (IOException e) {
      throw InputException.at(src, 0, null, "cannot read: " + e.getMessage());
    }
    return out;
  }

  private static void requireFolder(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new InputException(dir + ": " + (Files.exists(dir) ? "not a folder" : "no such folder") + "; expected a kvsim result folder");
    }
  }

  /** Reads the time series; returns the rows of each allocator, in the order of {@code names}. */
  private static List<List<double[]>> readTimeseries(Path file, List<String> names) {
    String src = file.toString();
    requireFile(file);
    List<List<double[]>> samples = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      samples.add(new ArrayList<>());
    }
    int columns = TIMESERIES_COLUMNS.size();
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String header = in.readLine();
      if (header == null) {
        throw InputException.at(src, 1, null, "empty; expected the header " + TIMESERIES_HEADER);
      }
      if (!header.equals(TIMESERIES_HEADER)) {
        throw InputException.at(src, 1, "header", "expected " + TIMESERIES_HEADER + ", found " + header);
      }
      int current = -1;
      long lastEvent = 0;
      long lastTimeNanos = 0;
      long lineNo = 1;
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        lineNo++;
        String[] f = line.split(",", -1);
        if (f.length != columns) {
          throw InputException.at(src, lineNo, null, "expected " + columns + " comma-separated fields, found " + f.length);
        }
        if (current < 0 || !names.get(current).equals(f[0])) {
          int next = names.indexOf(f[0]);
          if (next < 0) {
            throw InputException.at(src, lineNo, "allocator", "'" + f[0] + "' is not among the allocators of " + SUMMARY_FILE + " " + names);
          }
          if (next < current) {
            throw InputException.at(
                src, lineNo, "allocator", "the rows of '" + f[0] + "' must come together, allocators in the order of " + SUMMARY_FILE + " " + names);
          }
          current = next;
          lastEvent = 0;
          lastTimeNanos = 0;
        }
        double[] row = new double[columns - 1];
        for (int i = 1; i < columns; i++) {
          String col = TIMESERIES_COLUMNS.get(i);
          row[i - 1] = isFraction(col) ? fraction(src, lineNo, col, f[i]) : count(src, lineNo, col, f[i]);
        }
        long event = (long) row[0];
        long timeNanos = (long) row[1];
        if (event <= lastEvent) {
          throw InputException.at(src, lineNo, "event", event + " does not follow " + lastEvent + " (events increase within an allocator)");
        }
        if (timeNanos < lastTimeNanos) {
          throw InputException.at(src, lineNo, "t_ns", timeNanos + " is before " + lastTimeNanos + " (time never decreases)");
        }
        lastEvent = event;
        lastTimeNanos = timeNanos;
        samples.get(current).add(row);
      }
    } catch (IOException e) {
      throw InputException.at(src, 0, null, "cannot read: " + e.getMessage());
    }
    return samples;
  }

  private static long count(String src, long line, String column, String text) {
    try {
      long v = Long.parseLong(text);
      if (v >= 0) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw InputException.at(src, line, column, "expected a non-negative integer, found '" + text + "'");
  }

  private static double fraction(String src, long line, String column, String text) {
    if (text.isEmpty()) {
      return Double.NaN;
    }
    try {
      double v = Double.parseDouble(text);
      if (Double.isFinite(v) && text.strip().equals(text)) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw InputException.at(src, line, column, "expected a decimal number, or nothing where undefined, found '" + text + "'");
  }

  /** Reads the wall-clock figures; their allocators must be {@code names}, in order. */
  private static List<AllocatorResult.Timing> readTiming(Path file, List<String> names) {
    Json t = new Json(file);
    JsonNode root = t.readObject();
    t.checkFormat(root, TIMING_FORMAT);
    t.onlyFields(root, "", Set.of("format", "version", "runs"));
    List<JsonNode> runs = t.array(root.get("runs"), "runs");
    if (runs.size() != names.size()) {
      throw InputException.at(file.toString(), 0, "runs", runs.size() + " runs, but " + SUMMARY_FILE + " lists " + names.size() + " allocators " + names);
    }
    List<AllocatorResult.Timing> out = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      String at = "runs[" + i + "]";
      JsonNode r = t.object(runs.get(i), at);
      t.onlyFields(r, at, Set.of("allocator", "events", "wall_seconds", "events_per_second"));
      String name = t.text(r.get("allocator"), at + ".allocator");
      if (!name.equals(names.get(i))) {
        throw InputException.at(file.toString(), 0, at + ".allocator", "'" + name + "', but " + SUMMARY_FILE + " lists '" + names.get(i) + "' here");
      }
      long events = t.integer(r.get("events"), at + ".events", true);
      Double wallSeconds = t.numberOrNull(r.get("wall_seconds"), at + ".wall_seconds", false);
      if (wallSeconds == null || wallSeconds < 0) {
        throw InputException.at(file.toString(), 0, at + ".wall_seconds", "expected a non-negative number, found " + r.get("wall_seconds"));
      }
      t.integer(r.get("events_per_second"), at + ".events_per_second", true);
      out.add(new AllocatorResult.Timing(name, events, Math.round(wallSeconds * 1e9)));
    }
    return out;
  }

  private static void requireFile(Path file) {
    if (!Files.isRegularFile(file)) {
      throw InputException.at(
          file.toString(), 0, null, "missing; a kvsim result folder holds " + SUMMARY_FILE + ", " + TIMESERIES_FILE + " and " + TIMING_FILE);
    }
  }

  /** One allocator's entry of a run summary, without its samples. */
  private record AllocatorHead(
      String allocator,
      Map<String, Object> options,
      Map<String, Long> counters,
      Map<String, Gauge.Summary> summaries,
      long modelledAllocatorNanos,
      long activationOomCount,
      Map<String, Long> extra) {}

  /** Typed access to one JSON file's fields; every problem names the file and the field. */
  private record Json(Path file) {
    InputException error(String field, String problem) {
      return InputException.at(file.toString(), 0, field, problem);
    }

    JsonNode readObject() {
      requireFile(file);
      JsonNode root;
      try (InputStream in = Files.newInputStream(file)) {
        root = ResultsWriter.json().readTree(in);
      } catch (IOException e) {
        throw unreadable(e);
      }
      if (root == null || !root.isObject()) {
        throw error(null, "expected a JSON object");
      }
      return root;
    }

    /**
     * Returns the top-level {@code format} value, or null where the object has none, reading only
     * up to it: the writers put it first, and a report reads the whole file once more anyway.
     */
    JsonNode readFormat() {
      requireFile(file);
      try (InputStream in = Files.newInputStream(file); JsonParser p = ResultsWriter.json().createParser(in)) {
        if (p.nextToken() != JsonToken.START_OBJECT) {
          throw error(null, "expected a JSON object");
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          p.nextToken();
          if (name.equals("format")) {
            return ResultsWriter.json().readTree(p);
          }
          p.skipChildren();
        }
        return null;
      } catch (IOException e) {
        throw unreadable(e);
      }
    }

    private InputException unreadable(IOException e) {
      if (e instanceof JsonProcessingException j) {
        long line = j.getLocation() == null ? 0 : j.getLocation().getLineNr();
        return InputException.at(file.toString(), line, null, "not valid JSON: " + j.getOriginalMessage());
      }
      return InputException.at(file.toString(), 0, null, "cannot read: " + e.getMessage());
    }

    void checkFormat(JsonNode root, String expected) {
      JsonNode f = root.get("format");
      if (f == null) {
        throw error(
            "format",
            "missing; not a kvsim result file of a known format (version " + VERSION + " files begin with \"format\": \"" + expected
                + "\", \"version\": " + VERSION + "; older result folders have no marker: run again to rewrite them)");
      }
      if (!f.isTextual() || !f.textValue().equals(expected)) {
        String hint = RUN_FORMAT.equals(expected) && f.isTextual() && f.textValue().equals(SWEEP_FORMAT)
            ? " (this is a seed sweep's summary: distributions over seeds, no per-run results or time series)"
            : "";
        throw error("format", "expected \"" + expected + "\", found " + f + hint);
      }
      JsonNode v = root.get("version");
      if (v == null) {
        throw error("version", "missing");
      }
      if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() != VERSION) {
        throw error("version", v + " is not supported; this kvsim reads version " + VERSION);
      }
    }

    JsonNode object(JsonNode n, String field) {
      if (n == null) {
        throw error(field, "missing");
      }
      if (!n.isObject()) {
        throw error(field, "expected an object, found " + kind(n));
      }
      return n;
    }

    List<JsonNode> array(JsonNode n, String field) {
      if (n == null) {
        throw error(field, "missing");
      }
      if (!n.isArray()) {
        throw error(field, "expected an array, found " + kind(n));
      }
      List<JsonNode> out = new ArrayList<>();
      n.forEach(out::add);
      return out;
    }

    String text(JsonNode n, String field) {
      if (n == null) {
        throw error(field, "missing");
      }
      if (!n.isTextual() || n.textValue().isEmpty()) {
        throw error(field, "expected a non-empty string, found " + n);
      }
      return n.textValue();
    }

    /** A registry name, unique among {@code seen}. */
    String name(JsonNode n, String field, Set<String> seen) {
      String name = text(n, field);
      if (seen.contains(name)) {
        throw error(field, "'" + name + "' appears twice");
      }
      seen.add(name);
      return name;
    }

    long integer(JsonNode n, String field, boolean nonNegative) {
      if (n == null) {
        throw error(field, "missing");
      }
      if (!n.isIntegralNumber() || !n.canConvertToLong() || (nonNegative && n.longValue() < 0)) {
        throw error(field, "expected a" + (nonNegative ? " non-negative" : "n") + " integer, found " + n);
      }
      return n.longValue();
    }

    /** A number or null (the field must be present); {@code whole}: an integer. */
    Double numberOrNull(JsonNode n, String field, boolean whole) {
      if (n == null) {
        throw error(field, "missing");
      }
      if (n.isNull()) {
        return null;
      }
      if (!n.isNumber() || (whole && !n.isIntegralNumber()) || !Double.isFinite(n.doubleValue())) {
        throw error(field, "expected " + (whole ? "an integer" : "a number") + " or null, found " + n);
      }
      return n.doubleValue();
    }

    private static String kind(JsonNode n) {
      return n.getNodeType().toString().toLowerCase(Locale.ROOT);
    }

    void onlyFields(JsonNode o, String at, Set<String> allowed) {
      for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
        String k = it.next();
        if (!allowed.contains(k)) {
          throw error(at.isEmpty() ? k : at + "." + k, "not a field of format version " + VERSION);
        }
      }
    }

    /** Converts a JSON value to plain Java values (maps, lists, strings, numbers, booleans, null). */
    Object plain(JsonNode n) {
      if (n.isObject()) {
        return ResultsWriter.json().convertValue(n, PLAIN_MAP);
      }
      return ResultsWriter.json().convertValue(n, Object.class);
    }

    AllocatorHead allocator(JsonNode entry, String at, Set<String> seen) {
      JsonNode a = object(entry, at);
      Set<String> allowed = new HashSet<>(RunMetrics.COUNTERS);
      allowed.addAll(List.of("allocator", "options", "activation_oom_count", "modelled_allocator_nanos", "metrics", "extra"));
      onlyFields(a, at, allowed);
      String name = name(a.get("allocator"), at + ".allocator", seen);
      @SuppressWarnings("unchecked")
      Map<String, Object> options = (Map<String, Object>) plain(object(a.get("options"), at + ".options"));
      Map<String, Long> counters = new LinkedHashMap<>();
      for (String c : RunMetrics.COUNTERS) {
        counters.put(c, integer(a.get(c), at + "." + c, true));
      }
      long activationOoms = integer(a.get("activation_oom_count"), at + ".activation_oom_count", true);
      long modelledNanos = integer(a.get("modelled_allocator_nanos"), at + ".modelled_allocator_nanos", true);
      JsonNode metrics = object(a.get("metrics"), at + ".metrics");
      onlyFields(metrics, at + ".metrics", Set.copyOf(RunMetrics.GAUGES));
      Map<String, Gauge.Summary> summaries = new LinkedHashMap<>();
      for (String g : RunMetrics.GAUGES) {
        String gAt = at + ".metrics." + g;
        JsonNode m = object(metrics.get(g), gAt);
        onlyFields(m, gAt, SUMMARY_STATS);
        boolean whole = AllocatorResult.isIntegralGauge(g);
        summaries.put(
            g,
            new Gauge.Summary(
                numberOrNull(m.get("peak"), gAt + ".peak", whole),
                numberOrNull(m.get("mean"), gAt + ".mean", false),
                numberOrNull(m.get("final"), gAt + ".final", whole)));
      }
      Map<String, Long> extra = new LinkedHashMap<>();
      if (a.has("extra")) {
        JsonNode x = object(a.get("extra"), at + ".extra");
        for (Map.Entry<String, JsonNode> e : x.properties()) {
          extra.put(e.getKey(), integer(e.getValue(), at + ".extra." + e.getKey(), false));
        }
      }
      return new AllocatorHead(name, options, counters, summaries, modelledNanos, activationOoms, extra);
    }

    /** A sweep's statistics of one headline, or null. */
    SeedSweep.Stats sweepStats(JsonNode n, String at) {
      if (n == null) {
        throw error(at, "missing");
      }
      if (n.isNull()) {
        return null;
      }
      JsonNode o = object(n, at);
      onlyFields(o, at, Set.copyOf(SWEEP_STATS));
      double[] v = new double[4];
      for (int i = 0; i < 4; i++) {
        Double d = numberOrNull(o.get(SWEEP_STATS.get(i)), at + "." + SWEEP_STATS.get(i), false);
        if (d == null) {
          throw error(at + "." + SWEEP_STATS.get(i), "expected a number, found null");
        }
        v[i] = d;
      }
      long defined = integer(o.get("defined"), at + ".defined", true);
      if (defined > Integer.MAX_VALUE) {
        throw error(at + ".defined", "too large: " + defined);
      }
      return new SeedSweep.Stats(v[0], v[1], v[2], v[3], (int) defined);
    }
  }
}

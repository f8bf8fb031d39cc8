package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.Gauge;
import kvsim.metrics.RunMetrics;

/**
 * Reads a run's result folder ({@code summary.json} of format {@code kvsim-summary}, {@code
 * timeseries.csv}, {@code timing.json}) back into the {@link RunResults} that {@link ResultsWriter}
 * took; the schema and what round-trips are documented on {@link ResultsReader} and in {@code
 * results/SCHEMA.md}.
 */
public final class RunResultsReader {
  private static final Set<String> SUMMARY_STATS = Set.of("peak", "mean", "final");

  private RunResultsReader() {}


  /**
   * Reads a run's result folder: {@code summary.json}, {@code timeseries.csv} and {@code
   * timing.json} (no timings where a committed folder holds none).
   */
  public static RunResults read(Path dir) {
    JsonFile.requireFolder(dir);
    Path summaryFile = dir.resolve(ResultsReader.SUMMARY_FILE);
    JsonFile s = new JsonFile(summaryFile);
    JsonNode root = s.readObject();
    s.checkFormat(root, ResultsReader.RUN_FORMAT);
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
      AllocatorHead h = allocator(s, entries.get(i), "allocators[" + i + "]", seen);
      names.add(h.allocator);
      heads.add(h);
    }
    List<List<double[]>> samples = readTimeseries(dir.resolve(ResultsReader.TIMESERIES_FILE), names);
    List<AllocatorResult> results = new ArrayList<>();
    for (int i = 0; i < heads.size(); i++) {
      AllocatorHead h = heads.get(i);
      results.add(
          new AllocatorResult(
              h.allocator, h.options, h.counters, h.summaries, h.modelledAllocatorNanos, h.activationOomCount, h.extra, samples.get(i)));
    }
    // A committed folder holds no timing.json (Note [Committed folders] on ResultFolder).
    Path timingFile = dir.resolve(ResultsReader.TIMING_FILE);
    boolean none = !Files.exists(timingFile, LinkOption.NOFOLLOW_LINKS) && ResultFolder.isCommitted(dir);
    List<AllocatorResult.Timing> timings = none ? List.of() : readTiming(timingFile, names);
    return new RunResults(config, results, timings);
  }

  /** Reads the time series; returns the rows of each allocator, in the order of {@code names}. */
  private static List<List<double[]>> readTimeseries(Path file, List<String> names) {
    String src = file.toString();
    JsonFile.requireFile(file);
    List<List<double[]>> samples = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      samples.add(new ArrayList<>());
    }
    int columns = ResultsReader.TIMESERIES_COLUMNS.size();
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String header = in.readLine();
      if (header == null) {
        throw InputException.at(src, 1, null, "empty; expected the header " + ResultsReader.TIMESERIES_HEADER);
      }
      if (!header.equals(ResultsReader.TIMESERIES_HEADER)) {
        throw InputException.at(src, 1, "header", "expected " + ResultsReader.TIMESERIES_HEADER + ", found " + header);
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
            throw InputException.at(src, lineNo, "allocator", "'" + f[0] + "' is not among the allocators of " + ResultsReader.SUMMARY_FILE + " " + names);
          }
          if (next < current) {
            throw InputException.at(
                src, lineNo, "allocator", "the rows of '" + f[0] + "' must come together, allocators in the order of " + ResultsReader.SUMMARY_FILE + " " + names);
          }
          current = next;
          lastEvent = 0;
          lastTimeNanos = 0;
        }
        double[] row = new double[columns - 1];
        for (int i = 1; i < columns; i++) {
          String col = ResultsReader.TIMESERIES_COLUMNS.get(i);
          row[i - 1] = ResultsReader.isFraction(col) ? fraction(src, lineNo, col, f[i]) : count(src, lineNo, col, f[i]);
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

  static long count(String src, long line, String column, String text) {
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

  static double fraction(String src, long line, String column, String text) {
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
    JsonFile t = new JsonFile(file);
    JsonNode root = t.readObject();
    t.checkFormat(root, ResultsReader.TIMING_FORMAT);
    t.onlyFields(root, "", Set.of("format", "version", "runs"));
    List<JsonNode> runs = t.array(root.get("runs"), "runs");
    if (runs.size() != names.size()) {
      throw InputException.at(file.toString(), 0, "runs", runs.size() + " runs, but " + ResultsReader.SUMMARY_FILE + " lists " + names.size() + " allocators " + names);
    }
    List<AllocatorResult.Timing> out = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      String at = "runs[" + i + "]";
      JsonNode r = t.object(runs.get(i), at);
      t.onlyFields(r, at, Set.of("allocator", "events", "wall_seconds", "events_per_second"));
      String name = t.text(r.get("allocator"), at + ".allocator");
      if (!name.equals(names.get(i))) {
        throw InputException.at(file.toString(), 0, at + ".allocator", "'" + name + "', but " + ResultsReader.SUMMARY_FILE + " lists '" + names.get(i) + "' here");
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

  /** One allocator's entry of a run summary, without its samples. */
  private record AllocatorHead(
      String allocator,
      Map<String, Object> options,
      Map<String, Long> counters,
      Map<String, Gauge.Summary> summaries,
      long modelledAllocatorNanos,
      long activationOomCount,
      Map<String, Long> extra) {}

  static AllocatorHead allocator(JsonFile s, JsonNode entry, String at, Set<String> seen) {
    JsonNode a = s.object(entry, at);
    Set<String> allowed = new HashSet<>(RunMetrics.COUNTERS);
    allowed.addAll(List.of("allocator", "options", "activation_oom_count", "modelled_allocator_nanos", "metrics", "extra"));
    s.onlyFields(a, at, allowed);
    String name = s.name(a.get("allocator"), at + ".allocator", seen);
    @SuppressWarnings("unchecked")
    Map<String, Object> options = (Map<String, Object>) s.plain(s.object(a.get("options"), at + ".options"));
    Map<String, Long> counters = new LinkedHashMap<>();
    for (String c : RunMetrics.COUNTERS) {
      counters.put(c, s.integer(a.get(c), at + "." + c, true));
    }
    long activationOoms = s.integer(a.get("activation_oom_count"), at + ".activation_oom_count", true);
    long modelledNanos = s.integer(a.get("modelled_allocator_nanos"), at + ".modelled_allocator_nanos", true);
    JsonNode metrics = s.object(a.get("metrics"), at + ".metrics");
    s.onlyFields(metrics, at + ".metrics", Set.copyOf(RunMetrics.GAUGES));
    Map<String, Gauge.Summary> summaries = new LinkedHashMap<>();
    for (String g : RunMetrics.GAUGES) {
      String gAt = at + ".metrics." + g;
      JsonNode m = s.object(metrics.get(g), gAt);
      s.onlyFields(m, gAt, SUMMARY_STATS);
      boolean whole = AllocatorResult.isIntegralGauge(g);
      summaries.put(
          g,
          new Gauge.Summary(
              s.numberOrNull(m.get("peak"), gAt + ".peak", whole),
              s.numberOrNull(m.get("mean"), gAt + ".mean", false),
              s.numberOrNull(m.get("final"), gAt + ".final", whole)));
    }
    Map<String, Long> extra = new LinkedHashMap<>();
    if (a.has("extra")) {
      JsonNode x = s.object(a.get("extra"), at + ".extra");
      for (Map.Entry<String, JsonNode> e : x.properties()) {
        extra.put(e.getKey(), s.integer(e.getValue(), at + ".extra." + e.getKey(), false));
      }
    }
    return new AllocatorHead(name, options, counters, summaries, modelledNanos, activationOoms, extra);
  }
}

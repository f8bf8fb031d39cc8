package kvsim.report;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.AtomicFiles;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.Gauge;
import kvsim.metrics.RunMetrics;

/**
 * Writes a run's result folder (DESIGN §7): {@code summary.json} (config echo, kvsim version,
 * per-allocator metrics; byte-identical for the same inputs), {@code timeseries.csv}, {@code
 * timing.json} (wall time, events per second) and the {@code fragmentation.png}/{@code .svg} chart.
 *
 * <p>Where the folder goes, and why that never harms other files, is {@link ResultFolder}'s
 * business: the files are written into a hidden temporary folder that is moved into place at the
 * end, so no partial result folder is ever left behind.
 */
public final class ResultsWriter {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);

  private ResultsWriter() {}

  /** Returns the JSON mapper used for result files (indented, stable field order). */
  public static ObjectMapper json() {
    return JSON;
  }

  /**
   * Writes a result folder at {@code target} (see {@link ResultFolder}) and returns where it went.
   *
   * @param config the run's configuration echo (inputs only, nothing time-dependent)
   * @param results one result per allocator, in the order run
   * @param timings wall-clock figures, same order
   */
  public static Path write(
      ResultFolder.Target target, Map<String, Object> config, List<AllocatorResult> results, List<AllocatorResult.Timing> timings)
      throws IOException {
    return ResultFolder.write(target, tmp -> {
      writeJson(tmp.resolve("summary.json"), summary(config, results));
      writeJson(tmp.resolve("timing.json"), timing(timings));
      writeTimeseries(tmp.resolve("timeseries.csv"), results);
      FragmentationChart.write(tmp, results);
    });
  }

  /** Writes a result folder holding only {@code summary.json} (seed sweeps have no time series). */
  public static Path writeSummaryOnly(ResultFolder.Target target, Map<String, Object> summary) throws IOException {
    return ResultFolder.write(target, tmp -> writeJson(tmp.resolve("summary.json"), summary));
  }

  /** Builds the summary tree: config, then one entry per allocator. */
  public static Map<String, Object> summary(Map<String, Object> config, List<AllocatorResult> results) {
    Map<String, Object> root = new LinkedHashMap<>(config);
    List<Object> allocators = new ArrayList<>();
    for (AllocatorResult r : results) {
      allocators.add(allocatorSummary(r));
    }
    root.put("allocators", allocators);
    return root;
  }

  /** Builds the summary of one allocator run. */
  public static Map<String, Object> allocatorSummary(AllocatorResult r) {
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("allocator", r.allocator());
    a.put("options", r.options());
    a.putAll(r.counters());
    a.put("activation_oom_count", r.activationOomCount());
    a.put("modelled_allocator_nanos", r.modelledAllocatorNanos());
    Map<String, Object> metrics = new LinkedHashMap<>();
    for (Map.Entry<String, Gauge.Summary> e : r.summaries().entrySet()) {
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("peak", integral(e.getKey(), e.getValue().peak()));
      s.put("mean", e.getValue().mean());
      s.put("final", integral(e.getKey(), e.getValue().last()));
      metrics.put(e.getKey(), s);
    }
    a.put("metrics", metrics);
    if (!r.extra().isEmpty()) {
      a.put("extra", r.extra());
    }
    return a;
  }

  /** Byte and count gauges are whole numbers: write them as integers. */
  private static Object integral(String metric, Double v) {
    if (v == null) {
      return null;
    }
    if (metric.endsWith("_bytes") || metric.equals("live_allocations")) {
      return Math.round(v);
    }
    return v;
  }

  private static Map<String, Object> timing(List<AllocatorResult.Timing> timings) {
    Map<String, Object> root = new LinkedHashMap<>();
    List<Object> list = new ArrayList<>();
    for (AllocatorResult.Timing t : timings) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("allocator", t.allocator());
      m.put("events", t.events());
      m.put("wall_seconds", t.wallNanos() / 1e9);
      m.put("events_per_second", Math.round(t.eventsPerSecond()));
      list.add(m);
    }
    root.put("runs", list);
    return root;
  }

  private static void writeJson(Path file, Object tree) throws IOException {
    AtomicFiles.write(file, out -> {
      JSON.writeValue(out, tree);
      out.write('\n');
    });
  }

  /** Writes the sampled rows of every allocator into one long-format CSV. */
  private static void writeTimeseries(Path file, List<AllocatorResult> results) throws IOException {
    AtomicFiles.write(file, out -> {
      Writer w = new OutputStreamWriter(out, StandardCharsets.UTF_8);
      w.write("allocator,event,t_ns," + String.join(",", RunMetrics.SAMPLE_COLUMNS) + "\n");
      StringBuilder sb = new StringBuilder();
      for (AllocatorResult r : results) {
        for (double[] row : r.samples()) {
          sb.setLength(0);
          sb.append(r.allocator());
          for (int i = 0; i < row.length; i++) {
            sb.append(',');
            String col = i < 2 ? null : RunMetrics.SAMPLE_COLUMNS.get(i - 2);
            if (col != null && col.endsWith("fragmentation")) {
              sb.append(Double.isNaN(row[i]) ? "" : String.format(Locale.ROOT, "%.6f", row[i]));
            } else {
              sb.append((long) row[i]);
            }
          }
          sb.append('\n');
          w.write(sb.toString());
        }
      }
      w.flush();
    });
  }
}

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
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.MemoryMap;
import kvsim.metrics.RunMetrics;
import kvsim.metrics.SeedSweep;

/**
 * Writes a run's result folder ({@code results/SCHEMA.md}): {@code summary.json} (format marker,
 * config echo, kvsim version, per-allocator metrics; byte-identical for the same inputs), {@code
 * timeseries.csv}, {@code timing.json} (wall time, events per second) and the {@code
 * fragmentation.png}/{@code .svg} chart. The schema, version {@value ResultsReader#VERSION}, is
 * documented on {@link ResultsReader}, which reads the folder back.
 *
 * <p>Where the folder goes, and why that never harms other files, is {@link ResultFolder}'s
 * business: the files are written into a hidden temporary folder that is moved into place at the
 * end, so no partial result folder is ever left behind.
 *
 * <p>Note [Charts from files]: the chart is drawn from what {@link ResultsReader} reads back from
 * the temporary folder, not from the in-memory results. A chart therefore shows only what the files
 * hold (ratios to 6 decimals), {@link FragmentationChart#redraw} draws the same chart from the
 * folder later, and every result folder written has passed the reader's checks.
 */
public final class ResultsWriter {
  /** The mapper, made on its first use (Note [Result files without the mapper] on {@link JsonTrees}). */
  private static final class Mapper {
    static final ObjectMapper JSON =
        new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET)
            .registerModule(kvsim.core.PlainNumbers.MODULE); // Note [Integers as integers]
  }

  private ResultsWriter() {}

  /**
   * Returns the JSON mapper of result files (indented, stable field order); the result files
   * themselves are written and read through {@link JsonTrees}, byte for byte as this mapper would.
   */
  public static ObjectMapper json() {
    return Mapper.JSON;
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
    return write(target, config, results, timings, null);
  }

  /**
   * Writes a result folder as {@link #write(ResultFolder.Target, Map, List, List)} does, plus, when
   * {@code memoryMaps} is not null, {@code memory-map.json} and its chart ({@link MemoryMapChart},
   * drawn from the file read back); and the folder's {@code report.html} ({@link HtmlReport}).
   */
  public static Path write(
      ResultFolder.Target target,
      Map<String, Object> config,
      List<AllocatorResult> results,
      List<AllocatorResult.Timing> timings,
      List<MemoryMap> memoryMaps)
      throws IOException {
    return write(target, config, results, timings, memoryMaps, null);
  }

  /**
   * Writes a result folder as {@link #write(ResultFolder.Target, Map, List, List, List)} does, and
   * lets {@code extra} (when not null) add its own files to the folder before it is sealed, before
   * {@code report.html} is drawn (a GPU replay's measured files beside the simulated ones).
   */
  public static Path write(
      ResultFolder.Target target,
      Map<String, Object> config,
      List<AllocatorResult> results,
      List<AllocatorResult.Timing> timings,
      List<MemoryMap> memoryMaps,
      AtomicFiles.FolderWriter extra)
      throws IOException {
    Map<String, Object> summary = summary(config, results);
    Map<String, Object> timing = timing(timings);
    List<String> later = target.report() ? List.of()
        : reportFiles(memoryMaps != null ? List.of(FragmentationChart.NAME, MemoryMapChart.NAME) : List.of(FragmentationChart.NAME));
    return ResultFolder.write(target, tmp -> {
      writeJson(tmp.resolve(ResultsReader.SUMMARY_FILE), summary);
      if (!timings.isEmpty()) { // a folder read back from a committed folder has none (Note [Committed folders])
        writeJson(tmp.resolve(ResultsReader.TIMING_FILE), timing);
      }
      writeTimeseries(tmp.resolve(ResultsReader.TIMESERIES_FILE), results);
      if (!target.report()) { // Note [Data files only] on ResultFolder
        if (memoryMaps != null) {
          MemoryMapFile.write(tmp, memoryMaps);
        }
        if (extra != null) {
          extra.write(tmp);
        }
        return;
      }
      // Note [Charts from files]
      RunResults read;
      try {
        read = ResultsReader.read(tmp);
      } catch (InputException e) {
        throw new IllegalStateException("the result files just written do not read back: " + e.getMessage(), e);
      }
      // Note [Charts off the critical path] on ChartJobs: the charts are drawn while the rest is written.
      ChartJobs charts = new ChartJobs(tmp);
      FragmentationChart.add(charts, read.results(), Headline.subject(read.config()));
      charts.finishWith(d -> {
        List<MemoryMap> maps = null;
        if (memoryMaps != null) {
          MemoryMapFile.write(d, memoryMaps);
          maps = readBack(() -> MemoryMapFile.read(d));
          MemoryMapChart.add(charts, maps, Headline.subject(read.config()));
        }
        if (extra != null) {
          extra.write(d);
        }
        // The report from the files as read back here, not read a second time.
        HtmlReport.writeInto(d, HtmlReport.titleOf(config), charts, read, maps);
      });
    }, later);
  }

  /** Returns the files a folder written without its report would have had: each chart's PNG and SVG, and {@code report.html}. */
  private static List<String> reportFiles(List<String> charts) {
    List<String> files = new ArrayList<>();
    for (String c : charts) {
      files.add(c + ".png");
      files.add(c + ".svg");
    }
    files.add(HtmlReport.FILE);
    return files;
  }

  /** Reads a file just written; a failure is a bug of the writer, not bad input. */
  private static <T> T readBack(java.util.function.Supplier<T> reader) {
    try {
      return reader.get();
    } catch (InputException e) {
      throw new IllegalStateException("the result files just written do not read back: " + e.getMessage(), e);
    }
  }

  /**
   * Writes a serving run's result folder from its typed results: {@code summary.json} ({@code
   * "format": "kvsim-serving-summary"}, the configuration echo, the grid where there is one, then
   * one object per entry under {@code systems}), {@code timing.json} (the entries' wall-clock
   * figures, kept apart so the summary stays byte-identical across runs), {@code timeseries.csv},
   * {@code latency-quantiles.csv} (when there are quantiles), the charts of {@link ServingCharts}
   * and {@code report.html}, all drawn from the files read back.
   */
  public static Path writeServing(ResultFolder.Target target, ServingResults results, List<ServingResults.Timing> timings) throws IOException {
    return writeServing(target, results, timings, null);
  }

  /**
   * Writes a serving run's result folder as {@link #writeServing(ResultFolder.Target, ServingResults,
   * List)} does, and lets {@code extra} (when not null) add its own files before the charts and
   * report are drawn (a run over seeds: {@code per_seed.csv}).
   */
  public static Path writeServing(ResultFolder.Target target, ServingResults results, List<ServingResults.Timing> timings, AtomicFiles.FolderWriter extra)
      throws IOException {
    Map<String, Object> summary = servingSummary(results);
    Map<String, Object> timing = header(ResultsReader.TIMING_FORMAT, Map.of(), "runs");
    timing.put("runs", timings.stream().map(ServingResults.Timing::toMap).toList());
    List<String> later = new ArrayList<>();
    if (!target.report()) {
      later.addAll(ServingCharts.files(results));
      later.add(HtmlReport.FILE);
    }
    return ResultFolder.write(target, tmp -> {
      writeJson(tmp.resolve(ResultsReader.SUMMARY_FILE), summary);
      writeJson(tmp.resolve(ResultsReader.TIMING_FILE), timing);
      writeSeries(tmp.resolve(ResultsReader.TIMESERIES_FILE), "system", results.seriesColumns(), results.series());
      if (!results.quantiles().isEmpty()) {
        writeQuantiles(tmp.resolve(ResultsReader.QUANTILES_FILE), results.quantileColumns(), results.quantiles());
      }
      // Note [Charts from files]: every chart, kv-breakdown included, from the files read back.
      if (extra != null) {
        extra.write(tmp);
      }
      if (!target.report()) { // Note [Data files only] on ResultFolder
        return;
      }
      ServingResults read = readBack(() -> ServingResultsReader.read(tmp));
      // Note [Charts off the critical path] on ChartJobs
      ChartJobs charts = new ChartJobs(tmp);
      ServingCharts.addAll(charts, read);
      charts.finishWith(d -> HtmlReport.writeInto(d, HtmlReport.titleOf(results.config()), charts, read)); // read once for charts and report
    }, later);
  }

  /** Returns a serving run's {@code summary.json} tree: the markers, the configuration echo, then {@code systems}. */
  private static Map<String, Object> servingSummary(Map<String, Object> config, List<Map<String, Object>> systems) {
    Map<String, Object> summary = header(ResultsReader.SERVING_FORMAT, config, "systems");
    summary.put("systems", systems);
    return summary;
  }

  /**
   * Returns the {@code summary.json} tree of what {@link ResultsReader#readServing} read: written
   * out as {@link #writeServing} writes it, it gives the same bytes.
   */
  public static Map<String, Object> servingSummary(ServingResults r) {
    Map<String, Object> config = new LinkedHashMap<>(r.config());
    if (!r.grid().isEmpty()) {
      config.put("grid", r.grid());
    }
    return servingSummary(config, r.systems());
  }

  /**
   * Writes a capacity search's result folder: {@code summary.json} ({@code "format":
   * "kvsim-capacity"}, the configuration echo, the targets and one object per system), {@code
   * probes.csv} (one row per probe), the chart of the first latency target ({@link CapacityChart})
   * and {@code report.html}, the chart and report drawn from the summary read back (Note [Charts
   * from files]).
   */
  public static Path writeCapacity(ResultFolder.Target target, CapacityResults results) throws IOException {
    return writeCapacity(target, results, Map.of(), null);
  }

  /**
   * Writes a capacity search's result folder as {@link #writeCapacity(ResultFolder.Target,
   * CapacityResults)} does, with each system's {@code intervals} (by label, where given: a search
   * over seeds) after its answer, and lets {@code extra} (when not null) add its own files
   * ({@code per_seed.csv}).
   */
  public static Path writeCapacity(ResultFolder.Target target, CapacityResults results, Map<String, Map<String, Object>> intervals,
      AtomicFiles.FolderWriter extra) throws IOException {
    Map<String, Object> summary = capacitySummary(results, intervals);
    return ResultFolder.write(target, tmp -> {
      writeJson(tmp.resolve(ResultsReader.SUMMARY_FILE), summary);
      if (extra != null) {
        extra.write(tmp);
      }
      AtomicFiles.write(tmp.resolve(CAPACITY_PROBES_FILE), out -> out.write(capacityProbes(results).getBytes(StandardCharsets.UTF_8)));
      if (!target.report()) { // Note [Data files only] on ResultFolder
        return;
      }
      ChartJobs charts = new ChartJobs(tmp); // Note [Charts off the critical path] on ChartJobs
      CapacityChart.add(charts, readBack(() -> CapacityResultsReader.read(tmp)));
      charts.finishWith(d -> HtmlReport.writeInto(d, HtmlReport.titleOf(results.config()), charts));
    }, target.report() ? List.of() : reportFiles(List.of(CapacityChart.NAME)));
  }

  /** The name of a capacity search's file of probes. */
  public static final String CAPACITY_PROBES_FILE = "probes.csv";

  /** Returns a capacity search's {@code summary.json} tree. */
  public static Map<String, Object> capacitySummary(CapacityResults r) {
    Map<String, Map<String, Object>> intervals = new LinkedHashMap<>();
    r.intervals().forEach((label, in) -> {
      Map<String, Object> m = new LinkedHashMap<>();
      in.forEach((field, i) -> m.put(field, i.toMap()));
      intervals.put(label, m);
    });
    return capacitySummary(r, intervals);
  }

  /** Returns a capacity search's {@code summary.json} tree, with each system's {@code intervals} where {@code intervals} has its label. */
  public static Map<String, Object> capacitySummary(CapacityResults r, Map<String, Map<String, Object>> intervals) {
    Map<String, Object> summary = header(ResultsReader.CAPACITY_FORMAT, r.config(), "targets", "systems");
    summary.put("targets", r.targets());
    List<Object> systems = new ArrayList<>();
    for (CapacityResults.SystemEntry e : r.systems()) {
      Map<String, Object> sys = new LinkedHashMap<>();
      sys.put("system", e.system());
      if (e.kvMemoryBytes() != null) {
        sys.put("cell", e.cell());
        sys.put("kv_memory_bytes", e.kvMemoryBytes());
      }
      sys.putAll(capacityAnswer(e));
      if (intervals.containsKey(e.label())) {
        sys.put("intervals", intervals.get(e.label()));
      }
      List<Object> probes = new ArrayList<>();
      for (CapacityResults.Probe p : e.probes()) {
        probes.add(capacityProbe(p));
      }
      sys.put("probes", probes);
      systems.add(sys);
    }
    summary.put("systems", systems);
    return summary;
  }

  /** Returns a system's answer as {@code summary.json} gives it: from {@code max_rate_rps} to {@code unmet_at_min_rate}. */
  public static Map<String, Object> capacityAnswer(CapacityResults.SystemEntry e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("max_rate_rps", e.maxRateRps());
    m.put("at_upper_bound", e.atUpperBound());
    m.put("goodput_rps", e.goodputRps());
    m.put("requests", e.requests());
    m.put("finished", e.finished());
    m.put("rejected", e.rejected());
    m.put("aborted", e.aborted());
    m.put("rejected_fraction", e.rejectedFraction());
    m.put("unmet_at_min_rate", e.unmetAtMinRate());
    return m;
  }

  /** Returns one probe as {@code summary.json} gives it. */
  public static Map<String, Object> capacityProbe(CapacityResults.Probe p) {
    Map<String, Object> pm = new LinkedHashMap<>();
    pm.put("rate_rps", p.rateRps());
    pm.put("met", p.met());
    pm.put("requests", p.requests());
    pm.put("finished", p.finished());
    pm.put("rejected", p.rejected());
    pm.put("aborted", p.aborted());
    pm.put("rejected_fraction", p.rejectedFraction());
    pm.put("goodput_rps", p.goodputRps());
    pm.put("values_seconds", p.valuesSeconds());
    if (p.attainment() != null) {
      pm.put("attainment", p.attainment());
    }
    return pm;
  }

  /** Returns {@code probes.csv}: {@link CapacityResults#probeColumns}, decimals {@code %.6f}, empty where undefined. */
  static String capacityProbes(CapacityResults r) {
    StringBuilder sb = new StringBuilder(String.join(",", r.probeColumns())).append('\n');
    for (CapacityResults.SystemEntry e : r.systems()) {
      for (CapacityResults.Probe p : e.probes()) {
        List<Object> row = new ArrayList<>(List.of(e.system()));
        row.addAll(e.cell().values());
        row.addAll(List.of(p.rateRps(), p.met(), p.requests(), p.finished(), p.rejected(), p.aborted(), p.rejectedFraction(), p.goodputRps()));
        for (Double v : p.valuesSeconds().values()) {
          row.add(v == null ? Double.NaN : v);
        }
        if (r.hasAttainment()) {
          row.add(p.attainment() == null ? Double.NaN : p.attainment());
        }
        for (int i = 0; i < row.size(); i++) {
          Object v = row.get(i);
          sb.append(i == 0 ? "" : ",").append(v instanceof Double d ? (Double.isNaN(d) ? "" : String.format(Locale.ROOT, "%.6f", d)) : String.valueOf(v));
        }
        sb.append('\n');
      }
    }
    return sb.toString();
  }

  /** Writes latency quantiles as a long-format CSV: {@code system}, then the columns, {@code %.6f}, empty where undefined. */
  private static void writeQuantiles(Path file, List<String> columns, Map<String, List<double[]>> quantiles) throws IOException {
    AtomicFiles.write(file, out -> {
      StringBuilder sb = new StringBuilder("system,").append(String.join(",", columns)).append('\n');
      for (Map.Entry<String, List<double[]>> e : quantiles.entrySet()) {
        for (double[] row : e.getValue()) {
          sb.append(e.getKey());
          for (double v : row) {
            sb.append(',').append(Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.6f", v));
          }
          sb.append('\n');
        }
      }
      out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
    });
  }

  /** Writes sampled rows of several runs as one long-format CSV: {@code key} column, then {@code columns}. */
  private static void writeSeries(Path file, String key, List<String> columns, Map<String, List<double[]>> series) throws IOException {
    AtomicFiles.write(file, out -> {
      StringBuilder sb = new StringBuilder();
      sb.append(key);
      for (String c : columns) {
        sb.append(',').append(c);
      }
      sb.append('\n');
      for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
        for (double[] row : e.getValue()) {
          sb.append(e.getKey());
          for (int i = 0; i < row.length; i++) {
            double v = row[i];
            sb.append(',');
            if (v == Math.rint(v) && Math.abs(v) < 1e15) {
              sb.append((long) v);
            } else {
              sb.append(String.format(Locale.ROOT, "%.6f", v));
            }
          }
          sb.append('\n');
        }
      }
      out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
    });
  }

  /** Writes a result folder from what {@link ResultsReader#read} gave (see there for what round-trips). */
  public static Path write(ResultFolder.Target target, RunResults run) throws IOException {
    return write(target, run.config(), run.results(), run.timings());
  }

  /** Writes a seed sweep's result folder: {@code summary.json} only (a sweep keeps no time series). */
  public static Path writeSweep(ResultFolder.Target target, SweepResults sweep) throws IOException {
    Map<String, Object> summary = sweepSummary(sweep);
    return ResultFolder.write(target, tmp -> {
      writeJson(tmp.resolve(ResultsReader.SUMMARY_FILE), summary);
      if (target.report()) { // Note [Data files only] on ResultFolder
        HtmlReport.writeInto(tmp, HtmlReport.titleOf(sweep.config()));
      }
    }, target.report() ? List.of() : List.of(HtmlReport.FILE));
  }

  /** Builds the summary tree: format marker, config, then one entry per allocator. */
  public static Map<String, Object> summary(Map<String, Object> config, List<AllocatorResult> results) {
    Map<String, Object> root = header(ResultsReader.RUN_FORMAT, config, "allocators");
    List<Object> allocators = new ArrayList<>();
    for (AllocatorResult r : results) {
      allocators.add(allocatorSummary(r));
    }
    root.put("allocators", allocators);
    return root;
  }

  /** Builds a seed sweep's summary tree: format marker, config, seeds, then one entry per allocator. */
  public static Map<String, Object> sweepSummary(SweepResults sweep) {
    Map<String, Object> root = header(ResultsReader.SWEEP_FORMAT, sweep.config(), "seeds", "allocators");
    root.put("seeds", sweep.seeds());
    List<Object> allocators = new ArrayList<>();
    for (SweepResults.Entry e : sweep.entries()) {
      Map<String, Object> a = new LinkedHashMap<>();
      a.put("allocator", e.allocator());
      Map<String, Object> stats = new LinkedHashMap<>();
      for (Map.Entry<String, SeedSweep.Stats> s : e.sweep().entrySet()) {
        SeedSweep.Stats st = s.getValue();
        Map<String, Object> m = null;
        if (st != null) {
          m = new LinkedHashMap<>();
          m.put("median", st.median());
          m.put("p10", st.p10());
          m.put("p90", st.p90());
          m.put("mean", st.mean());
          m.put("defined", st.defined());
        }
        stats.put(s.getKey(), m);
      }
      a.put("sweep", stats);
      List<Object> perSeed = new ArrayList<>();
      for (SeedSweep.Row row : e.perSeed()) {
        Map<String, Object> one = new LinkedHashMap<>();
        one.put("seed", row.seed());
        one.putAll(row.headlines());
        perSeed.add(one);
      }
      a.put("per_seed", perSeed);
      allocators.add(a);
    }
    root.put("allocators", allocators);
    return root;
  }

  /** The format marker, then the config echo, which must not use the keys the format claims. */
  private static Map<String, Object> header(String format, Map<String, Object> config, String... claimed) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("format", format);
    root.put("version", ResultsReader.VERSION);
    for (Map.Entry<String, Object> e : config.entrySet()) {
      if (root.containsKey(e.getKey()) || List.of(claimed).contains(e.getKey())) {
        throw new IllegalArgumentException("the config echo may not hold the key " + e.getKey());
      }
      root.put(e.getKey(), e.getValue());
    }
    return root;
  }

  /** Builds the summary of one allocator run. */
  public static Map<String, Object> allocatorSummary(AllocatorResult r) {
    return r.summary();
  }

  private static Map<String, Object> timing(List<AllocatorResult.Timing> timings) {
    Map<String, Object> root = header(ResultsReader.TIMING_FORMAT, Map.of(), "runs");
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
      JsonTrees.writePretty(out, tree); // as json().writeValue(out, tree)
      out.write('\n');
    });
  }

  /** Writes the sampled rows of every allocator into one long-format CSV. */
  private static void writeTimeseries(Path file, List<AllocatorResult> results) throws IOException {
    AtomicFiles.write(file, out -> {
      Writer w = new OutputStreamWriter(out, StandardCharsets.UTF_8);
      w.write(ResultsReader.TIMESERIES_HEADER + "\n");
      StringBuilder sb = new StringBuilder();
      for (AllocatorResult r : results) {
        for (double[] row : r.samples()) {
          sb.setLength(0);
          sb.append(r.allocator());
          for (int i = 0; i < row.length; i++) {
            sb.append(',');
            String col = i < 2 ? null : RunMetrics.SAMPLE_COLUMNS.get(i - 2);
            if (col != null && ResultsReader.isFraction(col)) {
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

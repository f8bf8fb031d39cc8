package kvsim.report;

import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.data.category.DefaultCategoryDataset;

/**
 * The charts and report section of a sweep's folder ({@code kvsim sweep}: {@code sweep.json}): per
 * headline metric, one bar per group of cells — the cells alike but for their seed — at the
 * group's median over its seeds (the value itself where the grid has no seeds), each group's
 * allocator or system in its colour ({@link Palette}); its data table gives the median, p10, p90,
 * minimum and maximum over the seeds, bytes humanised. Drawn from {@code sweep.json} alone, so
 * {@code kvsim sweep} and {@code kvsim report SWEEP_DIR} draw the same files.
 *
 * <p>Note [A sweep's parameters]: a row's parameters are its columns whose values are strings in
 * every row (workload, device, model, each set option, allocator or system, seed: results/SCHEMA.md,
 * "A sweep's folder"); its metrics are the numeric ones. The headline metrics drawn are those of
 * {@link #PREFERRED} the table has, else its first metrics whose better direction is known
 * ({@link Headline#lowerIsBetter}).
 */
public final class SweepChart {
  static final int WIDTH = 1000;
  static final int HEIGHT = 460;
  /** Metrics drawn when the table has them, in this order: L1 cells' and serving cells' headline metrics. */
  static final List<String> PREFERRED = List.of("external_fragmentation.peak", "external_fragmentation.mean", "oom_count", "reserved_bytes.peak",
      "throughput_tokens_per_second", "ttft_seconds.p50", "normalized_latency_seconds_per_token.mean", "requests_rejected");
  /** Most metrics drawn. */
  static final int MAX_METRICS = 4;

  private SweepChart() {}

  /** Returns whether {@code dir} is a sweep's folder: it holds {@code sweep.json} and no {@code summary.json}. */
  static boolean isSweepFolder(Path dir) {
    return Files.isRegularFile(dir.resolve(SweepTable.JSON_FILE)) && !Files.exists(dir.resolve(ResultsReader.SUMMARY_FILE));
  }

  /** Returns the file name (without extension) of a metric's chart: {@code sweep-external_fragmentation.peak}. */
  static String fileOf(String metric) {
    return "sweep-" + metric.replaceAll("[^A-Za-z0-9._-]", "_");
  }

  /** Returns the table's parameter columns (Note [A sweep's parameters]). */
  static List<String> parameters(SweepTableResults t) {
    List<String> out = new ArrayList<>();
    for (String c : t.columns()) {
      boolean text = true;
      for (SweepTableResults.Row r : t.rows()) {
        Object v = r.values().get(c);
        if (v != null && !(v instanceof String)) {
          text = false;
          break;
        }
      }
      if (text) {
        out.add(c);
      }
    }
    return out;
  }

  /** Returns the metrics drawn (Note [A sweep's parameters]). */
  static List<String> metrics(SweepTableResults t) {
    List<String> params = parameters(t);
    List<String> out = new ArrayList<>();
    for (String m : PREFERRED) {
      if (t.columns().contains(m) && !params.contains(m) && out.size() < MAX_METRICS) {
        out.add(m);
      }
    }
    if (out.isEmpty()) {
      for (String c : t.columns()) {
        if (!params.contains(c) && Headline.lowerIsBetter(c) != null && out.size() < MAX_METRICS) {
          out.add(c);
        }
      }
    }
    return out;
  }

  /**
   * How a table's cells are named: its parameters, and those whose values tell cells apart. Made
   * once per table: a name is then its row's values alone, where making the name looked at every
   * row again (a 1,200-cell sweep spent 13 s of its report naming cells).
   */
  record Naming(List<String> params, Set<String> shown) {
    static Naming of(SweepTableResults t) {
      List<String> params = parameters(t);
      Set<String> shown = new HashSet<>();
      for (String p : params) {
        // A parameter with one value across the table names no cell apart: left out.
        if (params.size() <= 2 || t.rows().stream().map(x -> x.text(p)).distinct().count() > 1) {
          shown.add(p);
        }
      }
      return new Naming(params, shown);
    }

    /** Returns a cell's name: its parameters' values (the workload, allocator or system, ...), joined. */
    String name(SweepTableResults.Row r, boolean withSeed) {
      List<String> parts = new ArrayList<>();
      for (String p : params) {
        if (!withSeed && p.equals("seed")) {
          continue;
        }
        if (shown.contains(p)) {
          parts.add(p.equals("seed") ? "seed " + r.text(p) : r.text(p));
        }
      }
      // The allocator or system last, so that its name ends the label (Palette reads "…: name").
      for (String key : List.of("allocator", "system")) {
        if (params.contains(key)) {
          parts.remove(r.text(key));
          String rest = String.join(" · ", parts);
          return rest.isEmpty() ? r.text(key) : rest + ": " + r.text(key);
        }
      }
      return String.join(" · ", parts);
    }
  }

  /** Returns the headline of a sweep's table ({@link Headline#sweepTable}). */
  static String headline(SweepTableResults t) {
    Naming naming = Naming.of(t);
    return Headline.sweepTable(t, metrics(t), r -> naming.name(r, true), MAX_METRICS);
  }

  /** One group of cells (alike but for the seed): its name and its values of one metric. */
  record Group(String name, double[] values) {
    /** Returns the interval of the median of the defined values (Note [The seed interval] on {@code metrics.Interval}), null with fewer than two. */
    kvsim.metrics.Interval interval() {
      double[] v = Arrays.stream(values).filter(Double::isFinite).toArray();
      return v.length < 2 ? null : kvsim.metrics.Interval.of(v);
    }

    double quantile(double q) {
      double[] v = Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
      if (v.length == 0) {
        return Double.NaN;
      }
      double pos = q * (v.length - 1);
      int lo = (int) Math.floor(pos);
      int hi = (int) Math.ceil(pos);
      return v[lo] + (v[hi] - v[lo]) * (pos - lo);
    }
  }

  /** Returns the groups of the table for {@code metric}, in the order of their first cell. */
  static List<Group> groups(SweepTableResults t, String metric) {
    Map<String, List<Double>> by = new LinkedHashMap<>();
    Naming naming = Naming.of(t);
    for (SweepTableResults.Row r : t.rows()) {
      Double v = r.number(metric);
      by.computeIfAbsent(naming.name(r, false), k -> new ArrayList<>()).add(v == null ? Double.NaN : v);
    }
    List<Group> out = new ArrayList<>();
    by.forEach((k, v) -> out.add(new Group(k, v.stream().mapToDouble(Double::doubleValue).toArray())));
    return out;
  }

  /**
   * Builds the chart of {@code metric}: one bar per group at its median, bytes in GiB; where a
   * group has two or more seeds, an error bar of its interval of the median ({@link Group#interval},
   * the {@code .low} and {@code .high} of {@code sweep-seeds.csv}) in the bar's colour ({@link
   * IntervalMarks}).
   */
  static JFreeChart build(SweepTableResults t, String metric) {
    List<Group> groups = groups(t, metric);
    boolean bytes = metric.contains("_bytes");
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    boolean allZero = true;
    for (Group g : groups) {
      double m = g.quantile(0.5);
      allZero &= Double.isNaN(m) || m == 0;
      // A bar of 0 has no height: the legend says so.
      data.addValue(Double.isNaN(m) ? null : bytes ? m / kvsim.core.Bytes.GiB : m, m == 0 ? g.name() + " (0)" : g.name(), Headline.metricName(metric));
    }
    double scale = bytes ? kvsim.core.Bytes.GiB : 1;
    Map<Integer, kvsim.metrics.Interval> intervals = new LinkedHashMap<>();
    Map<Integer, String> attributes = new LinkedHashMap<>();
    double top = 0;
    int seedCount = 0;
    for (int k = 0; k < groups.size(); k++) {
      kvsim.metrics.Interval in = groups.get(k).interval();
      if (in != null && Double.isFinite(groups.get(k).quantile(0.5))) {
        in = new kvsim.metrics.Interval(in.median() / scale, in.low() / scale, in.high() / scale, in.n(), in.coverage());
        intervals.put(k, in);
        attributes.put(k, IntervalMarks.attribute(groups.get(k).name() + ": " + Headline.metricName(metric), in.median(), in.low(), in.high(), in.n()));
        top = Math.max(top, in.high());
        seedCount = Math.max(seedCount, in.n());
      }
    }
    BarRenderer renderer = intervals.isEmpty() ? new BarRenderer() : new IntervalBarRenderer(intervals, attributes);
    renderer.setBarPainter(new StandardBarPainter());
    renderer.setShadowVisible(false);
    renderer.setItemMargin(0.05);
    @SuppressWarnings("unchecked")
    List<Palette.Style> styles = Palette.styles((List<String>) (List<?>) data.getRowKeys());
    for (int i = 0; i < styles.size(); i++) {
      renderer.setSeriesPaint(i, styles.get(i).colour());
    }
    boolean seeds = t.columns().contains("seed");
    String unit = bytes ? " (GiB)" : metric.contains("seconds") ? " (s)" : "";
    org.jfree.chart.axis.NumberAxis value = new org.jfree.chart.axis.NumberAxis((seeds ? "median over seeds: " : "") + Headline.metricName(metric) + unit);
    if (allZero && top == 0) {
      value.setRange(0, 1);
    } else if (top > 0) {
      double highest = 0;
      for (int k = 0; k < data.getRowCount(); k++) {
        Number v = data.getValue(k, 0);
        highest = Math.max(highest, v == null ? 0 : v.doubleValue());
      }
      if (top > highest) {
        value.setUpperBound(top * 1.05); // the error bars' tops inside the plot
      }
    }
    CategoryPlot plot = new CategoryPlot(data, new CategoryAxis(null), value, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    String grid = t.config().get("grid") == null ? "" : ": " + t.config().get("grid");
    JFreeChart chart = new JFreeChart(capitalised(Headline.metricName(metric)) + " by cell" + grid, new Font("SansSerif", Font.BOLD, 15), plot, true);
    if (!intervals.isEmpty()) {
      chart.addSubtitle(new org.jfree.chart.title.TextTitle(IntervalMarks.caption("Bars at the medians; error bars", seedCount) + ", in each bar's colour",
          new Font("SansSerif", Font.PLAIN, 12)));
    }
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  /** A bar renderer that draws, over each bar with an interval, its error bar (Note [Error bars in their series' colour] on {@link IntervalMarks}). */
  private static final class IntervalBarRenderer extends BarRenderer {
    private static final long serialVersionUID = 1L;
    private final transient Map<Integer, kvsim.metrics.Interval> intervals;
    private final Map<Integer, String> attributes;

    IntervalBarRenderer(Map<Integer, kvsim.metrics.Interval> intervals, Map<Integer, String> attributes) {
      this.intervals = Map.copyOf(intervals);
      this.attributes = Map.copyOf(attributes);
    }

    @Override
    public void drawItem(java.awt.Graphics2D g, org.jfree.chart.renderer.category.CategoryItemRendererState state, java.awt.geom.Rectangle2D dataArea,
        CategoryPlot plot, CategoryAxis domainAxis, org.jfree.chart.axis.ValueAxis rangeAxis, org.jfree.data.category.CategoryDataset dataset,
        int row, int column, int pass) {
      super.drawItem(g, state, dataArea, plot, domainAxis, rangeAxis, dataset, row, column, pass);
      kvsim.metrics.Interval in = intervals.get(row);
      int visible = state.getVisibleSeriesIndex(row);
      if (in == null || visible < 0 || pass != getPassCount() - 1) {
        return;
      }
      double x = calculateBarW0(plot, plot.getOrientation(), dataArea, domainAxis, state, visible, column) + state.getBarWidth() / 2;
      double yLow = rangeAxis.valueToJava2D(in.low(), dataArea, plot.getRangeAxisEdge());
      double yHigh = rangeAxis.valueToJava2D(in.high(), dataArea, plot.getRangeAxisEdge());
      Color colour = (Color) lookupSeriesPaint(row);
      IntervalMarks.grouped(g, attributes.get(row), () -> IntervalMarks.verticalBar(g, x, yLow, yHigh, colour));
    }
  }

  private static String capitalised(String s) {
    return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  /** Writes each drawn metric's chart into the sweep folder {@code dir} as PNG and SVG; returns how many files. */
  public static int write(Path dir, SweepTableResults t) throws IOException {
    ChartJobs jobs = new ChartJobs(dir);
    int files = add(jobs, t);
    jobs.await();
    return files;
  }

  /** Starts drawing each drawn metric's chart among {@code jobs} (Note [Charts off the critical path] on {@link ChartJobs}); returns how many files. */
  private static int add(ChartJobs jobs, SweepTableResults t) {
    int files = 0;
    for (String m : metrics(t)) {
      jobs.add(fileOf(m), () -> build(t, m), WIDTH, HEIGHT);
      files += 2;
    }
    return files;
  }

  /** Returns the files {@link #writeReport} writes into a sweep folder of table {@code t}: each chart's PNG and SVG, and {@code report.html}. */
  public static List<String> reportFiles(SweepTableResults t) {
    List<String> files = new ArrayList<>();
    for (String m : metrics(t)) {
      files.add(fileOf(m) + ".png");
      files.add(fileOf(m) + ".svg");
    }
    files.add(HtmlReport.FILE);
    return files;
  }

  /** Writes the report of the sweep folder {@code dir} into it as {@code report.html}, and its charts meanwhile; returns the chart files written. */
  public static int writeReport(Path dir) throws IOException {
    SweepTableResults t = SweepTable.read(dir);
    ChartJobs jobs = new ChartJobs(dir);
    int files = add(jobs, t);
    jobs.finishWith(d -> HtmlReport.write(d.resolve(HtmlReport.FILE), List.of(d), null, false));
    ResultFolder.seal(dir); // the folder's marker lists them, so that a later run resumes it
    return files;
  }

  /** Appends the section of a sweep's table to a report. */
  static void section(HtmlReport report, SweepTableResults t) {
    boolean seeds = t.columns().contains("seed");
    List<String> metrics = metrics(t);
    if (!metrics.isEmpty()) {
      List<String> header = new ArrayList<>(List.of(seeds ? "cells (all seeds)" : "cell"));
      metrics.forEach(m -> header.add(Headline.metricName(m) + (seeds ? " (median)" : "")));
      List<List<String>> rows = new ArrayList<>();
      List<List<Group>> byMetric = metrics.stream().map(m -> groups(t, m)).toList();
      for (int g = 0; g < byMetric.get(0).size(); g++) {
        List<String> row = new ArrayList<>(List.of(byMetric.get(0).get(g).name()));
        for (int k = 0; k < metrics.size(); k++) {
          row.add(Headline.humanise(metrics.get(k), byMetric.get(k).get(g).quantile(0.5)));
        }
        rows.add(row);
      }
      report.table("Headline metrics per group of cells" + (seeds ? ", median over seeds" : ""), header, rows);
    }
    for (String m : metrics) {
      List<Group> groups = groups(t, m);
      List<List<String>> rows = new ArrayList<>();
      StringBuilder alt = new StringBuilder("Bar chart of " + Headline.metricName(m) + ", one bar per " + (seeds ? "group of cells over seeds, at its median: " : "cell: "));
      for (Group g : groups) {
        rows.add(List.of(g.name(), Headline.humanise(m, g.quantile(0.5)), Headline.humanise(m, g.quantile(0.1)), Headline.humanise(m, g.quantile(0.9)),
            Headline.humanise(m, g.quantile(0)), Headline.humanise(m, g.quantile(1)), Integer.toString(g.values().length)));
        alt.append(g.name()).append(' ').append(Headline.humanise(m, g.quantile(0.5))).append("; ");
      }
      report.figure(build(t, m), WIDTH, HEIGHT, capitalised(Headline.metricName(m)) + (seeds ? " by cell, median over seeds" : " by cell"),
          alt.toString(), "Per group of cells: median, p10, p90, minimum and maximum" + (seeds ? " over seeds" : ""),
          List.of(seeds ? "cells (all seeds)" : "cell", "median", "p10", "p90", "min", "max", "cells"), rows);
    }
    report.note("Every cell's row is in " + SweepTable.CSV_FILE + " and " + SweepTable.JSON_FILE + " (" + t.rows().size() + " cells, "
        + t.columns().size() + " columns).");
  }
}

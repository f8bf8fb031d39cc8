package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.CombinedRangeXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.category.StackedBarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The serving report's charts beside {@link ServingChart}: the vLLM paper's KV breakdown as stacked
 * bars (Fig. 2: time-weighted mean share of the KV memory per use, one bar per system), the latency
 * CDFs (TTFT, TPOT, normalized latency; from {@code latency-quantiles.csv}) and the batch size over
 * simulated time (from {@code timeseries.csv}). Each is drawn from the folder's files alone and
 * written as PNG and SVG; the same files give byte-identical charts.
 */
public final class ServingCharts {
  static final int WIDTH = 1200;
  static final int BARS_HEIGHT = 520;
  static final int CDF_HEIGHT = 460;
  static final int BATCH_HEIGHT = 460;
  /**
   * The KV breakdown's uses as a folder writes them, with their labels and colours: the vLLM paper's
   * four of Fig. 2 in its order, then idle memory ({@link #CURRENT}); or, for a folder written
   * before idle memory was told apart ({@link #LEGACY}), the four it wrote then, free memory among
   * the external waste, drawn as they were drawn then.
   *
   * @param names the categories' names in {@code summary.json} and {@code timeseries.csv}
   * @param labels their labels in charts and tables
   * @param colours their colours
   */
  record Categories(List<String> names, List<String> labels, Color[] colours) {
    /** Returns the number of categories. */
    int size() {
      return names.size();
    }
  }

  static final Categories CURRENT = new Categories(
      List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle"),
      List.of("token states", "reserved (future tokens)", "internal fragmentation", "external fragmentation", "idle (free, nothing waits for it)"),
      new Color[] {Palette.TOKEN_STATES, Palette.RESERVED_FUTURE, Palette.INTERNAL_FRAGMENTATION, Palette.EXTERNAL_FRAGMENTATION, Palette.IDLE});
  static final Categories LEGACY = new Categories(
      List.of("token_states", "reserved_future", "internal_waste", "external_waste"),
      List.of("token states", "reserved (future tokens)", "internal fragmentation", "external fragmentation (idle included)"),
      new Color[] {Palette.TOKEN_STATES, Palette.RESERVED_FUTURE, Palette.INTERNAL_FRAGMENTATION, new Color(0xc7c7c7)});

  /** Returns the categories of a folder's time series columns: {@link #LEGACY} where they have {@code external_waste}. */
  static Categories categoriesOf(List<String> seriesColumns) {
    return seriesColumns.contains("external_waste") ? LEGACY : CURRENT;
  }

  /** Returns the categories of a folder's summary: {@link #LEGACY} where its first entry's breakdown has {@code external_waste}. */
  static Categories categoriesOf(ServingResults r) {
    return !r.entries().isEmpty() && r.entries().get(0).kvBreakdown().shares().containsKey("external_waste") ? LEGACY : CURRENT;
  }
  /** The latency columns drawn as CDFs, with their axis labels. */
  static final List<String> CDF_COLUMNS = List.of("ttft_seconds", "tpot_seconds", "normalized_latency_seconds_per_token");
  static final List<String> CDF_LABELS = List.of("TTFT (s)", "TPOT (s)", "normalized latency (s/token)");
  private static final int MAX_POINTS = 400;

  /** File names (without extension) of the charts written. */
  public static final String BARS_FILE = "kv-breakdown-bars";
  public static final String CDF_FILE = "latency-cdf";
  public static final String BATCH_FILE = "batch-size";

  private ServingCharts() {}

  /**
   * Draws every chart of the serving folder {@code dir} again from its data files alone ({@link
   * ServingResultsReader}): {@code kv-breakdown} ({@link ServingChart}) and the three of {@link
   * #write}, replacing those PNG and SVG files only.
   */
  public static void redraw(Path dir) throws IOException {
    ServingResults r = ServingResultsReader.read(dir);
    ChartJobs jobs = new ChartJobs(dir);
    addAll(jobs, r);
    jobs.await();
  }

  /** Writes the three charts of a serving folder, read back from its files, into {@code dir}. */
  public static void write(Path dir, ServingResults r) throws IOException {
    ChartJobs jobs = new ChartJobs(dir);
    add(jobs, r);
    jobs.await();
  }

  /** Starts drawing every chart of a serving folder among {@code jobs}: {@link ServingChart}'s, then the three of {@link #write}. */
  static void addAll(ChartJobs jobs, ServingResults r) {
    ServingChart.add(jobs, r);
    add(jobs, r);
  }

  /** Starts drawing the three charts of {@link #write} among {@code jobs} (Note [Charts off the critical path] on {@link ChartJobs}). */
  static void add(ChartJobs jobs, ServingResults r) {
    String subject = Headline.subject(r.config());
    jobs.add(BARS_FILE, () -> breakdownBars(r, subject), WIDTH, BARS_HEIGHT);
    if (!r.quantiles().isEmpty()) {
      jobs.add(CDF_FILE, () -> latencyCdf(r, subject), WIDTH, CDF_HEIGHT);
    }
    jobs.add(BATCH_FILE, () -> batchSize(r, subject), WIDTH, BATCH_HEIGHT);
  }

  /** Returns the chart files of a serving folder of {@code r}'s shape, PNG and SVG, as {@link #addAll} writes them. */
  static java.util.List<String> files(ServingResults r) {
    java.util.List<String> names = new java.util.ArrayList<>();
    for (String n : r.quantiles().isEmpty() ? List.of(ServingChart.NAME, BARS_FILE, BATCH_FILE) : List.of(ServingChart.NAME, BARS_FILE, CDF_FILE, BATCH_FILE)) {
      names.add(n + ".png");
      names.add(n + ".svg");
    }
    return names;
  }

  /**
   * Returns the title's ending of a chart drawn from one seed's run ({@code ": seed 3"}) where the
   * folder is a run over seeds (its configuration echo has {@code seeds}: the time series and the
   * latency quantiles are the first seed's run), else "".
   */
  static String seedOfRun(Map<String, Object> config) {
    return config.get("seeds") instanceof List<?> seeds && !seeds.isEmpty() ? " (seed " + seeds.get(0) + ")" : "";
  }

  /** Returns the number of seeds of a folder run over seeds (its configuration echo's {@code seeds}), 0 for one run. */
  static int seedCount(Map<String, Object> config) {
    return config.get("seeds") instanceof List<?> seeds ? seeds.size() : 0;
  }

  /** Returns a system's time-weighted mean share of {@code category} over the whole run, NaN where absent. */
  static double meanShare(Map<String, Object> system, String category) {
    return meanShare(system, "kv_breakdown", category);
  }

  /** Returns a system's time-weighted mean share of {@code category} in breakdown {@code field} ({@code kv_breakdown_steady}), NaN where absent. */
  static double meanShare(Map<String, Object> system, String field, String category) {
    Object b = system.get(field);
    if (b instanceof Map<?, ?> breakdown && breakdown.get(category) instanceof Map<?, ?> c && c.get("mean") instanceof Number n) {
      return n.doubleValue();
    }
    return Double.NaN;
  }

  /**
   * The KV breakdown per system as stacked bars (the vLLM paper's Fig. 2): two bars per system,
   * the whole run's and the steady window's, of the whole KV memory, idle memory on top (the rest
   * of a bar is the memory in use). A folder without a steady window gets one bar per system, of
   * its own categories ({@link #categoriesOf(ServingResults)}).
   */
  public static JFreeChart breakdownBars(ServingResults r) {
    return breakdownBars(r, null);
  }

  /**
   * The KV breakdown as {@link #breakdownBars(ServingResults)} draws it, {@code subject} (or null)
   * completing the title. In a folder run over seeds each segment carries its share's interval
   * ({@code intervals}' {@code kv_breakdown.CATEGORY.mean}) as an error bar at the segment's top —
   * the bar below it stacked at the medians, the interval added to that base — in the category's
   * colour, the segments' bars side by side ({@link IntervalMarks}).
   */
  public static JFreeChart breakdownBars(ServingResults r, String subject) {
    Categories categories = categoriesOf(r);
    boolean steady = categories == CURRENT && r.entries().stream().allMatch(e -> e.kvBreakdownSteady() != null);
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    for (Map<String, Object> s : r.systems()) {
      for (String field : steady ? List.of("kv_breakdown", "kv_breakdown_steady") : List.of("kv_breakdown")) {
        String bar = !steady ? ServingResults.label(s) : ServingResults.label(s) + (field.equals("kv_breakdown") ? " (whole run)" : " (steady)");
        for (int i = 0; i < categories.size(); i++) {
          double v = meanShare(s, field, categories.names().get(i));
          data.addValue(Double.isNaN(v) ? null : v * 100, categories.labels().get(i), bar);
        }
      }
    }
    StackedBarRenderer renderer = new StackedBarRenderer();
    renderer.setBarPainter(new StandardBarPainter());
    renderer.setShadowVisible(false);
    renderer.setMaximumBarWidth(0.12);
    for (int i = 0; i < categories.size(); i++) {
      renderer.setSeriesPaint(i, categories.colours()[i]);
    }
    NumberAxis share = new NumberAxis("share of KV memory, time-weighted mean (%)");
    share.setRange(0, 100);
    CategoryAxis systems = new CategoryAxis(steady ? "system (window)" : "system");
    if (steady) {
      systems.setMaximumCategoryLabelLines(2); // "orca-oracle (whole run)" under a narrow bar
    }
    CategoryPlot plot = new CategoryPlot(data, systems, share, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    int drawn = 0;
    for (ServingResults.Entry e : r.entries()) {
      for (String field : steady ? List.of("kv_breakdown", "kv_breakdown_steady") : List.of("kv_breakdown")) {
        String bar = !steady ? e.label() : e.label() + (field.equals("kv_breakdown") ? " (whole run)" : " (steady)");
        double base = 0;
        for (int i = 0; i < categories.size(); i++) {
          Number median = data.getValue(categories.labels().get(i), bar);
          kvsim.metrics.Interval in = e.intervals().get(field + "." + categories.names().get(i) + ".mean");
          if (median != null && in != null && in.n() > 1) {
            double offset = (i - (categories.size() - 1) / 2.0) * 6;
            String attribute = IntervalMarks.attribute(bar + ": " + categories.labels().get(i) + " (%)", in.median() * 100, in.low() * 100,
                in.high() * 100, in.n());
            plot.addAnnotation(new IntervalMarks.AtCategory(bar, base + in.low() * 100, base + in.high() * 100, offset, categories.colours()[i],
                attribute), false);
            drawn++;
          }
          base += median == null ? 0 : median.doubleValue();
        }
      }
    }
    String title = (steady ? "KV memory by use (vLLM paper, Fig. 2): whole run and steady state" : "KV memory by use (vLLM paper, Fig. 2)")
        + ChartFiles.subjectLine(subject);
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true);
    if (drawn > 0) {
      chart.addSubtitle(new org.jfree.chart.title.TextTitle(IntervalMarks.caption("Bars at the medians; error bars", seedCount(r.config()))
          + ", each at its segment's top, in the segment's colour", new Font("SansSerif", Font.PLAIN, 12)));
    }
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  /** The latency CDFs: one panel per latency, one line per system. */
  public static JFreeChart latencyCdf(ServingResults r) {
    return latencyCdf(r, null);
  }

  /**
   * The latency CDFs: one panel per latency, one line per system, each system in its colour
   * ({@link Palette}); a panel's latency axis is logarithmic where one system's largest latency
   * exceeds another's more than 20 times (Note [Log when one series dwarfs the others] on {@link
   * ChartAxes}); {@code subject} (or null) completes the title.
   */
  public static JFreeChart latencyCdf(ServingResults r, String subject) {
    NumberAxis fraction = new NumberAxis("fraction of finished requests");
    fraction.setRange(0, 1);
    CombinedRangeXYPlot plot = new CombinedRangeXYPlot(fraction);
    plot.setGap(14);
    List<Palette.Style> styles = Palette.styles(List.copyOf(r.quantiles().keySet()));
    for (int c = 0; c < CDF_COLUMNS.size(); c++) {
      int col = r.quantileColumn(CDF_COLUMNS.get(c));
      int q = r.quantileColumn("quantile");
      XYSeriesCollection data = new XYSeriesCollection();
      XYLineAndShapeRenderer renderer = ChartFiles.lines();
      int i = 0;
      double[] maxima = new double[r.quantiles().size()];
      for (Map.Entry<String, List<double[]>> e : r.quantiles().entrySet()) {
        XYSeries s = new XYSeries(e.getKey(), false, true);
        maxima[i] = Double.NaN;
        for (double[] row : e.getValue()) {
          if (!Double.isNaN(row[col])) {
            s.add(row[col], row[q]);
            maxima[i] = Double.isNaN(maxima[i]) ? row[col] : Math.max(maxima[i], row[col]);
          }
        }
        data.addSeries(s);
        renderer.setSeriesPaint(i, styles.get(i).colour());
        renderer.setSeriesStroke(i, styles.get(i).stroke(1.6f));
        renderer.setSeriesVisibleInLegend(i, c == 0);
        i++;
      }
      boolean log = ChartAxes.wantsLog(maxima);
      org.jfree.chart.axis.ValueAxis x = log ? ChartAxes.log(CDF_LABELS.get(c).replace(")", ", log scale)")) : new NumberAxis(CDF_LABELS.get(c));
      if (log) {
        // A log axis cannot show 0: the quantiles at 0 are drawn at the axis' smallest value instead of not at all.
        clampBelow(data, smallestPositive(data));
      }
      XYPlot p = new XYPlot(data, x, null, renderer);
      style(p);
      plot.add(p, 1);
    }
    String title = "Latency CDFs of finished requests" + seedOfRun(r.config()) + ChartFiles.subjectLine(subject);
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true);
    if (hasLog(plot)) {
      chart.addSubtitle(new org.jfree.chart.title.TextTitle(
          "A latency axis is logarithmic where one system's largest latency is over 20 times another's.", new Font("SansSerif", Font.PLAIN, 12)));
    }
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  private static boolean hasLog(CombinedRangeXYPlot plot) {
    for (Object o : plot.getSubplots()) {
      if (((XYPlot) o).getDomainAxis() instanceof org.jfree.chart.axis.LogAxis) {
        return true;
      }
    }
    return false;
  }

  private static double smallestPositive(XYSeriesCollection data) {
    double min = Double.POSITIVE_INFINITY;
    for (int s = 0; s < data.getSeriesCount(); s++) {
      for (int k = 0; k < data.getItemCount(s); k++) {
        double x = data.getXValue(s, k);
        if (x > 0) {
          min = Math.min(min, x);
        }
      }
    }
    return Double.isInfinite(min) ? 1e-6 : min;
  }

  /** Replaces x values below {@code floor} (zeros) by {@code floor}, so that a log axis draws them. */
  private static void clampBelow(XYSeriesCollection data, double floor) {
    for (int s = 0; s < data.getSeriesCount(); s++) {
      XYSeries series = data.getSeries(s);
      List<double[]> pts = new java.util.ArrayList<>();
      for (int k = 0; k < series.getItemCount(); k++) {
        pts.add(new double[] {Math.max(floor, series.getX(k).doubleValue()), series.getY(k).doubleValue()});
      }
      series.clear();
      pts.forEach(p -> series.add(p[0], p[1]));
    }
  }

  /** The batch size (sequences scheduled per iteration) over simulated time, one line per system. */
  public static JFreeChart batchSize(ServingResults r) {
    return batchSize(r, null);
  }

  /**
   * The batch size over simulated time, one line per system in its colour; the time axis is
   * logarithmic where one system's run lasts over 20 times another's (hf-naive's hours beside
   * seconds), and {@code subject} (or null) completes the title.
   */
  public static JFreeChart batchSize(ServingResults r, String subject) {
    int time = r.seriesColumns().indexOf("t_ns");
    int batch = r.seriesColumns().indexOf("batch_size");
    XYSeriesCollection data = new XYSeriesCollection();
    XYLineAndShapeRenderer renderer = ChartFiles.lines();
    List<Palette.Style> styles = Palette.styles(List.copyOf(r.series().keySet()));
    double[] ends = new double[r.series().size()];
    int i = 0;
    for (Map.Entry<String, List<double[]>> e : r.series().entrySet()) {
      XYSeries s = new XYSeries(e.getKey(), false, true);
      List<double[]> rows = e.getValue();
      ends[i] = rows.isEmpty() ? Double.NaN : rows.get(rows.size() - 1)[time] / 1e9;
      int step = Math.max(1, (rows.size() + MAX_POINTS - 1) / MAX_POINTS);
      for (int k = 0; k < rows.size(); k++) {
        if (k % step == 0 || k == rows.size() - 1) {
          s.add(rows.get(k)[time] / 1e9, rows.get(k)[batch]);
        }
      }
      data.addSeries(s);
      renderer.setSeriesPaint(i, styles.get(i).colour());
      renderer.setSeriesStroke(i, styles.get(i).stroke(1.2f));
      i++;
    }
    // Note [Runs on one time axis] on ChartAxes.
    org.jfree.chart.axis.ValueAxis time2 = ChartAxes.wantsLog(ends, ChartAxes.PANEL_LOG_RATIO) ? ChartAxes.log("simulated time (s)" + ChartAxes.PANEL_LOG_NOTE)
        : ChartAxes.toData("simulated time (s)");
    if (time2 instanceof org.jfree.chart.axis.LogAxis) {
      clampBelow(data, smallestPositive(data));
    }
    XYPlot plot = new XYPlot(data, time2, new NumberAxis("batch size (sequences per iteration)"), renderer);
    style(plot);
    String title = "Batch size over time (sampled iterations)" + seedOfRun(r.config()) + ChartFiles.subjectLine(subject);
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  private static void style(XYPlot p) {
    p.setBackgroundPaint(Color.WHITE);
    p.setDomainGridlinePaint(new Color(0xdddddd));
    p.setRangeGridlinePaint(new Color(0xdddddd));
  }
}

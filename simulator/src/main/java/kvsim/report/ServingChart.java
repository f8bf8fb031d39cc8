package kvsim.report;

import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.StackedXYAreaRenderer2;
import org.jfree.data.xy.DefaultTableXYDataset;
import org.jfree.data.xy.XYSeries;

/**
 * The KV memory chart of a serving run: for each system, its KV region over simulated time as the
 * vLLM paper's four shares (token states, reserved for future tokens, internal fragmentation,
 * external fragmentation) and idle memory, stacked to 1, with the steady window's bounds marked
 * (Note [Breakdown windows] in {@code serving.ServingMetrics}). Drawn from the sampled time series
 * and the summary's windows, PNG and SVG; the same files give byte-identical charts. A folder
 * written before idle memory was told apart is drawn with its own four shares and no window.
 */
public final class ServingChart {
  private static final int WIDTH = 1200;
  private static final int ROW_HEIGHT = 220;
  /** Points drawn per system: enough for the shape at this width, and an SVG of a few hundred KiB. */
  private static final int MAX_POINTS = 250;

  /** The PNG chart's file name. */
  public static final String PNG_FILE = "kv-breakdown.png";
  /** The SVG chart's file name. */
  public static final String SVG_FILE = "kv-breakdown.svg";

  private ServingChart() {}

  /** Writes the chart of the serving folder read back as {@code r} into {@code dir}. */
  public static void write(Path dir, ServingResults r) throws IOException {
    ChartJobs jobs = new ChartJobs(dir);
    add(jobs, r);
    jobs.await();
  }

  /** Starts drawing the chart files among {@code jobs} (Note [Charts off the critical path] on {@link ChartJobs}). */
  static void add(ChartJobs jobs, ServingResults r) {
    String subject = Headline.subject(r.config());
    jobs.add(NAME, () -> build(r, subject), WIDTH, 120 + ROW_HEIGHT * Math.max(1, r.series().size()));
  }

  /** The chart files' name without extension. */
  static final String NAME = "kv-breakdown";

  /** Builds the chart of {@code r}: its time series, each system's steady window marked where the summary has one. */
  public static JFreeChart build(ServingResults r) {
    return build(r, null);
  }

  /**
   * Builds the chart of {@code r} as {@link #build(ServingResults)} does, {@code subject} (or null)
   * completing the title; a folder run over seeds draws its first seed's run and says so.
   */
  public static JFreeChart build(ServingResults r, String subject) {
    Map<String, double[]> windows = new java.util.LinkedHashMap<>();
    for (ServingResults.Entry e : r.entries()) {
      ServingResults.Breakdown steady = e.kvBreakdownSteady();
      if (steady != null && steady.window() != null && steady.window().fromSeconds() != null) {
        windows.put(e.label(), new double[] {steady.window().fromSeconds(), steady.window().toSeconds()});
      }
    }
    JFreeChart chart = build(r.seriesColumns(), r.series(), windows);
    chart.setTitle(chart.getTitle().getText() + ServingCharts.seedOfRun(r.config()) + ChartFiles.subjectLine(subject));
    return chart;
  }

  /**
   * Builds the chart.
   *
   * @param columns the time series' column names (with {@code t_ns} and the categories)
   * @param series per system, in order, its sampled rows
   * @param windows per system, the steady window's bounds in seconds to mark (none where absent)
   */
  public static JFreeChart build(List<String> columns, Map<String, List<double[]>> series, Map<String, double[]> windows) {
    ServingCharts.Categories categories = ServingCharts.categoriesOf(columns);
    int time = columns.indexOf("t_ns");
    double[] ends = new double[series.size()];
    int n = 0;
    for (List<double[]> rows : series.values()) {
      ends[n++] = rows.isEmpty() ? Double.NaN : rows.get(rows.size() - 1)[time] / 1e9;
    }
    // Note [Runs on one time axis] on ChartAxes: one run many times longer than another.
    boolean log = ChartAxes.wantsLog(ends, ChartAxes.PANEL_LOG_RATIO);
    double floor = Double.POSITIVE_INFINITY;
    double shortest = Double.POSITIVE_INFINITY;
    for (List<double[]> rows : series.values()) {
      for (double[] row : rows) {
        if (row[time] > 0) {
          floor = Math.min(floor, row[time] / 1e9);
        }
      }
    }
    for (double end : ends) {
      if (end > 0) {
        shortest = Math.min(shortest, end);
      }
    }
    // On a log axis the first instants would take as much width as whole minutes: the axis starts at a
    // hundredth of the shortest run, earlier samples drawn there, so that each run spans at least two decades.
    if (log && shortest < Double.POSITIVE_INFINITY) {
      floor = Math.max(floor, shortest / 100);
    }
    org.jfree.chart.axis.ValueAxis seconds = log ? ChartAxes.log("simulated time (s)" + ChartAxes.PANEL_LOG_NOTE) : ChartAxes.toData("simulated time (s)");
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(seconds);
    plot.setGap(10);
    for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
      DefaultTableXYDataset data = new DefaultTableXYDataset();
      List<double[]> rows = e.getValue();
      int step = Math.max(1, (rows.size() + MAX_POINTS - 1) / MAX_POINTS);
      for (int c = 0; c < categories.size(); c++) {
        int col = columns.indexOf(categories.names().get(c));
        XYSeries s = new XYSeries(categories.labels().get(c), false, false);
        double lastX = Double.NaN;
        for (int k = 0; k < rows.size(); k++) {
          if (k % step != 0 && k != rows.size() - 1) {
            continue;
          }
          double x = log ? Math.max(floor, rows.get(k)[time] / 1e9) : rows.get(k)[time] / 1e9;
          if (x == lastX) {
            continue; // one point per instant: a table dataset needs distinct x values
          }
          s.add(x, rows.get(k)[col]);
          lastX = x;
        }
        data.addSeries(s);
      }
      StackedXYAreaRenderer2 renderer = new StackedXYAreaRenderer2();
      for (int i = 0; i < categories.size(); i++) {
        renderer.setSeriesPaint(i, categories.colours()[i]);
      }
      // One legend entry per category, not one per system and category.
      renderer.setDefaultSeriesVisibleInLegend(plot.getSubplots().isEmpty());
      NumberAxis share = new NumberAxis(e.getKey());
      share.setRange(0.0, 1.0);
      XYPlot sub = new XYPlot(data, null, share, renderer);
      sub.setBackgroundPaint(Color.WHITE);
      sub.setDomainGridlinePaint(new Color(0xdddddd));
      sub.setRangeGridlinePaint(new Color(0xdddddd));
      double[] window = windows.get(e.getKey());
      if (window != null) {
        sub.addDomainMarker(marker(window[0], "steady state from"), org.jfree.chart.ui.Layer.FOREGROUND);
        sub.addDomainMarker(marker(window[1], "to"), org.jfree.chart.ui.Layer.FOREGROUND);
      }
      plot.add(sub, 1);
    }
    JFreeChart chart = new JFreeChart("KV memory by use over time (share of the KV region)", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  /** A dashed vertical line at {@code seconds}, labelled at its top. */
  private static org.jfree.chart.plot.ValueMarker marker(double seconds, String label) {
    org.jfree.chart.plot.ValueMarker m = new org.jfree.chart.plot.ValueMarker(seconds, Color.BLACK,
        new java.awt.BasicStroke(1.2f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
    m.setLabel(label);
    m.setLabelFont(new Font("SansSerif", Font.PLAIN, 11));
    m.setLabelAnchor(org.jfree.chart.ui.RectangleAnchor.TOP_RIGHT);
    m.setLabelTextAnchor(org.jfree.chart.ui.TextAnchor.TOP_LEFT);
    return m;
  }
}

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
  /** The KV breakdown's uses, in the order of the vLLM paper's Fig. 2, with their labels. */
  static final List<String> CATEGORIES = List.of("token_states", "reserved_future", "internal_waste", "external_waste");
  static final List<String> CATEGORY_LABELS = List.of("token states", "reserved (future tokens)", "internal fragmentation", "external fragmentation");
  /** The latency columns drawn as CDFs, with their axis labels. */
  static final List<String> CDF_COLUMNS = List.of("ttft_seconds", "tpot_seconds", "normalized_latency_seconds_per_token");
  static final List<String> CDF_LABELS = List.of("TTFT (s)", "TPOT (s)", "normalized latency (s/token)");
  private static final Color[] CATEGORY_COLOURS = {new Color(0x2ca02c), new Color(0x1f77b4), new Color(0xff7f0e), new Color(0xc7c7c7)};
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
    ServingChart.write(dir, r.seriesColumns(), r.series());
    write(dir, r);
  }

  /** Writes the three charts of a serving folder, read back from its files, into {@code dir}. */
  public static void write(Path dir, ServingResults r) throws IOException {
    ChartFiles.write(dir, breakdownBars(r), BARS_FILE + ".png", BARS_FILE + ".svg", WIDTH, BARS_HEIGHT);
    if (!r.quantiles().isEmpty()) {
      ChartFiles.write(dir, latencyCdf(r), CDF_FILE + ".png", CDF_FILE + ".svg", WIDTH, CDF_HEIGHT);
    }
    ChartFiles.write(dir, batchSize(r), BATCH_FILE + ".png", BATCH_FILE + ".svg", WIDTH, BATCH_HEIGHT);
  }

  /** Returns a system's time-weighted mean share of {@code category}, NaN where absent. */
  @SuppressWarnings("unchecked")
  static double meanShare(Map<String, Object> system, String category) {
    Object b = system.get("kv_breakdown");
    if (b instanceof Map<?, ?> breakdown && breakdown.get(category) instanceof Map<?, ?> c && c.get("mean") instanceof Number n) {
      return n.doubleValue();
    }
    return Double.NaN;
  }

  /** The KV breakdown per system as stacked bars (the vLLM paper's Fig. 2). */
  public static JFreeChart breakdownBars(ServingResults r) {
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    for (Map<String, Object> s : r.systems()) {
      for (int i = 0; i < CATEGORIES.size(); i++) {
        double v = meanShare(s, CATEGORIES.get(i));
        data.addValue(Double.isNaN(v) ? null : v * 100, CATEGORY_LABELS.get(i), ServingResults.label(s));
      }
    }
    StackedBarRenderer renderer = new StackedBarRenderer();
    renderer.setBarPainter(new StandardBarPainter());
    renderer.setShadowVisible(false);
    renderer.setMaximumBarWidth(0.12);
    for (int i = 0; i < CATEGORY_COLOURS.length; i++) {
      renderer.setSeriesPaint(i, CATEGORY_COLOURS[i]);
    }
    NumberAxis share = new NumberAxis("share of KV memory, time-weighted mean (%)");
    share.setRange(0, 100);
    CategoryPlot plot = new CategoryPlot(data, new CategoryAxis("system"), share, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    JFreeChart chart = new JFreeChart("KV memory by use (vLLM paper, Fig. 2)", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  /** The latency CDFs: one panel per latency, one line per system. */
  public static JFreeChart latencyCdf(ServingResults r) {
    NumberAxis fraction = new NumberAxis("fraction of finished requests");
    fraction.setRange(0, 1);
    CombinedRangeXYPlot plot = new CombinedRangeXYPlot(fraction);
    plot.setGap(14);
    for (int c = 0; c < CDF_COLUMNS.size(); c++) {
      int col = r.quantileColumn(CDF_COLUMNS.get(c));
      int q = r.quantileColumn("quantile");
      XYSeriesCollection data = new XYSeriesCollection();
      XYLineAndShapeRenderer renderer = ChartFiles.lines();
      int i = 0;
      for (Map.Entry<String, List<double[]>> e : r.quantiles().entrySet()) {
        XYSeries s = new XYSeries(e.getKey(), false, true);
        for (double[] row : e.getValue()) {
          if (!Double.isNaN(row[col])) {
            s.add(row[col], row[q]);
          }
        }
        data.addSeries(s);
        renderer.setSeriesPaint(i, FragmentationChart.colour(i));
        renderer.setSeriesStroke(i, new BasicStroke(1.6f));
        renderer.setSeriesVisibleInLegend(i, c == 0);
        i++;
      }
      NumberAxis x = new NumberAxis(CDF_LABELS.get(c));
      XYPlot p = new XYPlot(data, x, null, renderer);
      style(p);
      plot.add(p, 1);
    }
    JFreeChart chart = new JFreeChart("Latency CDFs of finished requests", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  /** The batch size (sequences scheduled per iteration) over simulated time, one line per system. */
  public static JFreeChart batchSize(ServingResults r) {
    int time = r.seriesColumns().indexOf("t_ns");
    int batch = r.seriesColumns().indexOf("batch_size");
    XYSeriesCollection data = new XYSeriesCollection();
    XYLineAndShapeRenderer renderer = ChartFiles.lines();
    int i = 0;
    for (Map.Entry<String, List<double[]>> e : r.series().entrySet()) {
      XYSeries s = new XYSeries(e.getKey(), false, true);
      List<double[]> rows = e.getValue();
      int step = Math.max(1, (rows.size() + MAX_POINTS - 1) / MAX_POINTS);
      for (int k = 0; k < rows.size(); k++) {
        if (k % step == 0 || k == rows.size() - 1) {
          s.add(rows.get(k)[time] / 1e9, rows.get(k)[batch]);
        }
      }
      data.addSeries(s);
      renderer.setSeriesPaint(i, FragmentationChart.colour(i));
      renderer.setSeriesStroke(i, new BasicStroke(1.2f));
      i++;
    }
    XYPlot plot = new XYPlot(data, new NumberAxis("simulated time (s)"), new NumberAxis("batch size (sequences per iteration)"), renderer);
    style(plot);
    JFreeChart chart = new JFreeChart("Batch size over time (sampled iterations)", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  private static void style(XYPlot p) {
    p.setBackgroundPaint(Color.WHITE);
    p.setDomainGridlinePaint(new Color(0xdddddd));
    p.setRangeGridlinePaint(new Color(0xdddddd));
  }
}

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
 * vLLM paper's four shares (token states, reserved for future tokens, internal waste, external
 * waste), stacked to 1. Drawn from the sampled time series, PNG and SVG; the same series give
 * byte-identical files.
 */
public final class ServingChart {
  private static final int WIDTH = 1200;
  private static final int ROW_HEIGHT = 220;
  /** Points drawn per system: enough for the shape at this width, and an SVG of a few hundred KiB. */
  private static final int MAX_POINTS = 250;
  private static final String[] CATEGORIES = {"token_states", "reserved_future", "internal_waste", "external_waste"};
  private static final Color[] COLOURS = {new Color(0x2ca02c), new Color(0x1f77b4), new Color(0xff7f0e), new Color(0xc7c7c7)};

  /** The PNG chart's file name. */
  public static final String PNG_FILE = "kv-breakdown.png";
  /** The SVG chart's file name. */
  public static final String SVG_FILE = "kv-breakdown.svg";

  private ServingChart() {}

  /**
   * Writes the chart into {@code dir}.
   *
   * @param columns the time series' column names (with {@code t_ns} and the four categories)
   * @param series per system, in order, its sampled rows
   */
  public static void write(Path dir, List<String> columns, Map<String, List<double[]>> series) throws IOException {
    ChartFiles.write(dir, build(columns, series), PNG_FILE, SVG_FILE, WIDTH, 120 + ROW_HEIGHT * Math.max(1, series.size()));
  }

  /** Builds the chart. */
  public static JFreeChart build(List<String> columns, Map<String, List<double[]>> series) {
    int time = columns.indexOf("t_ns");
    NumberAxis seconds = new NumberAxis("simulated time (s)");
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(seconds);
    plot.setGap(10);
    for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
      DefaultTableXYDataset data = new DefaultTableXYDataset();
      List<double[]> rows = e.getValue();
      int step = Math.max(1, (rows.size() + MAX_POINTS - 1) / MAX_POINTS);
      for (String category : CATEGORIES) {
        int col = columns.indexOf(category);
        XYSeries s = new XYSeries(category.replace('_', ' '), false, false);
        double lastX = Double.NaN;
        for (int k = 0; k < rows.size(); k++) {
          if (k % step != 0 && k != rows.size() - 1) {
            continue;
          }
          double x = rows.get(k)[time] / 1e9;
          if (x == lastX) {
            continue; // one point per instant: a table dataset needs distinct x values
          }
          s.add(x, rows.get(k)[col]);
          lastX = x;
        }
        data.addSeries(s);
      }
      StackedXYAreaRenderer2 renderer = new StackedXYAreaRenderer2();
      for (int i = 0; i < COLOURS.length; i++) {
        renderer.setSeriesPaint(i, COLOURS[i]);
      }
      // One legend entry per category, not one per system and category.
      renderer.setDefaultSeriesVisibleInLegend(plot.getSubplots().isEmpty());
      NumberAxis share = new NumberAxis(e.getKey());
      share.setRange(0.0, 1.0);
      XYPlot sub = new XYPlot(data, null, share, renderer);
      sub.setBackgroundPaint(Color.WHITE);
      sub.setDomainGridlinePaint(new Color(0xdddddd));
      sub.setRangeGridlinePaint(new Color(0xdddddd));
      plot.add(sub, 1);
    }
    JFreeChart chart = new JFreeChart("KV memory by use over time (share of the KV region)", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }
}

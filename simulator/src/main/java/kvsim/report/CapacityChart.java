package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogarithmicAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The capacity chart (the vLLM paper's Fig. 12 view): a latency target's metric against the request
 * rate, one line per system through its probes, and the target as a dashed line. Each system's
 * legend entry carries its answer, the goodput there and the share of its requests not finished,
 * as the caller words it: the latencies are over finished requests only, so the chart alone would
 * hide rejections (Note [Rejections fail the target] on {@code run.CapacitySearch}). PNG and SVG;
 * the same probes give byte-identical files.
 */
public final class CapacityChart {
  private static final int WIDTH = 1000;
  private static final int HEIGHT = 620;
  private static final Color[] PALETTE = {
    new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0xff7f0e),
    new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f)
  };

  /** The PNG chart's file name. */
  public static final String PNG_FILE = "capacity.png";
  /** The SVG chart's file name. */
  public static final String SVG_FILE = "capacity.svg";

  private CapacityChart() {}

  /**
   * Writes the chart into {@code dir}.
   *
   * @param target the target as written, e.g. {@code normalized_latency.mean<=0.2s}
   * @param limitSeconds the target's limit
   * @param points per system (keyed by its legend entry: name, answer, goodput, share not finished),
   *     its probes as (rate, measured seconds) pairs, in any order
   */
  public static void write(Path dir, String target, double limitSeconds, Map<String, List<double[]>> points) throws IOException {
    XYSeriesCollection data = new XYSeriesCollection();
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
    int i = 0;
    for (Map.Entry<String, List<double[]>> e : points.entrySet()) {
      XYSeries s = new XYSeries(e.getKey(), true, false);
      for (double[] p : e.getValue()) {
        if (!Double.isNaN(p[1])) {
          s.add(p[0], p[1]);
        }
      }
      data.addSeries(s);
      renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
      renderer.setSeriesStroke(i, new BasicStroke(1.6f));
      i++;
    }
    NumberAxis rate = new NumberAxis("request rate (requests/s)");
    LogarithmicAxis latency = new LogarithmicAxis(target.replaceAll("<=.*", "") + " (s, log scale)");
    latency.setAllowNegativesFlag(false);
    XYPlot plot = new XYPlot(data, rate, latency, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(new Color(0xdddddd));
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    ValueMarker limit = new ValueMarker(limitSeconds, Color.BLACK,
        new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
    limit.setLabel("target " + target);
    limit.setLabelFont(new Font("SansSerif", Font.PLAIN, 12));
    limit.setLabelAnchor(RectangleAnchor.TOP_RIGHT);
    limit.setLabelTextAnchor(TextAnchor.BOTTOM_RIGHT);
    plot.addRangeMarker(limit);
    JFreeChart chart = new JFreeChart("Latency against load", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    ChartFiles.write(dir, chart, PNG_FILE, SVG_FILE, WIDTH, HEIGHT);
  }
}

package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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
 * the same probes give byte-identical files, and the chart is drawn from {@code summary.json} read
 * back, so {@link #redraw} and {@code kvsim report} draw it again from the folder alone.
 */
public final class CapacityChart {
  static final int WIDTH = 1000;
  static final int HEIGHT = 620;
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
   * Writes the chart of a capacity search into {@code dir}: its first latency target against the
   * rate, one line per system (legend: {@link CapacityResults.SystemEntry#legend}) through its
   * probes where that target's value is defined.
   */
  public static void write(Path dir, CapacityResults r) throws IOException {
    ChartFiles.write(dir, build(r), PNG_FILE, SVG_FILE, WIDTH, HEIGHT);
  }

  /** Draws the chart again from the capacity folder {@code dir}'s {@code summary.json} alone. */
  public static void redraw(Path dir) throws IOException {
    write(dir, CapacityResultsReader.read(dir));
  }

  /** Builds the chart of a capacity search. */
  public static JFreeChart build(CapacityResults r) {
    if (r.latencyTargets().isEmpty()) {
      return attainment(r);
    }
    String target = r.latencyTargets().get(0);
    Map<String, List<double[]>> points = new LinkedHashMap<>();
    for (CapacityResults.SystemEntry e : r.systems()) {
      List<double[]> pts = new ArrayList<>();
      for (CapacityResults.Probe p : e.probes()) {
        Double v = p.valuesSeconds().get(target);
        pts.add(new double[] {p.rateRps(), v == null ? Double.NaN : v});
      }
      points.put(e.legend(), pts);
    }
    return build(target, CapacityResults.limitSeconds(target), points);
  }

  /**
   * The chart of a search on per-request targets alone: each probe's attainment (the share of
   * requests that finished and met every per-request target) against the rate, the attainment
   * required dashed.
   */
  private static JFreeChart attainment(CapacityResults r) {
    Map<String, List<double[]>> points = new LinkedHashMap<>();
    for (CapacityResults.SystemEntry e : r.systems()) {
      List<double[]> pts = new ArrayList<>();
      for (CapacityResults.Probe p : e.probes()) {
        pts.add(new double[] {p.rateRps(), p.attainment() == null ? Double.NaN : p.attainment()});
      }
      points.put(e.legend(), pts);
    }
    List<String> perRequest = r.targets().stream().filter(t -> !CapacityResults.isRejectionTarget(t) && !t.strip().startsWith("attainment")).toList();
    String required = r.targets().stream().filter(t -> t.strip().startsWith("attainment")).findFirst().orElse("attainment>=1 (the default)");
    JFreeChart chart = build(required, r.attainmentRequired(), points);
    XYPlot plot = chart.getXYPlot();
    NumberAxis share = new NumberAxis("SLO attainment: share of requests meeting " + String.join(" and ", perRequest));
    share.setRange(0, 1.02);
    plot.setRangeAxis(share);
    chart.setTitle("SLO attainment against load");
    chart.getTitle().setFont(new Font("SansSerif", Font.BOLD, 16));
    return chart;
  }

  private static JFreeChart build(String target, double limitSeconds, Map<String, List<double[]>> points) {
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
    return chart;
  }
}

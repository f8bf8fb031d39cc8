package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import kvsim.core.Bytes;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.RunMetrics;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The fragmentation chart of a run: external fragmentation over events (top) and allocated (solid)
 * and reserved (dashed) GiB over events (bottom), one colour per allocator. Written as PNG and SVG
 * from the sampled time series alone, so it can be drawn again from a result folder ({@link
 * #redraw}); the same series give byte-identical files.
 */
public final class FragmentationChart {
  private static final int WIDTH = 1200;
  private static final int HEIGHT = 800;
  /** Most points drawn per series; more add nothing visible at this width and bloat the SVG. */
  private static final int MAX_POINTS = 600;
  private static final Color[] PALETTE = {
    new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0xff7f0e),
    new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f)
  };

  /** The PNG chart's file name. */
  public static final String PNG_FILE = "fragmentation.png";
  /** The SVG chart's file name. */
  public static final String SVG_FILE = "fragmentation.svg";

  private FragmentationChart() {}

  /** Returns the colour of the {@code i}-th series (allocator or system) in kvsim's charts. */
  static Color colour(int i) {
    return PALETTE[i % PALETTE.length];
  }

  /** Writes {@code fragmentation.png} and {@code fragmentation.svg} into {@code dir}. */
  public static void write(Path dir, List<AllocatorResult> results) throws IOException {
    ChartFiles.write(dir, build(results), PNG_FILE, SVG_FILE, WIDTH, HEIGHT);
  }

  /**
   * Draws {@code fragmentation.png} and {@code .svg} of an existing run's result folder again from
   * its files ({@link ResultsReader#read}), replacing those two files only.
   */
  public static void redraw(Path resultFolder) throws IOException {
    write(resultFolder, ResultsReader.read(resultFolder).results());
  }

  /** Builds the chart. */
  public static JFreeChart build(List<AllocatorResult> results) {
    int extCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("external_fragmentation");
    int allocCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("allocated_bytes");
    int resCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("reserved_bytes");

    XYSeriesCollection ext = new XYSeriesCollection();
    XYSeriesCollection bytes = new XYSeriesCollection();
    XYLineAndShapeRenderer extRenderer = ChartFiles.lines();
    XYLineAndShapeRenderer bytesRenderer = ChartFiles.lines();
    BasicStroke solid = new BasicStroke(1.6f);
    BasicStroke dashed = new BasicStroke(1.4f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f);
    for (int i = 0; i < results.size(); i++) {
      AllocatorResult r = results.get(i);
      Color c = PALETTE[i % PALETTE.length];
      XYSeries e = new XYSeries(r.allocator(), false, true);
      XYSeries a = new XYSeries(r.allocator() + " allocated", false, true);
      XYSeries res = new XYSeries(r.allocator() + " reserved", false, true);
      List<double[]> rows = r.samples();
      int step = Math.max(1, (rows.size() + MAX_POINTS - 1) / MAX_POINTS);
      for (int k = 0; k < rows.size(); k++) {
        if (k % step != 0 && k != rows.size() - 1) {
          continue;
        }
        double[] row = rows.get(k);
        // An undefined ratio (nothing free) leaves a gap in the line.
        e.add(row[0], Double.isNaN(row[extCol]) ? null : row[extCol]);
        a.add(row[0], row[allocCol] / Bytes.GiB);
        res.add(row[0], row[resCol] / Bytes.GiB);
      }
      ext.addSeries(e);
      extRenderer.setSeriesPaint(i, c);
      extRenderer.setSeriesStroke(i, solid);
      bytes.addSeries(a);
      bytes.addSeries(res);
      bytesRenderer.setSeriesPaint(2 * i, c);
      bytesRenderer.setSeriesStroke(2 * i, solid);
      bytesRenderer.setSeriesPaint(2 * i + 1, c);
      bytesRenderer.setSeriesStroke(2 * i + 1, dashed);
      // One legend entry per allocator (its colour); the axis label says which line is which.
      bytesRenderer.setSeriesVisibleInLegend(2 * i, false);
      bytesRenderer.setSeriesVisibleInLegend(2 * i + 1, false);
    }
    NumberAxis fragAxis = new NumberAxis("external fragmentation");
    fragAxis.setRange(0.0, 1.0);
    XYPlot top = new XYPlot(ext, null, fragAxis, extRenderer);
    XYPlot bottom = new XYPlot(bytes, null, new NumberAxis("GiB (allocated solid, reserved dashed)"), bytesRenderer);
    for (XYPlot p : List.of(top, bottom)) {
      p.setBackgroundPaint(Color.WHITE);
      p.setDomainGridlinePaint(new Color(0xdddddd));
      p.setRangeGridlinePaint(new Color(0xdddddd));
    }
    NumberAxis events = new NumberAxis("event");
    events.setAutoRangeIncludesZero(false);
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(events);
    plot.setGap(12);
    plot.add(top, 1);
    plot.add(bottom, 1);
    JFreeChart chart = new JFreeChart("Fragmentation and memory over the run", new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }
}

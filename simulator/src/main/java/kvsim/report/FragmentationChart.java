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

  /** The PNG chart's file name. */
  public static final String PNG_FILE = "fragmentation.png";
  /** The SVG chart's file name. */
  public static final String SVG_FILE = "fragmentation.svg";

  private FragmentationChart() {}

  /** Writes {@code fragmentation.png} and {@code fragmentation.svg} into {@code dir}. */
  public static void write(Path dir, List<AllocatorResult> results) throws IOException {
    write(dir, results, null);
  }

  /** Writes the chart files into {@code dir}, {@code subject} (the workload, model and device, or null) completing the title. */
  public static void write(Path dir, List<AllocatorResult> results, String subject) throws IOException {
    ChartJobs jobs = new ChartJobs(dir);
    add(jobs, results, subject);
    jobs.await();
  }

  /** Starts drawing the chart files among {@code jobs} (Note [Charts off the critical path] on {@link ChartJobs}). */
  static void add(ChartJobs jobs, List<AllocatorResult> results, String subject) {
    jobs.add(NAME, () -> build(results, subject), WIDTH, HEIGHT);
  }

  /** The chart files' name without extension. */
  static final String NAME = "fragmentation";

  /**
   * Draws {@code fragmentation.png} and {@code .svg} of an existing run's result folder again from
   * its files ({@link ResultsReader#read}), replacing those two files only.
   */
  public static void redraw(Path resultFolder) throws IOException {
    RunResults r = ResultsReader.read(resultFolder);
    write(resultFolder, r.results(), Headline.subject(r.config()));
  }

  /** Builds the chart, titled by what the run replayed. */
  public static JFreeChart build(List<AllocatorResult> results) {
    return build(results, null);
  }

  /**
   * Builds the chart; {@code subject} (the workload, model and device, or null) completes its title.
   * An allocator whose external fragmentation is 0 at every sample is named "(0 throughout)" in the
   * legend, since its line lies under the others' on the axis.
   */
  public static JFreeChart build(List<AllocatorResult> results, String subject) {
    int extCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("external_fragmentation");
    int allocCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("allocated_bytes");
    int resCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("reserved_bytes");

    XYSeriesCollection ext = new XYSeriesCollection();
    XYSeriesCollection bytes = new XYSeriesCollection();
    XYLineAndShapeRenderer extRenderer = ChartFiles.lines();
    XYLineAndShapeRenderer bytesRenderer = ChartFiles.lines();
    BasicStroke dashed = new BasicStroke(1.4f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f);
    List<Palette.Style> styles = Palette.styles(results.stream().map(AllocatorResult::allocator).toList());
    for (int i = 0; i < results.size(); i++) {
      AllocatorResult r = results.get(i);
      Color c = styles.get(i).colour();
      BasicStroke solid = (BasicStroke) styles.get(i).stroke(1.6f);
      boolean zero = r.samples().stream().allMatch(row -> Double.isNaN(row[extCol]) || row[extCol] == 0);
      XYSeries e = new XYSeries(zero ? r.allocator() + " (0 throughout)" : r.allocator(), false, true);
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
      bytesRenderer.setSeriesStroke(2 * i + 1, styles.get(i).dash() == 0 ? dashed : solid);
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
    // Drawn first to last, so that the first allocators' lines are not hidden under later ones.
    top.setSeriesRenderingOrder(org.jfree.chart.plot.SeriesRenderingOrder.FORWARD);
    NumberAxis events = ChartAxes.toData("event");
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(events);
    plot.setGap(12);
    plot.add(top, 1);
    plot.add(bottom, 1);
    String title = "External fragmentation and memory over the run" + ChartFiles.subjectLine(subject);
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }
}

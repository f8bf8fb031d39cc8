package kvsim.report;

import java.awt.image.BufferedImage;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * Loads and initialises what drawing charts needs (Java2D, fonts, JFreeChart, the SVG and PNG
 * writers) on a background thread while a run's engine works, by drawing one small chart that
 * nobody sees: the first real chart then starts warm (Note [Charts off the critical path] on
 * {@link ChartJobs}). It writes nothing and changes nothing that a chart's bytes depend on.
 */
public final class ChartWarmUp {
  private ChartWarmUp() {}

  /** Starts the warm-up on a daemon thread, at a low priority, and returns at once. */
  public static void start() {
    Thread t = new Thread(ChartWarmUp::draw, "kvsim-chart-warm-up");
    t.setDaemon(true);
    t.setPriority(Thread.MIN_PRIORITY);
    t.start();
  }

  /** Draws a small line chart as PNG and SVG, and discards both. */
  static void draw() {
    try {
      XYSeries s = new XYSeries("warm-up");
      s.add(0, 0);
      s.add(1, 1);
      XYPlot plot = new XYPlot(new XYSeriesCollection(s), new NumberAxis("x"), new NumberAxis("y"), ChartFiles.lines());
      JFreeChart chart = new JFreeChart("warm-up", JFreeChart.DEFAULT_TITLE_FONT, plot, true);
      BufferedImage image = chart.createBufferedImage(160, 120);
      PngEncoder.encode(image);
      ChartFiles.drawSvg(chart, 160, 120).inline("w", "warm-up");
    } catch (RuntimeException | LinkageError e) {
      // only a head start: the real charts report any failure of their own
    }
  }
}

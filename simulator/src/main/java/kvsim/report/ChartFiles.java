package kvsim.report;

import java.awt.Rectangle;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import kvsim.core.AtomicFiles;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.svg.SVGGraphics2D;

/** Writes a chart as a PNG and an SVG, each atomically; the same chart gives byte-identical files. */
final class ChartFiles {
  private ChartFiles() {}

  /** Writes {@code chart} as {@code dir/png} and {@code dir/svg}, {@code width} × {@code height} pixels. */
  static void write(Path dir, JFreeChart chart, String png, String svg, int width, int height) throws IOException {
    AtomicFiles.write(dir.resolve(png), out -> ChartUtils.writeChartAsPNG(out, chart, width, height));
    SVGGraphics2D g = new SVGGraphics2D(width, height);
    // The default prefix of clip-path ids is taken from the clock; a fixed one keeps the SVG deterministic.
    g.setDefsKeyPrefix("kvsim-");
    chart.draw(g, new Rectangle(0, 0, width, height));
    byte[] bytes = g.getSVGDocument().getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(svg), out -> out.write(bytes));
  }
}

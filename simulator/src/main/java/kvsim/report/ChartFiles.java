package kvsim.report;

import java.awt.Rectangle;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import kvsim.core.AtomicFiles;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.svg.SVGGraphics2D;
import org.jfree.svg.ViewBox;

/** Writes a chart as a PNG and an SVG, each atomically; the same chart gives byte-identical files. */
final class ChartFiles {
  private ChartFiles() {}

  /**
   * Returns the end of a chart's title that names its subject (the workload, model and device,
   * {@link Headline#subject}): a second line of the title, so that a long workload breaks between
   * the title and it rather than inside a name; "" where {@code subject} is null.
   */
  static String subjectLine(String subject) {
    return subject == null ? "" : "\n" + subject;
  }

  /** Writes {@code chart} as {@code dir/png} and {@code dir/svg}, {@code width} × {@code height} pixels. */
  static void write(Path dir, JFreeChart chart, String png, String svg, int width, int height) throws IOException {
    writePng(dir.resolve(png), chart, width, height);
    byte[] bytes = drawSvg(chart, width, height).document().getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(svg), out -> out.write(bytes));
  }

  /** Writes {@code chart} as the PNG file {@code file}, {@code width} × {@code height} pixels (Note [Chart PNGs] on {@link PngEncoder}). */
  static void writePng(Path file, JFreeChart chart, int width, int height) throws IOException {
    byte[] bytes = PngEncoder.encode(chart.createBufferedImage(width, height));
    AtomicFiles.write(file, out -> out.write(bytes));
  }

  /** Returns the text of the SVG file that {@link #write} writes for {@code chart}. */
  static String svgDocument(JFreeChart chart, int width, int height) {
    return drawSvg(chart, width, height).document();
  }

  /**
   * The defs key prefix a chart is drawn with before its file or report names its ids: {@code <}
   * never appears unescaped in SVG text, so every occurrence is one of the ids' (Note [One drawing,
   * two SVGs]).
   */
  private static final String ID_PLACEHOLDER = "<kvsim-ids>";
  /** The element's own id before a report names it: replaced in the opening tag only. */
  private static final String ELEMENT_ID_PLACEHOLDER = "kvsim-element-id";

  /**
   * Draws {@code chart} once as SVG, {@code width} × {@code height} pixels, for both its file and a
   * report's inline copy.
   *
   * <p>Note [One drawing, two SVGs]: a chart's SVG file and the {@code <svg>} element a report
   * inlines differ only in the prefix of their clip-path ids ({@code kvsim-} in the file, the
   * figure's id in the report, so that several charts share a page) and in the element's opening
   * tag. Drawing is what costs, so the chart is drawn once, with a placeholder prefix that cannot
   * occur elsewhere in SVG text, and each copy replaces the placeholder: the bytes are those of
   * drawing it twice with each prefix.
   */
  static Svg drawSvg(JFreeChart chart, int width, int height) {
    SVGGraphics2D g = graphics(width, height);
    g.setDefsKeyPrefix(ID_PLACEHOLDER);
    chart.draw(g, new Rectangle(0, 0, width, height));
    String element = g.getSVGElement(ELEMENT_ID_PLACEHOLDER, false, new ViewBox(0, 0, width, height), null, null);
    return new Svg(g.getSVGDocument(), element, seriesStyles(chart), width, height);
  }

  /**
   * A chart drawn as SVG ({@link #drawSvg}), with its ids still to be named.
   *
   * @param drawnDocument the SVG file's text, ids prefixed with the placeholder
   * @param drawnElement the {@code <svg>} element, its id the placeholder
   * @param seriesStyles the chart's {@link #seriesStyles}
   * @param width the width drawn, in pixels
   * @param height the height drawn, in pixels
   */
  record Svg(String drawnDocument, String drawnElement, String seriesStyles, int width, int height) {
    /** Returns the text of the chart's SVG file: its ids prefixed {@code kvsim-} (the default prefix comes from the clock; a fixed one keeps the file deterministic). */
    String document() {
      return drawnDocument.replace(ID_PLACEHOLDER, "kvsim-");
    }

    /** Returns the chart as a report inlines it ({@link ChartFiles#inlineSvg}). */
    String inline(String id, String text) {
      int close = drawnElement.indexOf('>');
      String open = drawnElement.substring(0, close).replace(ELEMENT_ID_PLACEHOLDER, id);
      String rest = drawnElement.substring(close + 1).replace(ID_PLACEHOLDER, id + "-");
      return open + " data-series=\"" + Html.escape(seriesStyles) + "\""
          + " role=\"img\" aria-labelledby=\"" + id + "-title\" style=\"width:100%;height:auto;max-width:" + width + "px\">"
          + "<title id=\"" + id + "-title\">" + Html.escape(text) + "</title>"
          + rest;
    }
  }

  /**
   * Returns a renderer of lines without shapes that draws each series as one path. JFreeChart's
   * default draws every segment as its own element: a run's 2,000-row series then become tens of
   * thousands of SVG elements and megabytes of report; one path per series draws the same line.
   */
  static XYLineAndShapeRenderer lines() {
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, false);
    r.setDrawSeriesLineAsPath(true);
    return r;
  }

  /**
   * Returns the legend's entries of {@code chart} as {@code label=#rrggbb[/dash pattern]}, separated
   * by {@code "; "}: what each series is drawn with, for a reader (and {@code ReportBrowserTest}) to
   * check that no two share a colour (Note [One colour per name] on {@link Palette}).
   */
  static String seriesStyles(JFreeChart chart) {
    StringBuilder sb = new StringBuilder();
    org.jfree.chart.LegendItemCollection items = chart.getPlot().getLegendItems();
    for (int i = 0; items != null && i < items.getItemCount(); i++) {
      org.jfree.chart.LegendItem item = items.get(i);
      java.awt.Paint p = item.isLineVisible() ? item.getLinePaint() : item.getFillPaint();
      sb.append(i == 0 ? "" : "; ").append(item.getLabel().replace(";", ",").replace("=", ":")).append('=')
          .append(p instanceof java.awt.Color c ? Palette.Style.hex(c) : "?");
      if (item.isLineVisible() && item.getLineStroke() instanceof java.awt.BasicStroke b && b.getDashArray() != null) {
        sb.append("/dash").append(java.util.Arrays.toString(b.getDashArray()).replace(" ", ""));
      }
    }
    return sb.toString();
  }

  /**
   * An SVG canvas writing coordinates to a tenth of a pixel: finer adds nothing on screen and
   * makes charts with thousands of shapes several times larger.
   */
  private static SVGGraphics2D graphics(int width, int height) {
    SVGGraphics2D g = new SVGGraphics2D(width, height);
    g.setGeomDoubleConverter(v -> String.valueOf(Math.round(v * 10) / 10.0));
    return g;
  }

  /**
   * Returns {@code chart} as an {@code <svg>} element to place inside an HTML page: scaled to the
   * page's width (a view box instead of fixed dimensions), its ids prefixed with {@code id} so that
   * several charts share a page, and with {@code role="img"} and a {@code <title>} holding {@code
   * text}, its text alternative.
   */
  static String inlineSvg(JFreeChart chart, int width, int height, String id, String text) {
    return drawSvg(chart, width, height).inline(id, text);
  }
}

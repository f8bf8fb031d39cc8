package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.Stroke;
import java.awt.geom.Line2D;
import java.awt.geom.Rectangle2D;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import kvsim.metrics.MemoryMap;
import org.jfree.chart.annotations.AbstractXYAnnotation;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.PlotRenderingInfo;
import org.jfree.chart.plot.XYPlot;
import org.jfree.svg.SVGGraphics2D;
import org.jfree.svg.SVGHints;

/**
 * The moment a PyTorch snapshot was written on a memory map panel ({@code --snapshot-at-oom}): a
 * dashed vertical line at the refused event across the panel, labelled "snapshot at OOM", and in
 * SVG inside a group whose {@code data-oom} attribute ({@link #attribute}) states the allocator,
 * event, size, reason and file, so that a reader (and the tests) can find the same moment in the
 * snapshot.
 */
final class OomMarker extends AbstractXYAnnotation {
  private static final long serialVersionUID = 1L;
  private static final Color COLOUR = new Color(0xd62728);
  private static final Stroke DASHED = new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f);

  private final double event;
  private final String attribute;

  OomMarker(String allocator, MemoryMap.OomSnapshot mark) {
    this.event = mark.event();
    this.attribute = attribute(allocator, mark);
  }

  /**
   * Returns the value of the {@code data-oom} attribute: {@code NAME event=E time_ns=T
   * size_bytes=S reason=R file=F}; quotes and markup characters become {@code _}, since the SVG
   * writer puts the value between single quotes.
   */
  static String attribute(String allocator, MemoryMap.OomSnapshot m) {
    return String.format(Locale.ROOT, "%s event=%d time_ns=%d size_bytes=%d reason=%s file=%s", allocator, m.event(), m.timeNanos(), m.sizeBytes(),
        m.reason(), m.file()).replaceAll("['\"&<>]", "_");
  }

  @Override
  public void draw(Graphics2D g, XYPlot plot, Rectangle2D dataArea, ValueAxis domainAxis, ValueAxis rangeAxis, int rendererIndex, PlotRenderingInfo info) {
    double x = domainAxis.valueToJava2D(event, dataArea, plot.getDomainAxisEdge());
    if (!(x >= dataArea.getMinX() && x <= dataArea.getMaxX())) {
      return;
    }
    boolean svg = g instanceof SVGGraphics2D;
    if (svg) {
      Map<String, String> attrs = new LinkedHashMap<>();
      attrs.put("data-oom", attribute);
      g.setRenderingHint(SVGHints.KEY_BEGIN_GROUP, attrs);
    }
    Stroke savedStroke = g.getStroke();
    java.awt.Paint savedPaint = g.getPaint();
    Font savedFont = g.getFont();
    g.setPaint(COLOUR);
    g.setStroke(DASHED);
    g.draw(new Line2D.Double(x, dataArea.getMinY(), x, dataArea.getMaxY()));
    g.setFont(new Font("SansSerif", Font.PLAIN, 11));
    String label = "snapshot at OOM";
    int width = g.getFontMetrics().stringWidth(label);
    // The label sits right of the line, or left of it near the panel's right edge.
    double lx = x + 4 + width <= dataArea.getMaxX() ? x + 4 : x - 4 - width;
    g.drawString(label, (float) lx, (float) (dataArea.getMinY() + 24));
    g.setStroke(savedStroke);
    g.setPaint(savedPaint);
    g.setFont(savedFont);
    if (svg) {
      g.setRenderingHint(SVGHints.KEY_END_GROUP, "true");
    }
  }
}

package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.Stroke;
import java.awt.geom.Line2D;
import java.awt.geom.Rectangle2D;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.metrics.Interval;
import org.jfree.chart.annotations.AbstractAnnotation;
import org.jfree.chart.annotations.AbstractXYAnnotation;
import org.jfree.chart.annotations.CategoryAnnotation;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotRenderingInfo;
import org.jfree.chart.plot.XYPlot;
import org.jfree.svg.SVGGraphics2D;
import org.jfree.svg.SVGHints;

/**
 * The seed intervals of a chart (Note [The seed interval] on {@code metrics.Interval}): error bars
 * on bars and shaded bands on rates, each in its series' colour ({@link Palette}), and in SVG each
 * inside a group whose {@code data-interval} attribute states what it draws ({@link #attribute}),
 * so that a reader (and the tests) can check the geometry against {@code summary.json}'s {@code
 * intervals}. Charts of one run draw none; their files are unchanged.
 *
 * <p>Note [Error bars in their series' colour]: an error bar in its series' colour would vanish
 * on its own bar; it is drawn as a line of that colour over a wider white one, so that it shows on
 * its bar, on its neighbours' and on the white background alike, and still says whose it is.
 */
final class IntervalMarks {
  /** The width of an error bar's caps, pixels either side. */
  private static final double CAP = 5;
  private static final Stroke HALO = new BasicStroke(4.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER);
  private static final Stroke LINE = new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER);

  private IntervalMarks() {}

  /** Returns the caption of a chart's intervals: "error bars: 95 % interval of the median over N seeds". */
  static String caption(String kind, int seeds) {
    return kind + ": 95 % interval of the median over " + seeds + " seeds";
  }

  /**
   * Returns the value of an interval's {@code data-interval} attribute: {@code NAME median=M low=L
   * high=H n=N}, as drawn (chart units); quotes and markup characters of the name become {@code _},
   * since the SVG writer puts the value between single quotes.
   */
  static String attribute(String name, double median, double low, double high, int n) {
    return String.format(Locale.ROOT, "%s median=%s low=%s high=%s n=%d", name.replaceAll("['\"&<>]", "_"), plain(median), plain(low), plain(high), n);
  }

  private static String plain(double v) {
    return Double.toString(v);
  }

  /**
   * Reads an entry's {@code intervals} object (per metric path: median, low, high, n, coverage) as
   * plain values; null where {@code raw} is null. A malformed one is {@code error(field, problem)}.
   */
  static Map<String, Interval> read(Object raw, java.util.function.BiFunction<String, String, RuntimeException> error) {
    if (raw == null) {
      return null;
    }
    if (!(raw instanceof Map<?, ?> m)) {
      throw error.apply("intervals", "expected an object, found " + shown(raw));
    }
    Map<String, Interval> out = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : m.entrySet()) {
      String at = "intervals." + e.getKey();
      if (!(e.getValue() instanceof Map<?, ?> i)) {
        throw error.apply(at, "expected an object of median, low, high, n, coverage");
      }
      double[] v = new double[4];
      List<String> names = List.of("median", "low", "high", "coverage");
      for (int k = 0; k < names.size(); k++) {
        if (!(i.get(names.get(k)) instanceof Number x) || !Double.isFinite(x.doubleValue())) {
          throw error.apply(at + "." + names.get(k), i.containsKey(names.get(k)) ? "expected a number, found " + shown(i.get(names.get(k))) : "missing");
        }
        v[k] = ((Number) i.get(names.get(k))).doubleValue();
      }
      if (!(i.get("n") instanceof Integer || i.get("n") instanceof Long) || ((Number) i.get("n")).longValue() < 1) {
        throw error.apply(at + ".n", i.containsKey("n") ? "expected a positive integer, found " + shown(i.get("n")) : "missing");
      }
      if (!(v[1] <= v[0] && v[0] <= v[2])) {
        throw error.apply(at, "expected low <= median <= high, found " + v[1] + ", " + v[0] + ", " + v[2]);
      }
      out.put(String.valueOf(e.getKey()), new Interval(v[0], v[1], v[2], ((Number) i.get("n")).intValue(), v[3]));
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  /** Returns a JSON value as a message shows it: strings quoted. */
  private static String shown(Object v) {
    return v instanceof String t ? "\"" + t + "\"" : String.valueOf(v);
  }

  /** Runs {@code draw} on {@code g}, inside an SVG group with {@code data-interval} where {@code g} writes SVG. */
  static void grouped(Graphics2D g, String attribute, Runnable draw) {
    boolean svg = g instanceof SVGGraphics2D;
    if (svg) {
      Map<String, String> attrs = new LinkedHashMap<>();
      attrs.put("data-interval", attribute);
      g.setRenderingHint(SVGHints.KEY_BEGIN_GROUP, attrs);
    }
    draw.run();
    if (svg) {
      g.setRenderingHint(SVGHints.KEY_END_GROUP, "true");
    }
  }

  /** Draws a vertical error bar at {@code x} from {@code yLow} to {@code yHigh} (Java2D pixels) in {@code colour} (Note [Error bars in their series' colour]). */
  static void verticalBar(Graphics2D g, double x, double yLow, double yHigh, Color colour) {
    Stroke saved = g.getStroke();
    java.awt.Paint paint = g.getPaint();
    for (int pass = 0; pass < 2; pass++) {
      g.setStroke(pass == 0 ? HALO : LINE);
      g.setPaint(pass == 0 ? Color.WHITE : colour);
      g.draw(new Line2D.Double(x, yLow, x, yHigh));
      g.draw(new Line2D.Double(x - CAP, yLow, x + CAP, yLow));
      g.draw(new Line2D.Double(x - CAP, yHigh, x + CAP, yHigh));
    }
    g.setStroke(saved);
    g.setPaint(paint);
  }

  /**
   * A vertical error bar at a category's middle, {@code offsetPixels} to its side, from {@code low}
   * to {@code high} on the value axis: a stacked bar's segment's interval.
   */
  static final class AtCategory extends AbstractAnnotation implements CategoryAnnotation {
    private static final long serialVersionUID = 1L;
    private final Comparable<?> category;
    private final double low;
    private final double high;
    private final double offsetPixels;
    private final Color colour;
    private final String attribute;

    AtCategory(Comparable<?> category, double low, double high, double offsetPixels, Color colour, String attribute) {
      this.category = category;
      this.low = low;
      this.high = high;
      this.offsetPixels = offsetPixels;
      this.colour = colour;
      this.attribute = attribute;
    }

    @Override
    public void draw(Graphics2D g, CategoryPlot plot, Rectangle2D dataArea, CategoryAxis domainAxis, ValueAxis rangeAxis) {
      @SuppressWarnings("unchecked")
      List<Comparable<?>> categories = (List<Comparable<?>>) (List<?>) plot.getCategoriesForAxis(domainAxis);
      int index = categories.indexOf(category);
      if (index < 0) {
        return;
      }
      double x = domainAxis.getCategoryMiddle(index, categories.size(), dataArea, plot.getDomainAxisEdge()) + offsetPixels;
      double yLow = rangeAxis.valueToJava2D(low, dataArea, plot.getRangeAxisEdge());
      double yHigh = rangeAxis.valueToJava2D(high, dataArea, plot.getRangeAxisEdge());
      grouped(g, attribute, () -> verticalBar(g, x, yLow, yHigh, colour));
    }
  }

  /**
   * A band across the plot's height from {@code low} to {@code high} on the domain axis, shaded in
   * a light tint of {@code colour} and edged in it: a capacity search's found rate's interval.
   */
  static final class DomainBand extends AbstractXYAnnotation {
    private static final long serialVersionUID = 1L;
    private final double low;
    private final double high;
    private final Color colour;
    private final String attribute;

    DomainBand(double low, double high, Color colour, String attribute) {
      this.low = low;
      this.high = high;
      this.colour = colour;
      this.attribute = attribute;
    }

    @Override
    public void draw(Graphics2D g, XYPlot plot, Rectangle2D dataArea, ValueAxis domainAxis, ValueAxis rangeAxis, int rendererIndex,
        PlotRenderingInfo info) {
      double x0 = low <= 0 && domainAxis instanceof org.jfree.chart.axis.LogAxis ? Double.NaN : domainAxis.valueToJava2D(low, dataArea, plot.getDomainAxisEdge());
      double x1 = high <= 0 && domainAxis instanceof org.jfree.chart.axis.LogAxis ? Double.NaN : domainAxis.valueToJava2D(high, dataArea, plot.getDomainAxisEdge());
      // A low end of 0 (a seed where no rate met the targets) has no place on a log axis: the band runs from the axis' edge.
      x0 = Double.isFinite(x0) ? x0 : dataArea.getMinX();
      x1 = Double.isFinite(x1) ? x1 : dataArea.getMinX();
      double left = Math.max(dataArea.getMinX(), Math.min(x0, x1));
      double right = Math.min(dataArea.getMaxX(), Math.max(x0, x1));
      if (right < left) {
        return; // wholly outside the axis' range
      }
      grouped(g, attribute, () -> {
        Stroke saved = g.getStroke();
        java.awt.Paint paint = g.getPaint();
        g.setPaint(new Color(colour.getRed(), colour.getGreen(), colour.getBlue(), 40));
        g.fill(new Rectangle2D.Double(left, dataArea.getMinY(), right - left, dataArea.getHeight()));
        g.setPaint(colour);
        g.setStroke(new BasicStroke(0.8f));
        g.draw(new Line2D.Double(left, dataArea.getMinY(), left, dataArea.getMaxY()));
        g.draw(new Line2D.Double(right, dataArea.getMinY(), right, dataArea.getMaxY()));
        g.setStroke(saved);
        g.setPaint(paint);
      });
    }
  }
}

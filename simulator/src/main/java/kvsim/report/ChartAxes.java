package kvsim.report;

import java.awt.Graphics2D;
import java.awt.geom.Rectangle2D;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jfree.chart.axis.AxisState;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTick;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.TextAnchor;

/**
 * The axes of kvsim's charts: a value axis that turns logarithmic when one series dwarfs the
 * others, log axes with readable tick labels, and axes that end at the data.
 *
 * <p>Note [Log when one series dwarfs the others]: a shared linear axis squeezes every series into
 * the range of the largest (a serving run with {@code hf-naive}: latencies to 9,300 s, the other
 * systems' under a second, all in the left 15 %). An axis is logarithmic when the largest series
 * maximum exceeds the smallest positive one by more than {@link #LOG_RATIO} times, and its label
 * says so; otherwise linear, which reads more directly.
 *
 * <p>Note [Runs on one time axis]: series over one shared time axis (the KV memory of each system
 * in stacked panels, the batch size of each system over time) are each one run, and a shorter run
 * is drawn in the share of the width its span takes: at 5× it fills a fifth of its panel, its shape
 * lost (a 300-request serving run: vllm 60 s beside hf-naive's 960 s, 16×, vllm in the left 6 %).
 * Such an axis turns logarithmic above {@link #PANEL_LOG_RATIO} instead, so that each run keeps
 * most of the width.
 */
final class ChartAxes {
  /** Above this ratio of the largest series maximum to the smallest, an axis is logarithmic. */
  static final double LOG_RATIO = 20;
  /** The label suffix of an axis chosen logarithmic. */
  static final String LOG_NOTE = " (log scale: one series is over 20× another)";
  /** Above this ratio of the longest run to the shortest, a time axis shared by several runs is logarithmic (Note [Runs on one time axis]). */
  static final double PANEL_LOG_RATIO = 5;
  /** The label suffix of such a time axis chosen logarithmic. */
  static final String PANEL_LOG_NOTE = " (log scale: one run is over 5× as long as another)";

  private ChartAxes() {}

  /** Returns whether an axis over series with these maxima should be logarithmic (NaN and values ≤ 0 ignored). */
  static boolean wantsLog(double[] seriesMaxima) {
    return wantsLog(seriesMaxima, LOG_RATIO);
  }

  /** Returns whether the largest of these maxima exceeds the smallest positive one by more than {@code ratio} times. */
  static boolean wantsLog(double[] seriesMaxima, double ratio) {
    double lo = Double.POSITIVE_INFINITY;
    double hi = 0;
    for (double m : seriesMaxima) {
      if (m > 0 && !Double.isNaN(m) && !Double.isInfinite(m)) {
        lo = Math.min(lo, m);
        hi = Math.max(hi, m);
      }
    }
    return hi > 0 && hi / lo > ratio;
  }

  /** Returns a value axis labelled {@code label}: logarithmic (and saying so) when {@link #wantsLog}, else linear. */
  static ValueAxis valueAxis(String label, double[] seriesMaxima) {
    if (wantsLog(seriesMaxima)) {
      return log(label + LOG_NOTE);
    }
    NumberAxis a = new NumberAxis(label);
    a.setAutoRangeIncludesZero(true);
    return a;
  }

  /** Returns a log axis whose ticks are 1, 2 and 5 times powers of ten (just powers of ten over a wide range), labelled plainly. */
  static LogAxis log(String label) {
    ReadableLogAxis a = new ReadableLogAxis(label);
    a.setSmallestValue(1e-9);
    return a;
  }

  /** Returns a linear axis whose range is exactly that of the data (no margin past the last event). */
  static NumberAxis toData(String label) {
    NumberAxis a = new NumberAxis(label);
    a.setAutoRangeIncludesZero(false);
    a.setLowerMargin(0);
    a.setUpperMargin(0);
    return a;
  }

  /** Returns the tick values of a readable log axis over {@code [lo, hi]}: 1-2-5 steps, or powers of ten where those are too many. */
  static List<Double> logTicks(double lo, double hi) {
    List<Double> ticks = new ArrayList<>();
    if (!(lo > 0) || !(hi > lo)) {
      return ticks;
    }
    int first = (int) Math.floor(Math.log10(lo));
    int last = (int) Math.ceil(Math.log10(hi));
    double decades = Math.log10(hi / lo);
    double[][] choices = {{1}, {1, 2, 5}, {1, 1.5, 2, 3, 5, 7}, {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9}};
    int choice = decades > 4 ? 0 : decades > 1.2 ? 1 : 2;
    for (; choice < choices.length; choice++) {
      ticks.clear();
      for (int e = first; e <= last; e++) {
        for (double s : choices[choice]) {
          // Rounded to 12 significant digits: 3 × 10^-1 is 0.30000000000000004 in doubles.
          double v = Double.parseDouble(String.format(Locale.ROOT, "%.12g", s * Math.pow(10, e)));
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) {
            ticks.add(v);
          }
        }
      }
      if (ticks.size() >= 3) {
        break;
      }
    }
    return ticks;
  }

  /** Returns a tick's label: {@code 0.05}, {@code 2}, {@code 1,000}, {@code 1e-06}. */
  static String tickLabel(double v) {
    if (v >= 1e-4 && v < 1e7) {
      String s = v >= 1 ? String.format(Locale.ROOT, "%,.1f", v) : String.format(Locale.ROOT, "%.6f", v);
      s = s.contains(".") ? s.replaceAll("0+$", "").replaceAll("\\.$", "") : s;
      return s;
    }
    return String.format(Locale.ROOT, "%.0e", v);
  }

  /** A log axis with {@link #logTicks} labelled by {@link #tickLabel} (JFreeChart's own may label just two ticks in a decade). */
  private static final class ReadableLogAxis extends LogAxis {
    private static final long serialVersionUID = 1L;

    ReadableLogAxis(String label) {
      super(label);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public List refreshTicks(Graphics2D g2, AxisState state, Rectangle2D dataArea, RectangleEdge edge) {
      List<NumberTick> out = new ArrayList<>();
      boolean vertical = RectangleEdge.isLeftOrRight(edge);
      TextAnchor anchor = vertical ? (edge == RectangleEdge.LEFT ? TextAnchor.CENTER_RIGHT : TextAnchor.CENTER_LEFT)
          : (edge == RectangleEdge.TOP ? TextAnchor.BOTTOM_CENTER : TextAnchor.TOP_CENTER);
      for (double v : logTicks(getLowerBound(), getUpperBound())) {
        out.add(new NumberTick(v, tickLabel(v), anchor, anchor, 0.0));
      }
      return out;
    }
  }
}

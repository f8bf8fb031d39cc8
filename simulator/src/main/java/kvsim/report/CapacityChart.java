package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jfree.chart.JFreeChart;
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
    ChartJobs jobs = new ChartJobs(dir);
    add(jobs, r);
    jobs.await();
  }

  /** Starts drawing the chart files among {@code jobs} (Note [Charts off the critical path] on {@link ChartJobs}). */
  static void add(ChartJobs jobs, CapacityResults r) {
    String subject = Headline.subject(r.config());
    jobs.add(NAME, () -> build(r, subject), WIDTH, HEIGHT);
  }

  /** The chart files' name without extension. */
  static final String NAME = "capacity";

  /** Draws the chart again from the capacity folder {@code dir}'s {@code summary.json} alone. */
  public static void redraw(Path dir) throws IOException {
    write(dir, CapacityResultsReader.read(dir));
  }

  /** Builds the chart of a capacity search. */
  public static JFreeChart build(CapacityResults r) {
    return build(r, null);
  }

  /**
   * Builds the chart of a capacity search; {@code subject} (or null) completes the title. Each
   * system is drawn in its colour ({@link Palette}, as in the serving report's latency CDF), its
   * found maximum rate marked by a vertical line of that colour labelled with the rate; the rate
   * axis is zoomed to the knee (Note [The capacity chart's knee]).
   *
   * <p>Note [The capacity chart's knee]: the answer lies where the latency turns up, between the
   * found rates; probes far above them (a search's first doublings up to --max-rate) squeeze that
   * region into a corner. The rate axis runs from just below the lowest found rate (or the lowest
   * probe, where none was found) to just above the highest found rate's next probe, and is
   * logarithmic where that span is more than 20-fold; probes outside are drawn but cut at the edge
   * (the table below the chart lists every probe).
   *
   * <p>A search on per-request targets alone has no latency to draw: each probe's SLO attainment
   * (the share of requests that finished and met every per-request target) is drawn instead, on a
   * linear 0–1 axis, the attainment required dashed.
   *
   * <p>A search over seeds shades each system's interval of its highest rate ({@code intervals}'
   * {@code max_rate_rps}) as a band of its colour behind the lines ({@link IntervalMarks.DomainBand});
   * the marker stays at the median seed's answer, and the rate axis is widened to hold the band.
   */
  public static JFreeChart build(CapacityResults r, String subject) {
    boolean attainment = r.latencyTargets().isEmpty();
    String target = attainment
        ? r.targets().stream().filter(t -> t.strip().startsWith("attainment")).findFirst().orElse("attainment>=1 (the default)")
        : r.latencyTargets().get(0);
    java.util.function.ToDoubleFunction<CapacityResults.Probe> value = attainment
        ? p -> p.attainment() == null ? Double.NaN : p.attainment()
        : p -> {
          Double v = p.valuesSeconds().get(target);
          return v == null ? Double.NaN : v;
        };
    XYSeriesCollection data = new XYSeriesCollection();
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
    List<Palette.Style> styles = Palette.styles(r.systems().stream().map(CapacityResults.SystemEntry::label).toList());
    double lowFound = Double.POSITIVE_INFINITY;
    double highFound = 0;
    double lowProbe = Double.POSITIVE_INFINITY;
    double highProbe = 0;
    for (CapacityResults.SystemEntry e : r.systems()) {
      for (CapacityResults.Probe p : e.probes()) {
        lowProbe = Math.min(lowProbe, p.rateRps());
        highProbe = Math.max(highProbe, p.rateRps());
      }
      if (e.anyMet()) {
        lowFound = Math.min(lowFound, e.maxRateRps());
        highFound = Math.max(highFound, e.maxRateRps());
      }
    }
    // The first probe above the highest found rate: where the knee ends.
    double above = highFound;
    for (CapacityResults.SystemEntry e : r.systems()) {
      for (CapacityResults.Probe p : e.probes()) {
        if (p.rateRps() > highFound && (above == highFound || p.rateRps() < above)) {
          above = p.rateRps();
        }
      }
    }
    List<ValueMarker> found = new ArrayList<>();
    int bands = 0;
    int seeds = ServingCharts.seedCount(r.config());
    for (int i = 0; i < r.systems().size(); i++) {
      CapacityResults.SystemEntry e = r.systems().get(i);
      XYSeries s = new XYSeries(e.legend(), true, false);
      for (CapacityResults.Probe p : e.probes()) {
        double v = value.applyAsDouble(p);
        if (!Double.isNaN(v) && (attainment || v > 0)) {
          s.add(p.rateRps(), v);
        }
      }
      data.addSeries(s);
      renderer.setSeriesPaint(i, styles.get(i).colour());
      renderer.setSeriesStroke(i, styles.get(i).stroke(1.6f));
      if (e.anyMet()) {
        ValueMarker m = new ValueMarker(e.maxRateRps(), styles.get(i).colour(), styles.get(i).stroke(1.2f));
        m.setLabel(e.label() + " " + (e.atUpperBound() ? ">= " : "") + CapacityResults.rate(e.maxRateRps()));
        m.setLabelFont(new Font("SansSerif", Font.PLAIN, 11));
        m.setLabelPaint(styles.get(i).colour());
        m.setLabelAnchor(RectangleAnchor.TOP_RIGHT);
        m.setLabelTextAnchor(TextAnchor.TOP_LEFT);
        // Each system's label one line lower than the previous one's, so that close rates stay readable.
        m.setLabelOffset(new org.jfree.chart.ui.RectangleInsets(4 + 15 * found.size(), 3, 4, 3));
        m.setLabelBackgroundColor(new Color(255, 255, 255, 220));
        found.add(m);
      }
      kvsim.metrics.Interval in = r.intervals().getOrDefault(e.label(), java.util.Map.of()).get("max_rate_rps");
      if (in != null && in.n() > 1) {
        renderer.addAnnotation(new IntervalMarks.DomainBand(in.low(), in.high(), styles.get(i).colour(),
            IntervalMarks.attribute(e.label() + ": max rate (req/s)", in.median(), in.low(), in.high(), in.n())), org.jfree.chart.ui.Layer.BACKGROUND);
        bands++;
        seeds = Math.max(seeds, in.n());
      }
    }
    double lo = Double.isInfinite(lowFound) ? lowProbe : lowFound * 0.8;
    double hi = highFound > 0 ? Math.max(above, highFound * 1.25) * 1.05 : highProbe * 1.05;
    // A search over seeds: the knee widened to hold each system's interval of its highest rate (its band).
    for (java.util.Map<String, kvsim.metrics.Interval> in : r.intervals().values()) {
      kvsim.metrics.Interval rateInterval = in.get("max_rate_rps");
      if (rateInterval != null && rateInterval.n() > 1 && rateInterval.high() > 0) {
        hi = Math.max(hi, rateInterval.high() * 1.05);
        if (rateInterval.low() > 0) {
          lo = Math.min(lo, rateInterval.low() * 0.95);
        }
      }
    }
    if (!(hi > lo)) {
      hi = lo * 2;
    }
    boolean logRate = hi / lo > ChartAxes.LOG_RATIO;
    org.jfree.chart.axis.ValueAxis rate = logRate ? ChartAxes.log("request rate (requests/s, log scale)") : new NumberAxis("request rate (requests/s)");
    if (!Double.isInfinite(lo) && lo > 0) {
      rate.setRange(lo, hi);
    }
    org.jfree.chart.axis.ValueAxis latency;
    if (attainment) {
      List<String> perRequest = r.targets().stream().filter(t -> !CapacityResults.isRejectionTarget(t) && !t.strip().startsWith("attainment")).toList();
      latency = new NumberAxis("SLO attainment: share of requests meeting " + String.join(" and ", perRequest));
      latency.setRange(0, 1.02);
    } else {
      latency = ChartAxes.log(target.replaceAll("<=.*", "") + " (s, log scale)");
    }
    XYPlot plot = new XYPlot(data, rate, latency, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(new Color(0xdddddd));
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    ValueMarker limit = new ValueMarker(attainment ? r.attainmentRequired() : CapacityResults.limitSeconds(target), Color.BLACK,
        new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
    limit.setLabel("target " + target);
    limit.setLabelFont(new Font("SansSerif", Font.PLAIN, 12));
    limit.setLabelAnchor(RectangleAnchor.TOP_RIGHT);
    limit.setLabelTextAnchor(TextAnchor.BOTTOM_RIGHT);
    plot.addRangeMarker(limit);
    found.forEach(plot::addDomainMarker);
    String title = (attainment ? "SLO attainment" : "Latency") + " against load, each system's highest rate within the targets marked"
        + ChartFiles.subjectLine(subject);
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 15), plot, true);
    if (bands > 0) {
      chart.addSubtitle(new org.jfree.chart.title.TextTitle(IntervalMarks.caption("Shaded bands", seeds)
          + " of each system's highest rate, in its colour; lines, probes and markers: the median seed's search", new Font("SansSerif", Font.PLAIN, 12)));
    }
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }
}

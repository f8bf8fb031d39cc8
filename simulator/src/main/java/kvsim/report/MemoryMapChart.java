package kvsim.report;

import java.awt.Color;
import java.awt.Font;
import java.awt.geom.Path2D;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import kvsim.core.Bytes;
import kvsim.metrics.MemoryMap;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.StandardXYBarPainter;
import org.jfree.chart.renderer.xy.XYBarRenderer;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYIntervalSeries;
import org.jfree.data.xy.XYIntervalSeriesCollection;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The memory map chart (PyTorch {@code memory_viz}'s view): for each allocator a panel with the
 * address (GiB) against the event, each kept allocation extent a rectangle coloured by tag, and the
 * bins holding refusals marked by red triangles along the top (a panel spanning more than 1 TiB is
 * a virtual space, drawn in TiB on its own scale with a note under the title, each rectangle at least
 * a pixel tall); a last panel draws the mean live GiB of the small allocations too small to draw,
 * per allocator in its colour (Note [Memory map decimation] on {@link MemoryMap}). A panel whose
 * run wrote a snapshot at its first OOM ({@code --snapshot-at-oom}) marks that event ({@link OomMarker}).
 * Drawn from {@code memory-map.json} alone; the same maps give byte-identical files.
 */
public final class MemoryMapChart {
  static final int WIDTH = 1200;
  private static final int PANEL_HEIGHT = 230;
  /** Address spans above this many GiB are virtual spaces, not a device. */
  private static final double VIRTUAL_SPAN_GIB = 1024;
  /** Tag colours: Paul Tol's "light" scheme, none of them a series colour of {@link Palette}. */
  private static final Color[] TAG_COLOURS = {
    new Color(0x77AADD), new Color(0xEE8866), new Color(0x44BB99), new Color(0xFFAABB), new Color(0xBBCC33), new Color(0xAAAA00),
    new Color(0x99DDFF), new Color(0xEEDD88)
  };
  /** The band's label: what the elided rectangles are, in plain words. */
  static final String ELIDED_LABEL = "small allocations (GiB live)";

  /** The note under the title of a map with a virtual-space panel. */
  static final String VIRTUAL_NOTE = "Panels marked \"virtual (TiB)\" span a reserved virtual address space (tens of TiB, not device memory), "
      + "drawn in TiB on a scale of their own: their rectangles are not to scale with the device-sized panels in GiB.";

  /** The PNG chart's file name. */
  public static final String PNG_FILE = "memory-map.png";
  /** The SVG chart's file name. */
  public static final String SVG_FILE = "memory-map.svg";

  private MemoryMapChart() {}

  /** Returns the chart's height for {@code maps}. */
  static int height(List<MemoryMap> maps) {
    return 140 + PANEL_HEIGHT * maps.size() + PANEL_HEIGHT / 2;
  }

  /** Writes {@code memory-map.png} and {@code memory-map.svg} into {@code dir}. */
  public static void write(Path dir, List<MemoryMap> maps) throws IOException {
    write(dir, maps, null);
  }

  /** Writes the chart files into {@code dir}, {@code subject} (the workload, model and device, or null) completing the title. */
  public static void write(Path dir, List<MemoryMap> maps, String subject) throws IOException {
    ChartJobs jobs = new ChartJobs(dir);
    add(jobs, maps, subject);
    jobs.await();
  }

  /** Starts drawing the chart files among {@code jobs} (Note [Charts off the critical path] on {@link ChartJobs}). */
  static void add(ChartJobs jobs, List<MemoryMap> maps, String subject) {
    jobs.add(NAME, () -> build(maps, subject), WIDTH, height(maps));
  }

  /** The chart files' name without extension. */
  static final String NAME = "memory-map";

  /** Returns the tags of all maps, in order of first appearance. */
  static List<String> tags(List<MemoryMap> maps) {
    List<String> tags = new ArrayList<>();
    for (MemoryMap m : maps) {
      for (String t : m.tags()) {
        if (!tags.contains(t)) {
          tags.add(t);
        }
      }
    }
    return tags;
  }

  /** Builds the chart. */
  public static JFreeChart build(List<MemoryMap> maps) {
    return build(maps, null);
  }

  /** Builds the chart, {@code subject} (the workload, model and device, or null) completing the title. */
  public static JFreeChart build(List<MemoryMap> maps, String subject) {
    List<String> tags = tags(maps);
    NumberAxis events = ChartAxes.toData("event");
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(events);
    plot.setGap(8);
    Path2D.Double triangle = new Path2D.Double();
    triangle.moveTo(0, 5);
    triangle.lineTo(-4, -3);
    triangle.lineTo(4, -3);
    triangle.closePath();
    XYSeriesCollection elided = new XYSeriesCollection();
    boolean anyVirtual = false;
    for (int p = 0; p < maps.size(); p++) {
      MemoryMap m = maps.get(p);
      XYIntervalSeriesCollection rects = new XYIntervalSeriesCollection();
      List<XYIntervalSeries> byTag = new ArrayList<>();
      for (String t : tags) {
        XYIntervalSeries s = new XYIntervalSeries("tag " + t, false, true);
        byTag.add(s);
        rects.addSeries(s);
      }
      boolean virtual = (m.addressMaxBytes() - m.addressMinBytes()) / (double) Bytes.GiB > VIRTUAL_SPAN_GIB;
      anyVirtual |= virtual;
      // A virtual space's panel counts in TiB: its numbers then differ visibly from a device's GiB.
      double unit = virtual ? Bytes.TiB : Bytes.GiB;
      double top = m.addressMaxBytes() / unit;
      double bottom = m.addressMinBytes() / unit;
      // A panel spanning more than any device (the virtual spaces of vattention and stitching) draws
      // each rectangle at least a pixel tall; on a device-sized panel, thin rectangles stay thin so
      // that holes show.
      double minHeight = virtual ? (top - bottom) / PANEL_HEIGHT : 0;
      for (MemoryMap.Rectangle r : m.rectangles()) {
        double lo = r.addressBytes() / unit;
        double hi = Math.max(lo + minHeight, (r.addressBytes() + r.sizeBytes()) / unit);
        byTag.get(tags.indexOf(m.tags().get(r.tagIndex()))).add(r.startEvent(), r.startEvent(), r.endEvent(), lo, lo, hi);
      }
      XYBarRenderer bars = new XYBarRenderer();
      bars.setUseYInterval(true);
      bars.setBarPainter(new StandardXYBarPainter());
      bars.setShadowVisible(false);
      bars.setDrawBarOutline(false);
      for (int i = 0; i < tags.size(); i++) {
        Color c = TAG_COLOURS[i % TAG_COLOURS.length];
        bars.setSeriesPaint(i, new Color(c.getRed(), c.getGreen(), c.getBlue(), 170));
        bars.setSeriesVisibleInLegend(i, p == 0);
      }
      XYSeries ooms = new XYSeries("bins with refusals", false, true);
      for (int k = 0; k < m.oomCounts().length; k++) {
        if (m.oomCounts()[k] > 0) {
          ooms.add(k * m.binEvents() + (m.binEvents() + 1) / 2.0, top);
        }
      }
      XYLineAndShapeRenderer oomRenderer = new XYLineAndShapeRenderer(false, true);
      oomRenderer.setSeriesPaint(0, new Color(0xd62728));
      oomRenderer.setSeriesShape(0, triangle);
      oomRenderer.setSeriesVisibleInLegend(0, p == 0);
      NumberAxis address = new NumberAxis(m.allocator() + (virtual ? ": virtual (TiB)" : ": address (GiB)"));
      address.setAutoRangeIncludesZero(false);
      if (top > bottom) {
        double pad = (top - bottom) * 0.04;
        address.setRange(bottom, top + pad);
      }
      XYPlot panel = new XYPlot(rects, null, address, bars);
      panel.setDataset(1, new XYSeriesCollection(ooms));
      panel.setRenderer(1, oomRenderer);
      if (m.oomSnapshot() != null) {
        panel.addAnnotation(new OomMarker(m.allocator(), m.oomSnapshot()));
      }
      style(panel);
      plot.add(panel, 2);
      XYSeries e = new XYSeries(m.allocator(), false, true);
      for (int k = 0; k < m.elidedMeanBytes().length; k++) {
        e.add(k * m.binEvents() + (m.binEvents() + 1) / 2.0, m.elidedMeanBytes()[k] / (double) Bytes.GiB);
      }
      elided.addSeries(e);
    }
    XYLineAndShapeRenderer elidedRenderer = ChartFiles.lines();
    Palette.apply(elidedRenderer, maps.stream().map(MemoryMap::allocator).toList(), 1.4f);
    XYPlot band = new XYPlot(elided, null, new NumberAxis(ELIDED_LABEL), elidedRenderer);
    style(band);
    plot.add(band, 1);
    JFreeChart chart = new JFreeChart(
        "Memory map: allocations by address over events (refusals ▼)" + ChartFiles.subjectLine(subject), new Font("SansSerif", Font.BOLD, 16), plot, true);
    if (anyVirtual) {
      chart.addSubtitle(new org.jfree.chart.title.TextTitle(VIRTUAL_NOTE, new Font("SansSerif", Font.PLAIN, 12)));
    }
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  private static void style(XYPlot p) {
    p.setBackgroundPaint(Color.WHITE);
    p.setDomainGridlinePaint(new Color(0xdddddd));
    p.setRangeGridlinePaint(new Color(0xdddddd));
  }
}

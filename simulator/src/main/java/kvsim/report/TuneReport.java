package kvsim.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Rectangle2D;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.AtomicFiles;
import kvsim.core.Bytes;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The files of a tune folder, from {@link TuneResults}: {@code tune.json} (format {@code
 * kvsim-tune}: every cell, the front, the recommendation; {@code results/SCHEMA.md}), {@code
 * tune.csv} (one row per cell), the front chart ({@code tune-front.png} / {@code .svg}: peak
 * reserved bytes against modelled allocator time, the cells without OOM, the Pareto front as a line,
 * the default and the recommendation marked, one colour per series by {@link Palette}) and {@code
 * report.html} (the recommendation first, then the chart, then the cells). The same results give
 * the same bytes; nothing here depends on the time or the machine.
 */
public final class TuneReport {
  /** The results file. */
  public static final String JSON_FILE = "tune.json";
  /** The cells as a table. */
  public static final String CSV_FILE = "tune.csv";
  /** The front chart, PNG. */
  public static final String PNG_FILE = "tune-front.png";
  /** The front chart, SVG. */
  public static final String SVG_FILE = "tune-front.svg";

  static final int WIDTH = 1000;
  static final int HEIGHT = 620;

  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private TuneReport() {}

  /** Writes every file of the tune folder {@code dir}. */
  public static void write(Path dir, TuneResults r) throws IOException {
    byte[] json = (JSON.writeValueAsString(json(r)) + "\n").getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(JSON_FILE), out -> out.write(json));
    byte[] csv = csv(r).getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(CSV_FILE), out -> out.write(csv));
    JFreeChart chart = chart(r);
    ChartFiles.write(dir, chart, PNG_FILE, SVG_FILE, WIDTH, HEIGHT);
    byte[] html = html(r, ChartFiles.svgDocument(chart, WIDTH, HEIGHT)).getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(HtmlReport.FILE), out -> out.write(html));
  }

  /** Returns {@code tune.json}'s content. */
  static Map<String, Object> json(TuneResults r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("format", TuneResults.FORMAT);
    m.put("version", TuneResults.VERSION);
    m.put("config", r.config());
    m.put("allocator", r.allocator());
    m.put("objective", List.of("no OOM (then fewer OOMs)", "lowest peak reserved bytes", "lowest modelled allocator time",
        "fewer options changed", "tried first"));
    m.put("recommendation_rule", "of the cells with the best's OOMs and peak reserved bytes and an allocator time within 1 % of its, the one that changes fewest options");
    m.put("search", r.search());
    m.put("default", cell(r, r.defaults()));
    Map<String, Object> rec = cell(r, r.best());
    rec.put("paste", r.recommendation());
    m.put("recommended", rec);
    m.put("front", r.front());
    List<Object> cells = new ArrayList<>();
    r.cells().forEach(c -> cells.add(cell(r, c)));
    m.put("cells", cells);
    return m;
  }

  private static Map<String, Object> cell(TuneResults r, TuneResults.Cell c) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("order", c.order());
    m.put("phase", c.phase());
    m.put("setting", c.setting());
    m.put(r.torchConf() ? "conf" : "options", c.label());
    m.put("oom_count", c.oomCount());
    m.put("peak_reserved_bytes", c.peakReservedBytes());
    m.put("peak_allocated_bytes", c.peakAllocatedBytes());
    m.put("modelled_allocator_nanos", c.allocatorNanos());
    m.put("peak_external_fragmentation", c.peakExternalFragmentation());
    m.put("on_front", c.onFront());
    m.put("rank", c.rank());
    return m;
  }

  /** Returns {@code tune.csv}: one row per cell in the order tried, each option its own column. */
  static String csv(TuneResults r) {
    StringBuilder sb = new StringBuilder("order,phase");
    List<String> keys = new ArrayList<>(r.cells().get(0).setting().keySet());
    keys.forEach(k -> sb.append(',').append(k));
    sb.append(",oom_count,peak_reserved_bytes,peak_allocated_bytes,modelled_allocator_nanos,peak_external_fragmentation,on_front,rank\n");
    for (TuneResults.Cell c : r.cells()) {
      sb.append(c.order()).append(',').append(c.phase());
      for (String k : keys) {
        sb.append(',').append(csvField(c.setting().get(k)));
      }
      sb.append(',').append(c.oomCount()).append(',').append(c.peakReservedBytes()).append(',').append(c.peakAllocatedBytes()).append(',')
          .append(c.allocatorNanos()).append(',').append(c.peakExternalFragmentation()).append(',').append(c.onFront()).append(',').append(c.rank())
          .append('\n');
    }
    return sb.toString();
  }

  private static String csvField(String v) {
    return v.contains(",") || v.contains("\"") ? "\"" + v.replace("\"", "\"\"") + "\"" : v;
  }

  /**
   * Returns the front chart: every cell without OOM as a point (peak reserved GiB against allocator
   * time in ms), the Pareto front as a line through its cells, the default and the recommendation
   * as larger marks; cells with OOMs are left out (their peaks are of a failed run), and the
   * subtitle says how many.
   */
  static JFreeChart chart(TuneResults r) {
    List<String> labels = List.of("cells without OOM", "Pareto front", "default: " + r.defaults().label(), "recommended: " + r.best().label());
    List<Palette.Style> styles = Palette.styles(labels);
    XYSeriesCollection data = new XYSeriesCollection();
    XYSeries all = new XYSeries(labels.get(0), false, true);
    XYSeries front = new XYSeries(labels.get(1), false, true);
    XYSeries def = new XYSeries(labels.get(2), false, true);
    XYSeries best = new XYSeries(labels.get(3), false, true);
    long ooms = 0;
    for (TuneResults.Cell c : r.cells()) {
      if (c.oomCount() > 0) {
        ooms++;
      } else {
        all.add(millis(c), gib(c));
      }
    }
    for (TuneResults.Cell c : r.frontCells()) {
      front.add(millis(c), gib(c));
    }
    if (r.defaults().oomCount() == 0) {
      def.add(millis(r.defaults()), gib(r.defaults()));
    }
    if (r.best().oomCount() == 0) {
      best.add(millis(r.best()), gib(r.best()));
    }
    data.addSeries(all);
    data.addSeries(front);
    data.addSeries(def);
    data.addSeries(best);
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer();
    for (int i = 0; i < 4; i++) {
      renderer.setSeriesPaint(i, styles.get(i).colour());
      renderer.setSeriesStroke(i, styles.get(i).stroke(1.6f));
      renderer.setSeriesLinesVisible(i, i == 1);
      renderer.setSeriesShapesVisible(i, true);
    }
    renderer.setSeriesShape(0, new Ellipse2D.Double(-3, -3, 6, 6));
    renderer.setSeriesShape(1, new Ellipse2D.Double(-4, -4, 8, 8));
    renderer.setSeriesShape(2, new Rectangle2D.Double(-6, -6, 12, 12));
    renderer.setSeriesShape(3, new Ellipse2D.Double(-7, -7, 14, 14));
    NumberAxis time = new NumberAxis("modelled allocator time (ms)");
    time.setAutoRangeIncludesZero(false);
    NumberAxis reserved = new NumberAxis("peak reserved (GiB)");
    reserved.setAutoRangeIncludesZero(false);
    XYPlot plot = new XYPlot(data, time, reserved, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(new Color(0xdddddd));
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    plot.setDomainGridlineStroke(new BasicStroke(1f));
    JFreeChart chart = new JFreeChart(r.allocator() + " settings: peak reserved against allocator time, cells without OOM"
        + ChartFiles.subjectLine(String.valueOf(r.config().getOrDefault("input", ""))), new Font("SansSerif", Font.BOLD, 15), plot, true);
    chart.addSubtitle(new org.jfree.chart.title.TextTitle(String.format(Locale.ROOT, "%d cells tried, %d with OOMs (not drawn); lower left is better",
        r.cells().size(), ooms), new Font("SansSerif", Font.PLAIN, 12)));
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  private static double gib(TuneResults.Cell c) {
    return c.peakReservedBytes() / (double) Bytes.GiB;
  }

  private static double millis(TuneResults.Cell c) {
    return c.allocatorNanos() / 1e6;
  }

  /** Returns one cell's numbers as a table row. */
  static List<String> row(TuneResults.Cell c) {
    return List.of(Integer.toString(c.rank()), c.label(), Long.toString(c.oomCount()), Bytes.format(c.peakReservedBytes()),
        Bytes.format(c.peakAllocatedBytes()), String.format(Locale.ROOT, "%.3f ms", c.allocatorNanos() / 1e6),
        String.format(Locale.ROOT, "%.4f", c.peakExternalFragmentation()), c.phase(), c.onFront() ? "yes" : "");
  }

  static final List<String> HEADER = List.of("rank", "setting", "OOMs", "peak reserved", "peak allocated", "alloc time", "peak ext frag", "phase", "front");

  /** Returns {@code report.html}: the recommendation first, then the front chart, then every cell by rank. */
  static String html(TuneResults r, String svg) {
    StringBuilder out = new StringBuilder();
    String title = "tune " + r.allocator() + " on " + r.config().getOrDefault("input", "");
    out.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n").append(HtmlReport.GENERATOR).append('\n')
        .append("<title>kvsim report: ").append(Html.escape(title)).append("</title>\n<style>\n")
        .append("body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a}table{border-collapse:collapse;margin:1rem 0}")
        .append("th,td{border:1px solid #ccc;padding:.2rem .5rem}td.n{text-align:right}caption{text-align:left;font-weight:bold}")
        .append("pre{background:#f4f4f4;padding:.6rem;font-size:1.05rem}svg{max-width:100%;height:auto}\n</style>\n</head>\n<body>\n")
        .append("<h1>").append(Html.escape(title)).append("</h1>\n<h2>Recommendation</h2>\n<pre>").append(Html.escape(r.recommendation()))
        .append("</pre>\n");
    Html.table(out, "The recommendation beside the default", HEADER, List.of(row(r.best()), row(r.defaults())));
    out.append("<p>").append(Html.escape(String.valueOf(r.search().get("cells")))).append(" cells: ")
        .append(Html.escape(String.valueOf(r.search().get("grid_cells")))).append(" of the grid, ")
        .append(Html.escape(String.valueOf(r.search().get("refinement_cells")))).append(" of the refinement (")
        .append(Html.escape(String.valueOf(r.search().get("refinement")))).append("). Objective: no OOM, then the lowest peak reserved bytes, ")
        .append("then the lowest modelled allocator time.</p>\n<h2>Pareto front</h2>\n")
        .append(svg.replaceFirst("^<\\?xml[^>]*>\\s*", "")).append('\n');
    Html.table(out, "Pareto front of the cells without OOM", HEADER, r.frontCells().stream().map(TuneReport::row).toList());
    out.append("<h2>Cells</h2>\n");
    List<List<String>> rows = r.cells().stream().sorted(java.util.Comparator.comparingInt(TuneResults.Cell::rank)).map(TuneReport::row).toList();
    Html.table(out, "Every cell, by rank", HEADER, rows);
    out.append("</body>\n</html>\n");
    return out.toString();
  }

  /**
   * Writes the files of a serving-settings search into {@code dir}: {@code tune.json} ({@code json}
   * as given, with the format marker first), {@code tune.csv} (the table) and {@code report.html}
   * (the recommendation's lines first, then the table of cells).
   */
  public static void writeServing(Path dir, Map<String, Object> json, List<String> header, List<List<String>> rows, List<String> recommendation,
      String title) throws IOException {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("format", TuneResults.FORMAT);
    m.put("version", TuneResults.VERSION);
    m.putAll(json);
    byte[] bytes = (JSON.writeValueAsString(m) + "\n").getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(JSON_FILE), out -> out.write(bytes));
    StringBuilder csv = new StringBuilder(String.join(",", header)).append('\n');
    for (List<String> row : rows) {
      csv.append(String.join(",", row.stream().map(TuneReport::csvField).toList())).append('\n');
    }
    byte[] c = csv.toString().getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(CSV_FILE), out -> out.write(c));
    StringBuilder out = new StringBuilder();
    out.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n").append(HtmlReport.GENERATOR).append('\n')
        .append("<title>kvsim report: ").append(Html.escape(title)).append("</title>\n<style>\n")
        .append("body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a}table{border-collapse:collapse;margin:1rem 0}")
        .append("th,td{border:1px solid #ccc;padding:.2rem .5rem}td.n{text-align:right}caption{text-align:left;font-weight:bold}")
        .append("pre{background:#f4f4f4;padding:.6rem;font-size:1.05rem}\n</style>\n</head>\n<body>\n")
        .append("<h1>").append(Html.escape(title)).append("</h1>\n<h2>Recommendation</h2>\n<pre>");
    recommendation.forEach(l -> out.append(Html.escape(l)).append('\n'));
    out.append("</pre>\n<h2>Cells</h2>\n");
    Html.table(out, "Every cell, in the order run", header, rows);
    out.append("</body>\n</html>\n");
    byte[] html = out.toString().getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(HtmlReport.FILE), o -> o.write(html));
  }

  /** Prints the default, the recommendation, the front and the line to paste. */
  public static void print(PrintWriter out, TuneResults r) {
    List<List<String>> rows = new ArrayList<>();
    List<String> header = List.of(" ", "OOMs", "peak reserved", "alloc time", "setting");
    rows.add(brief("default", r.defaults()));
    rows.add(brief("recommended", r.best()));
    table(out, header, rows);
    out.println();
    out.println("Pareto front (cells without OOM: peak reserved against allocator time):");
    List<List<String>> f = new ArrayList<>();
    for (TuneResults.Cell c : r.frontCells()) {
      f.add(brief(c.order() == r.bestOrder() ? "*" : "", c));
    }
    table(out, header, f);
    out.println();
    out.println(r.recommendation());
  }

  private static void table(PrintWriter out, List<String> header, List<List<String>> rows) {
    List<String[]> all = new ArrayList<>();
    all.add(header.toArray(String[]::new));
    rows.forEach(r -> all.add(r.toArray(String[]::new)));
    TextTable.print(out, all, java.util.Set.of(0, header.size() - 1));
  }

  private static List<String> brief(String what, TuneResults.Cell c) {
    return List.of(what, Long.toString(c.oomCount()), Bytes.format(c.peakReservedBytes()), String.format(Locale.ROOT, "%.3f ms", c.allocatorNanos() / 1e6),
        c.label());
  }
}

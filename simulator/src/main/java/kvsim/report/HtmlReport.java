package kvsim.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.AtomicFiles;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.MemoryMap;
import kvsim.metrics.RunMetrics;
import java.util.function.Supplier;
import org.jfree.chart.JFreeChart;

/**
 * The HTML report of one or more result folders (drawn from the files alone, never by running
 * again: {@code simulator/ARCHITECTURE.md}, "Reports and the memory map"): one self-contained file,
 * with no script and nothing fetched, whose charts are inline SVG. Per folder: the configuration
 * echo, a summary table per allocator or system, and its charts: for an L1 run the fragmentation
 * chart and the memory map; for a serving run the KV breakdown as the vLLM paper's stacked bars and
 * over time, the latency CDFs and the batch size; for a capacity search its chart and probes. With
 * two or more folders a comparison comes first: one table over all runs and, for L1 runs, one
 * fragmentation chart over all of them.
 *
 * <p>Note [Accessible charts]: every chart is an {@code <svg role="img">} with a {@code <title>}
 * (its text alternative, which also says what the chart shows in numbers), a caption, and the data
 * it draws as a table in a {@code <details>} element below it. A report is deterministic: it shows
 * nothing from {@code timing.json}.
 */
public final class HtmlReport {
  /** The report's name inside a result folder. */
  public static final String FILE = "report.html";
  /** Marks a file as a kvsim report, so that {@code kvsim report -o} may replace it. */
  static final String GENERATOR = "<meta name=\"generator\" content=\"kvsim report\">";
  /** Rows of a chart's data table per series: enough to read the shape, small enough to scan. */
  private static final int TABLE_ROWS = 24;

  private final StringBuilder out = new StringBuilder();
  private int charts;
  /** The workload, model and device of the folder whose section is being written ({@link Headline#subject}), or null. */
  private String subject;
  /** A section placed before the folders' sections: a heading, paragraphs and a table; or null. */
  private Intro intro;
  /**
   * The charts of the one folder reported, being drawn for its files; or null, and then every chart
   * is drawn here. Only a report of one folder without an intro has them, so a comparison of
   * several folders (which draws charts of its own over all of them) never takes one.
   */
  private ChartJobs drawn;

  /** The opening section of a reproduction's report. */
  record Intro(String heading, List<String> paragraphs, List<String> header, List<List<String>> rows) {}

  private HtmlReport() {}

  /**
   * Writes the report of the folder {@code dir} into it as {@value #FILE}, titled {@code title}
   * (the result folder writers call this on their temporary folder, after every other file).
   */
  static void writeInto(Path dir, String title) throws IOException {
    writeInto(dir, title, null);
  }

  /**
   * Writes the report of the folder {@code dir} as {@link #writeInto(Path, String)} does, taking the
   * SVG of each of the folder's charts that {@code drawn} (or null) is drawing, instead of drawing it
   * again (Note [Charts off the critical path] on {@link ChartJobs}): the same bytes, sooner.
   */
  static void writeInto(Path dir, String title, ChartJobs drawn) throws IOException {
    writeLoaded(load(new Source(dir, title)), drawn);
  }

  /**
   * Writes the report of the replay folder {@code dir} as {@link #writeInto(Path, String, ChartJobs)}
   * does, from {@code read} and {@code maps} (null where the folder has no memory map), what its
   * files were just read back as by the folder's writer, instead of reading them a second time.
   */
  static void writeInto(Path dir, String title, ChartJobs drawn, RunResults read, List<MemoryMap> maps) throws IOException {
    writeLoaded(new Loaded(new Source(dir, title), ResultsReader.RUN_FORMAT, read, maps, null, null, null, null), drawn);
  }

  /**
   * Writes the report of the serving folder {@code dir} as {@link #writeInto(Path, String, ChartJobs)}
   * does, from {@code read}, what its files were just read back as by the folder's writer, instead
   * of reading them a second time.
   */
  static void writeInto(Path dir, String title, ChartJobs drawn, ServingResults read) throws IOException {
    writeLoaded(new Loaded(new Source(dir, title), ResultsReader.SERVING_FORMAT, null, null, null, read, null, null), drawn);
  }

  private static void writeLoaded(Loaded folder, ChartJobs drawn) throws IOException {
    byte[] html = build(List.of(folder), null, drawn).getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(folder.source().dir().resolve(FILE), o -> o.write(html));
  }

  /** A report file, recognised by its generator line (Note [Output rule] on {@code core.OutputFile}). */
  public static final OutputFile.Kind OUTPUT_KIND = new OutputFile.Kind("a report", HtmlReport::isReport);

  /**
   * Writes the report of {@code dirs} to {@code file}: a new file, or one an earlier report wrote
   * (anything else is refused unless {@code force}, and nothing is written unless the whole report
   * was built).
   */
  public static void write(Path file, List<Path> dirs, boolean force) throws IOException {
    write(file, dirs, null, force);
  }

  /**
   * Writes the report of {@code dirs} to {@code file}, naming each folder's runs by {@code labels}
   * (one per folder, from {@code --label}), or by {@link #defaultLabels} where null.
   */
  public static void write(Path file, List<Path> dirs, List<String> labels, boolean force) throws IOException {
    if (dirs.isEmpty()) {
      throw new InputException("report: name at least one result folder");
    }
    if (labels != null) {
      checkLabels(labels, dirs.size());
    }
    OutputFile target = OutputFile.of(file, OUTPUT_KIND, force, List.of()).check();
    List<String> names = labels != null ? labels : defaultLabels(dirs);
    List<Source> sources = new ArrayList<>();
    for (int i = 0; i < dirs.size(); i++) {
      sources.add(new Source(dirs.get(i), names.get(i)));
    }
    byte[] html = build(sources).getBytes(StandardCharsets.UTF_8);
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    target.write(o -> o.write(html));
  }

  /** A run folder's name as kvsim makes it: {@code <yyyyMMdd-HHmmss>-<name>}. */
  private static final java.util.regex.Pattern STAMPED = java.util.regex.Pattern.compile("\\d{8}-\\d{6}-(.+)");

  /**
   * Returns the names of folders' runs in a report: each folder's own name without kvsim's
   * timestamp prefix ({@code 20261126-051900-churn} is {@code churn}); where two are equal, the
   * second is {@code churn (2)}, the third {@code churn (3)}, in order.
   */
  static List<String> defaultLabels(List<Path> dirs) {
    List<String> out = new ArrayList<>();
    for (Path d : dirs) {
      String name = String.valueOf(d.toAbsolutePath().normalize().getFileName());
      java.util.regex.Matcher m = STAMPED.matcher(name);
      String label = m.matches() ? m.group(1) : name;
      String unique = label;
      for (int n = 2; out.contains(unique); n++) {
        unique = label + " (" + n + ")";
      }
      out.add(unique);
    }
    return out;
  }

  /** Checks {@code --label}'s names: one per folder, none empty, none twice. */
  static void checkLabels(List<String> labels, int folders) {
    if (labels.size() != folders) {
      throw new InputException("--label: " + labels.size() + " name" + (labels.size() == 1 ? "" : "s") + " for " + folders + " folder"
          + (folders == 1 ? "" : "s") + "; give one name per result folder, in order");
    }
    for (int i = 0; i < labels.size(); i++) {
      String l = labels.get(i);
      if (l.isBlank()) {
        throw new InputException("--label: name " + (i + 1) + " is empty");
      }
      if (labels.indexOf(l) != i) {
        throw new InputException("--label: '" + l + "' names two folders; each run needs its own name");
      }
    }
  }

  /** Returns a title for a folder's own report: its workload as given, from the configuration echo. */
  static String titleOf(Map<String, Object> config) {
    String subject = Headline.subject(config);
    return subject == null ? "this result folder" : subject;
  }

  private static boolean isReport(Path file) {
    try {
      if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
        return false;
      }
      byte[] head = new byte[512];
      int n;
      try (var in = Files.newInputStream(file)) {
        n = in.readNBytes(head, 0, head.length);
      }
      return new String(head, 0, n, StandardCharsets.UTF_8).contains(GENERATOR);
    } catch (IOException e) {
      return false;
    }
  }

  /** A folder and the name the report gives it. */
  private record Source(Path dir, String label) {}

  /** One folder read back, of whichever kind it is. */
  private record Loaded(Source source, String format, RunResults run, List<MemoryMap> maps, SweepResults sweep, ServingResults serving,
      CapacityResults capacity, SweepTableResults table) {
    /** Returns the folder's configuration echo. */
    Map<String, Object> config() {
      return run != null ? run.config() : sweep != null ? sweep.config() : serving != null ? serving.config()
          : capacity != null ? capacity.config() : table.config();
    }

    /** Returns the folder's one-sentence answer ({@link Headline}). */
    String headline() {
      return switch (format) {
        case ResultsReader.RUN_FORMAT -> Headline.allocators(run.results());
        case ResultsReader.SWEEP_FORMAT -> Headline.seedSweep(sweep);
        case ResultsReader.SERVING_FORMAT -> Headline.serving(serving);
        case SweepTable.FORMAT -> SweepChart.headline(table);
        default -> Headline.capacity(capacity);
      };
    }
  }

  private static Loaded load(Source s) {
    if (SweepChart.isSweepFolder(s.dir())) {
      return new Loaded(s, SweepTable.FORMAT, null, null, null, null, null, SweepTable.read(s.dir()));
    }
    String format = ResultsReader.formatOf(s.dir());
    return switch (format) {
      case ResultsReader.RUN_FORMAT -> new Loaded(s, format, ResultsReader.read(s.dir()),
          MemoryMapFile.exists(s.dir()) ? MemoryMapFile.read(s.dir()) : null, null, null, null, null);
      case ResultsReader.SWEEP_FORMAT -> new Loaded(s, format, null, null, ResultsReader.readSweep(s.dir()), null, null, null);
      case ResultsReader.SERVING_FORMAT -> new Loaded(s, format, null, null, null, ResultsReader.readServing(s.dir()), null, null);
      default -> new Loaded(s, format, null, null, null, null, ResultsReader.readCapacity(s.dir()), null);
    };
  }

  /**
   * Writes {@code dir/report.html}: the {@code intro} section, then the report of each result
   * folder {@code dir/NAME} of {@code subfolders} (a reproduction's folder).
   */
  static void writeWithIntro(Path dir, Intro intro, List<String> subfolders) throws IOException {
    List<Source> sources = new ArrayList<>();
    for (String name : subfolders) {
      sources.add(new Source(dir.resolve(name), name));
    }
    byte[] html = build(sources, intro).getBytes(StandardCharsets.UTF_8);
    AtomicFiles.write(dir.resolve(FILE), o -> o.write(html));
  }

  private static String build(List<Source> sources) throws IOException {
    return build(sources, null);
  }

  /** Builds the report of {@code sources}, in order, after {@code intro} (or none). */
  private static String build(List<Source> sources, Intro intro) throws IOException {
    List<Loaded> loaded = new ArrayList<>();
    for (Source s : sources) {
      loaded.add(load(s));
    }
    return build(loaded, intro, null);
  }

  /** Builds the report of the folders {@code loaded}, in order, after {@code intro} (or none), a single folder's charts taken from {@code drawn} where not null. */
  private static String build(List<Loaded> loaded, Intro intro, ChartJobs drawn) throws IOException {
    HtmlReport r = new HtmlReport();
    r.intro = intro;
    r.drawn = loaded.size() == 1 && intro == null ? drawn : null;
    r.page(loaded);
    return r.out.toString();
  }

  private void page(List<Loaded> runs) throws IOException {
    String title = intro != null ? intro.heading() : runs.size() == 1 ? runs.get(0).source().label() : runs.size() + " runs compared";
    out.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n").append(GENERATOR).append('\n')
        .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
        .append("<title>kvsim report: ").append(Html.escape(title)).append("</title>\n<style>\n").append(CSS).append("</style>\n</head>\n<body>\n")
        .append("<header><h1>kvsim report</h1><p>").append(Html.escape(title))
        .append(". Drawn from the result files alone; every chart has a text alternative and its data as a table.</p></header>\n<main>\n");
    String headline = intro != null ? null : runs.size() == 1 ? runs.get(0).headline() : comparisonHeadline(runs);
    if (headline != null) {
      out.append("<p class=\"headline\">").append(Html.escape(headline)).append("</p>\n");
    }
    if (intro != null) {
      out.append("<section aria-labelledby=\"intro\">\n<h2 id=\"intro\">").append(Html.escape(intro.heading())).append("</h2>\n");
      for (String p : intro.paragraphs()) {
        out.append("<p>").append(Html.escape(p)).append("</p>\n");
      }
      Html.table(out, "kvsim's numbers beside the published ones", intro.header(), intro.rows());
      out.append("</section>\n");
    } else if (runs.size() > 1) {
      comparison(runs);
    }
    for (int i = 0; i < runs.size(); i++) {
      Loaded l = runs.get(i);
      out.append("<section aria-labelledby=\"run").append(i).append("\">\n<h2 id=\"run").append(i).append("\">")
          .append(Html.escape(kind(l.format()) + ": " + l.source().label())).append("</h2>\n");
      subject = Headline.subject(l.config());
      if (subject != null && !subject.equals(l.source().label())) {
        out.append("<p class=\"subject\">").append(Html.escape(subject.substring(0, 1).toUpperCase(Locale.ROOT) + subject.substring(1)))
            .append(".</p>\n");
      }
      if (runs.size() > 1 || intro != null) {
        out.append("<p class=\"headline\">").append(Html.escape(l.headline())).append("</p>\n");
      }
      switch (l.format()) {
        case ResultsReader.RUN_FORMAT -> run(l);
        case ResultsReader.SWEEP_FORMAT -> sweep(l);
        case ResultsReader.SERVING_FORMAT -> serving(l);
        case SweepTable.FORMAT -> SweepChart.section(this, l.table());
        default -> capacity(l);
      }
      out.append("</section>\n");
    }
    subject = null;
    out.append("</main>\n</body>\n</html>\n");
  }

  private static String kind(String format) {
    return switch (format) {
      case ResultsReader.RUN_FORMAT -> "Allocator run";
      case ResultsReader.SWEEP_FORMAT -> "Seed sweep";
      case ResultsReader.SERVING_FORMAT -> "Serving run";
      case SweepTable.FORMAT -> "Sweep";
      default -> "Capacity search";
    };
  }

  // ---- comparison of several folders

  /** Returns the headline over several folders: over all their allocator runs, else all their serving systems, else the first folder's. */
  private static String comparisonHeadline(List<Loaded> runs) {
    List<AllocatorResult> all = new ArrayList<>();
    List<Map<String, Object>> systems = new ArrayList<>();
    for (Loaded l : runs) {
      if (l.run() != null) {
        for (AllocatorResult a : l.run().results()) {
          all.add(renamed(a, l.source().label() + ": " + a.allocator()));
        }
      }
      if (l.serving() != null) {
        for (Map<String, Object> s : l.serving().systems()) {
          Map<String, Object> m = new LinkedHashMap<>(s);
          m.put("system", l.source().label() + ": " + ServingResults.label(s));
          systems.add(m);
        }
      }
    }
    if (!all.isEmpty()) {
      return "Over " + runs.size() + " runs: " + lowerFirst(Headline.allocators(all));
    }
    if (!systems.isEmpty()) {
      ServingResults merged = ServingResults.of(Map.of(), Map.of(), systems, List.of("t_ns"), Map.of(), List.of(), Map.of());
      return "Over " + runs.size() + " runs: " + lowerFirst(Headline.serving(merged));
    }
    return runs.get(0).source().label() + ": " + runs.get(0).headline();
  }

  private static String lowerFirst(String s) {
    return s.isEmpty() || s.length() > 1 && Character.isUpperCase(s.charAt(1)) ? s : Character.toLowerCase(s.charAt(0)) + s.substring(1);
  }

  private static AllocatorResult renamed(AllocatorResult a, String name) {
    return new AllocatorResult(name, a.options(), a.counters(), a.summaries(), a.modelledAllocatorNanos(), a.activationOomCount(), a.extra(),
        a.samples());
  }

  private void comparison(List<Loaded> runs) {
    out.append("<section aria-labelledby=\"cmp\">\n<h2 id=\"cmp\">Comparison</h2>\n");
    List<AllocatorResult> all = new ArrayList<>();
    List<List<String>> rows = new ArrayList<>();
    List<String> header = null;
    for (Loaded l : runs) {
      if (l.run() == null) {
        continue;
      }
      List<String[]> t = TextTable.comparisonRows(l.run().results());
      if (header == null) {
        header = new ArrayList<>(List.of("run"));
        header.addAll(List.of(t.get(0)));
      }
      for (int k = 1; k < t.size(); k++) {
        List<String> row = new ArrayList<>(List.of(l.source().label()));
        row.addAll(List.of(t.get(k)));
        rows.add(row);
      }
      for (AllocatorResult a : l.run().results()) {
        all.add(renamed(a, l.source().label() + ": " + a.allocator()));
      }
    }
    if (header != null) {
      Html.table(out, "Allocator runs side by side", header, rows);
      fragmentationFigure(all, "External fragmentation and memory of every allocator of every run");
    }
    List<Map<String, Object>> systems = new ArrayList<>();
    Map<String, List<double[]>> series = new LinkedHashMap<>();
    Map<String, List<double[]>> quantiles = new LinkedHashMap<>();
    List<String> columns = null;
    List<String> quantileColumns = List.of();
    List<List<String>> servingRows = new ArrayList<>();
    for (Loaded l : runs) {
      if (l.serving() == null) {
        continue;
      }
      columns = l.serving().seriesColumns();
      if (!l.serving().quantileColumns().isEmpty()) {
        quantileColumns = l.serving().quantileColumns();
      }
      for (Map<String, Object> s : l.serving().systems()) {
        String name = l.source().label() + ": " + ServingResults.label(s);
        Map<String, Object> renamed = new LinkedHashMap<>(s);
        renamed.put("system", name);
        systems.add(renamed);
        series.put(name, l.serving().series().get(ServingResults.label(s)));
        List<double[]> q = l.serving().quantiles().get(ServingResults.label(s));
        if (q != null) {
          quantiles.put(name, q);
        }
        servingRows.add(servingRow(renamed));
      }
    }
    if (!systems.isEmpty()) {
      ServingResults merged = ServingResults.of(Map.of(), Map.of(), systems, columns, series, quantileColumns, quantiles);
      Html.table(out, "Serving systems of every run side by side", SERVING_HEADER, servingRows);
      breakdownFigure(merged);
      if (!quantiles.isEmpty() && quantiles.size() == systems.size()) {
        cdfFigure(merged);
      }
    }
    if (header == null && systems.isEmpty()) {
      out.append("<p>No allocator or serving runs among these folders to compare; each is shown below.</p>\n");
    }
    out.append("</section>\n");
  }

  // ---- an L1 run

  private void run(Loaded l) {
    config(l.run().config());
    List<String[]> t = TextTable.comparisonRows(l.run().results());
    Html.table(out, "Summary per allocator (exact over every event)", List.of(t.get(0)), rowsOf(t.subList(1, t.size())));
    fragmentationFigure(l.run().results(), "External fragmentation and memory over the run");
    if (l.maps() == null) {
      out.append("<p>This folder has no ").append(MemoryMapFile.FILE)
          .append(" (it was written before kvsim recorded memory maps), so the report has no memory map; run again to get one.</p>\n");
    } else {
      memoryMapFigure(l.maps());
    }
    gpuComparison(l.source().dir());
  }

  /** The name of a GPU replay's table of measured and modelled figures ({@code results/SCHEMA.md}, "A GPU replay's folder"). */
  public static final String GPU_COMPARISON_FILE = "gpu-comparison.csv";

  /** A GPU replay's folder: its measured figures beside the model's, from {@link #GPU_COMPARISON_FILE}. */
  private void gpuComparison(Path dir) {
    Path file = dir.resolve(GPU_COMPARISON_FILE);
    if (!Files.isRegularFile(file)) {
      return;
    }
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (lines.isEmpty() || !lines.get(0).equals("metric,measured,modelled")) {
      throw new InputException(file + ": line 1: expected the header metric,measured,modelled");
    }
    List<List<String>> rows = new ArrayList<>();
    for (int i = 1; i < lines.size(); i++) {
      String[] cells = lines.get(i).split(",", -1);
      if (cells.length != 3) {
        throw new InputException(file + ": line " + (i + 1) + ": expected 3 fields, got " + cells.length);
      }
      rows.add(List.of(cells));
    }
    Html.table(out, "Measured on the GPU beside the model (" + GPU_COMPARISON_FILE + ")", List.of("metric", "measured", "modelled"), rows);
  }

  private void fragmentationFigure(List<AllocatorResult> results, String caption) {
    int extCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("external_fragmentation");
    int allocCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("allocated_bytes");
    int resCol = 2 + RunMetrics.SAMPLE_COLUMNS.indexOf("reserved_bytes");
    StringBuilder alt = new StringBuilder("Line charts over events: external fragmentation (0 to 1) on top, allocated and reserved GiB below. ");
    List<List<String>> rows = new ArrayList<>();
    for (AllocatorResult r : results) {
      Double peak = r.summaries().get("external_fragmentation").peak();
      Double mean = r.summaries().get("external_fragmentation").mean();
      alt.append(r.allocator()).append(": peak ").append(ratio(peak)).append(", mean ").append(ratio(mean))
          .append(", peak allocated ").append(gib(r.summaries().get("allocated_bytes").peak())).append(". ");
      for (double[] row : thin(r.samples())) {
        rows.add(List.of(r.allocator(), Long.toString((long) row[0]), Double.isNaN(row[extCol]) ? "-" : String.format(Locale.ROOT, "%.4f", row[extCol]),
            gib(row[allocCol]), gib(row[resCol])));
      }
    }
    figure(FragmentationChart.SVG_FILE, () -> FragmentationChart.build(results, subject), 1200, 800, caption, alt.toString(), "Sampled rows (a few per allocator) of timeseries.csv",
        List.of("allocator", "event", "external fragmentation", "allocated (GiB)", "reserved (GiB)"), rows);
  }

  private void memoryMapFigure(List<MemoryMap> maps) {
    StringBuilder alt = new StringBuilder("Memory map, one panel per allocator: address in GiB against the event, each allocation a rectangle coloured by tag ("
        + String.join(", ", MemoryMapChart.tags(maps)) + "), red triangles where refusals happened; a last panel shows the live GiB of the small allocations too small to draw. ");
    boolean virtual = false;
    for (MemoryMap m : maps) {
      virtual |= (m.addressMaxBytes() - m.addressMinBytes()) / (double) Bytes.GiB > 1024;
    }
    if (virtual) {
      alt.append(MemoryMapChart.VIRTUAL_NOTE).append(' ');
    }
    List<List<String>> rows = new ArrayList<>();
    for (MemoryMap m : maps) {
      alt.append(m.allocator()).append(": ").append(m.rectangles().size()).append(" of ").append(m.rectanglesSeen())
          .append(" allocation extents drawn, ").append(m.oomTotal()).append(" refusals. ");
      List<MemoryMap.Rectangle> largest = new ArrayList<>(m.rectangles());
      largest.sort(Comparator.comparingDouble((MemoryMap.Rectangle r) -> -(double) r.sizeBytes() * (r.endEvent() - r.startEvent()))
          .thenComparingLong(MemoryMap.Rectangle::startEvent).thenComparingLong(MemoryMap.Rectangle::addressBytes));
      for (MemoryMap.Rectangle r : largest.subList(0, Math.min(8, largest.size()))) {
        rows.add(List.of(m.allocator(), m.tags().get(r.tagIndex()), gib(r.addressBytes()), Bytes.format(r.sizeBytes()),
            Long.toString(r.startEvent()), r.endEvent() > m.events() ? "live at the end" : Long.toString(r.endEvent())));
      }
    }
    figure(MemoryMapChart.SVG_FILE, () -> MemoryMapChart.build(maps, subject), MemoryMapChart.WIDTH, MemoryMapChart.height(maps), "Memory map (address over events, as PyTorch's memory_viz)",
        alt.toString(), "The largest rectangles (bytes × events) of each allocator",
        List.of("allocator", "tag", "address (GiB)", "size", "allocated at event", "freed at event"), rows);
    List<List<String>> totals = new ArrayList<>();
    for (MemoryMap m : maps) {
      long bins = 0;
      for (long c : m.oomCounts()) {
        bins += c > 0 ? 1 : 0;
      }
      totals.add(List.of(m.allocator(), Long.toString(m.rectanglesSeen()), Integer.toString(m.rectangles().size()), Long.toString(m.elidedCount()),
          String.format(Locale.ROOT, "%.4g", m.minAreaByteEvents()), Long.toString(m.binEvents()), Long.toString(m.oomTotal()), Long.toString(bins)));
    }
    Html.table(out, "What the memory map holds (at most " + (maps.isEmpty() ? 0 : maps.get(0).maxRectangles())
            + " rectangles per allocator; smaller ones are not drawn but counted in the band of small allocations, see results/SCHEMA.md)",
        List.of("allocator", "extents recorded", "drawn", "too small to draw", "min. area drawn (byte-events)", "bin (events)", "refusals", "bins with refusals"), totals);
    for (MemoryMap m : maps) {
      MemoryMap.OomSnapshot o = m.oomSnapshot();
      if (o != null) {
        // The file's path is relative to the result folder, where this report lies (--snapshot-at-oom).
        out.append("<p class=\"oom-snapshot\">").append(Html.escape(m.allocator())).append(": Snapshot at first OOM: <a href=\"")
            .append(Html.escape(o.file())).append("\">").append(Html.escape(o.file())).append("</a>, open in memory_viz (event ").append(o.event())
            .append(", ").append(Html.escape(Bytes.format(o.sizeBytes()))).append(" refused, ").append(Html.escape(o.reason()))
            .append("; the dashed line on the memory map).</p>\n");
      }
    }
  }

  // ---- a seed sweep

  private void sweep(Loaded l) {
    config(l.sweep().config());
    List<List<String>> rows = new ArrayList<>();
    for (SweepResults.Entry e : l.sweep().entries()) {
      e.sweep().forEach((metric, st) -> rows.add(List.of(e.allocator(), Headline.metricName(metric),
          st == null ? "-" : Headline.humanise(metric, st.median()), st == null ? "-" : Headline.humanise(metric, st.p10()),
          st == null ? "-" : Headline.humanise(metric, st.p90()), st == null ? "-" : Headline.humanise(metric, st.mean()),
          (st == null ? 0 : st.defined()) + "/" + l.sweep().seeds().size())));
    }
    Html.table(out, "Headline metrics over " + l.sweep().seeds().size() + " seeds (bytes in binary units; fragmentation a fraction of the memory)",
        List.of("allocator", "metric", "median", "p10", "p90", "mean", "seeds defining it"), rows);
  }

  // ---- a serving run

  private static final List<String> SERVING_HEADER = List.of("system", "finished", "rejected", "tokens/s", "TTFT p50 (s)", "TPOT p50 (s)",
      "norm. latency mean (s/token)", "batch mean", "preemptions", "token states", "reserved (future tokens)", "internal fragmentation",
      "external fragmentation", "idle");

  @SuppressWarnings("unchecked")
  private static List<String> servingRow(Map<String, Object> s) {
    return List.of(ServingResults.label(s), str(s.get("requests_finished")), str(s.get("requests_rejected")), num(s.get("throughput_tokens_per_second")),
        num(stat(s, "ttft_seconds", "p50")), num(stat(s, "tpot_seconds", "p50")), num(stat(s, "normalized_latency_seconds_per_token", "mean")),
        num(s.get("batch_size_mean")), str(s.get("preemptions")), share(s, "token_states"), share(s, "reserved_future"),
        legacy(s) ? share(s, "internal_waste") : share(s, "internal_fragmentation"),
        legacy(s) ? share(s, "external_waste") + " (idle included)" : share(s, "external_fragmentation"), legacy(s) ? "-" : share(s, "idle"));
  }

  /** Returns whether an entry was written before idle memory was told apart from external waste. */
  private static boolean legacy(Map<String, Object> s) {
    return !Double.isNaN(ServingCharts.meanShare(s, "external_waste"));
  }

  private void serving(Loaded l) {
    ServingResults r = l.serving();
    config(r.config());
    List<List<String>> rows = new ArrayList<>();
    for (Map<String, Object> s : r.systems()) {
      rows.add(servingRow(s));
    }
    Html.table(out, "Summary per system (latencies in seconds; KV shares are time-weighted means over the whole run, first arrival to last finish)",
        SERVING_HEADER, rows);
    ServingOomLinks.html(out, l.source().dir()); // --snapshot-at-oom: the files, linked
    if (SloTable.present(r)) {
      Html.table(out, "SLO attainment (share of all arrived requests that finished within every per-request target) and goodput over the run's span",
          SloTable.htmlHeader(r), r.entries().stream().map(SloTable::htmlRow).toList());
    }
    SeedSection.serving(out, r); // a run over seeds: its intervals
    breakdownFigure(r);
    kvOverTimeFigure(r);
    if (r.quantiles().isEmpty()) {
      out.append("<p>This folder has no ").append(ResultsReader.QUANTILES_FILE)
          .append(" (written before kvsim kept latency distributions), so the report has no latency CDFs; run again to get them.</p>\n");
    } else {
      cdfFigure(r);
    }
    batchFigure(r);
  }

  private void breakdownFigure(ServingResults r) {
    ServingCharts.Categories categories = ServingCharts.categoriesOf(r);
    if (categories == ServingCharts.LEGACY || r.entries().stream().anyMatch(e -> e.kvBreakdownSteady() == null)) {
      StringBuilder alt = new StringBuilder("Stacked bars, one per system, of the KV memory's time-weighted mean share by use. ");
      List<List<String>> rows = new ArrayList<>();
      for (Map<String, Object> s : r.systems()) {
        alt.append(ServingResults.label(s)).append(":");
        List<String> row = new ArrayList<>(List.of(ServingResults.label(s)));
        for (int i = 0; i < categories.size(); i++) {
          String v = share(s, categories.names().get(i));
          alt.append(' ').append(categories.labels().get(i)).append(' ').append(v).append(i + 1 < categories.size() ? "," : ".");
          row.add(v);
        }
        alt.append(' ');
        rows.add(row);
      }
      List<String> header = new ArrayList<>(List.of("system"));
      header.addAll(categories.labels());
      figure(ServingCharts.BARS_FILE + ".svg", () -> ServingCharts.breakdownBars(r, subject), ServingCharts.WIDTH, ServingCharts.BARS_HEIGHT, "KV memory by use (the vLLM paper's Fig. 2)",
          alt.toString(), "Time-weighted mean share of the KV memory (%)", header, rows);
      return;
    }
    StringBuilder alt = new StringBuilder("Stacked bars, two per system (the whole run and the steady window), of the KV memory's time-weighted mean share "
        + "by use, idle memory on top. ");
    List<List<String>> rows = new ArrayList<>();
    for (ServingResults.Entry e : r.entries()) {
      for (ServingResults.Breakdown b : List.of(e.kvBreakdown(), e.kvBreakdownSteady())) {
        ServingResults.Window w = b.window();
        String window = w == null ? "-" : w.kind();
        alt.append(e.label()).append(", ").append(window).append(":");
        List<String> row = new ArrayList<>(List.of(e.label(), window, w == null ? "-" : num(w.fromSeconds()), w == null ? "-" : num(w.toSeconds())));
        for (int i = 0; i < categories.size(); i++) {
          Double v = b.mean(categories.names().get(i));
          alt.append(' ').append(categories.labels().get(i)).append(' ').append(percent(v)).append(i + 1 < categories.size() ? "," : ";");
          row.add(percent(v));
        }
        for (String c : ServingCharts.CURRENT.names().subList(0, 4)) {
          row.add(percent(b.usedMemory().get(c)));
        }
        alt.append(" of the memory in use, token states ").append(percent(b.usedMemory().get("token_states"))).append(". ");
        rows.add(row);
      }
    }
    List<String> header = new ArrayList<>(List.of("system", "window", "from (s)", "to (s)"));
    header.addAll(categories.labels());
    for (String label : categories.labels().subList(0, 4)) {
      header.add("in use: " + label);
    }
    figure(ServingCharts.BARS_FILE + ".svg", () -> ServingCharts.breakdownBars(r, subject), ServingCharts.WIDTH, ServingCharts.BARS_HEIGHT,
        "KV memory by use (the vLLM paper's Fig. 2), over the whole run (first arrival to last finish) and the steady state (from the arrival of the "
            + "first tenth of the requests to the last arrival)",
        alt.toString(), "Time-weighted mean share of the KV memory (%), and of the memory in use (idle excluded: the shares to compare with the paper's bars)",
        header, rows);
  }

  private static String percent(Double v) {
    return v == null ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * v);
  }

  private void kvOverTimeFigure(ServingResults r) {
    ServingCharts.Categories categories = ServingCharts.categoriesOf(r.seriesColumns());
    int time = r.seriesColumns().indexOf("t_ns");
    List<List<String>> rows = new ArrayList<>();
    for (Map.Entry<String, List<double[]>> e : r.series().entrySet()) {
      for (double[] row : thin(e.getValue())) {
        List<String> cells = new ArrayList<>(List.of(e.getKey(), String.format(Locale.ROOT, "%.3f", row[time] / 1e9)));
        for (String c : categories.names()) {
          cells.add(String.format(Locale.ROOT, "%.1f", 100 * row[r.seriesColumns().indexOf(c)]));
        }
        rows.add(cells);
      }
    }
    List<String> header = new ArrayList<>(List.of("system", "time (s)"));
    categories.labels().forEach(c -> header.add(c + " (%)"));
    String alt = categories == ServingCharts.LEGACY
        ? "Stacked areas, one panel per system, of the KV memory's share by use (token states, reserved for future tokens, internal and external "
            + "fragmentation) over simulated seconds."
        : "Stacked areas, one panel per system, of the KV memory's share by use (token states, reserved for future tokens, internal and external "
            + "fragmentation, idle) over simulated seconds; dashed lines mark the steady window.";
    figure(ServingChart.SVG_FILE, () -> ServingChart.build(r, subject), 1200, 120 + 220 * Math.max(1, r.series().size()), "KV memory by use over time", alt,
        "Sampled iterations of timeseries.csv", header, rows);
  }

  private void cdfFigure(ServingResults r) {
    StringBuilder alt = new StringBuilder("Cumulative distributions of TTFT, TPOT and normalized latency, one line per system. Medians: ");
    List<List<String>> rows = new ArrayList<>();
    double[] shown = {0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0};
    int ttft = r.quantileColumn("ttft_seconds");
    int tpot = r.quantileColumn("tpot_seconds");
    int norm = r.quantileColumn("normalized_latency_seconds_per_token");
    for (Map.Entry<String, List<double[]>> e : r.quantiles().entrySet()) {
      List<double[]> q = e.getValue();
      double[] median = q.get(q.size() / 2);
      alt.append(e.getKey()).append(" TTFT ").append(num(median[ttft])).append(" s, TPOT ").append(num(median[tpot]))
          .append(" s, normalized ").append(num(median[norm])).append(" s/token; ");
      for (double p : shown) {
        double[] row = q.get((int) Math.round(p * (q.size() - 1)));
        rows.add(List.of(e.getKey(), String.format(Locale.ROOT, "%.2f", p), num(row[ttft]), num(row[tpot]), num(row[norm])));
      }
    }
    figure(ServingCharts.CDF_FILE + ".svg", () -> ServingCharts.latencyCdf(r, subject), ServingCharts.WIDTH, ServingCharts.CDF_HEIGHT, "Latency CDFs", alt.toString(),
        "Quantiles of latency-quantiles.csv (seconds)", List.of("system", "quantile", "TTFT (s)", "TPOT (s)", "normalized latency (s/token)"), rows);
  }

  private void batchFigure(ServingResults r) {
    int time = r.seriesColumns().indexOf("t_ns");
    int batch = r.seriesColumns().indexOf("batch_size");
    StringBuilder alt = new StringBuilder("Line chart of the batch size (sequences per iteration) over simulated seconds, one line per system. Means: ");
    for (Map<String, Object> s : r.systems()) {
      alt.append(ServingResults.label(s)).append(' ').append(num(s.get("batch_size_mean"))).append("; ");
    }
    List<List<String>> rows = new ArrayList<>();
    for (Map.Entry<String, List<double[]>> e : r.series().entrySet()) {
      for (double[] row : thin(e.getValue())) {
        rows.add(List.of(e.getKey(), String.format(Locale.ROOT, "%.3f", row[time] / 1e9), Long.toString((long) row[batch])));
      }
    }
    figure(ServingCharts.BATCH_FILE + ".svg", () -> ServingCharts.batchSize(r, subject), ServingCharts.WIDTH, ServingCharts.BATCH_HEIGHT, "Batch size over time", alt.toString(),
        "Sampled iterations of timeseries.csv", List.of("system", "time (s)", "batch size"), rows);
  }

  // ---- a capacity search

  private void capacity(Loaded l) throws IOException {
    CapacityResults c = l.capacity();
    config(c.config());
    List<List<String>> rows = new ArrayList<>();
    List<List<String>> probes = new ArrayList<>();
    List<String> none = new ArrayList<>();
    for (CapacityResults.SystemEntry s : c.systems()) {
      String system = s.system();
      boolean met = s.anyMet();
      rows.add(List.of(system, met ? num(s.maxRateRps()) : "none", num(s.goodputRps()), notFinished(s.requests(), s.finished()),
          str(s.atUpperBound())));
      if (!met && !s.unmetAtMinRate().isEmpty()) {
        none.add(system + ": the lowest rate probed misses " + String.join(", ", s.unmetAtMinRate()) + " (" + notFinished(s.requests(), s.finished())
            + " not finished there)");
      }
      for (CapacityResults.Probe p : s.probes()) {
        probes.add(List.of(system, num(p.rateRps()), str(p.met()), num(p.goodputRps()), notFinished(p.requests(), p.finished()),
            str(p.valuesSeconds()) + (p.attainment() == null ? "" : "; attainment " + num(p.attainment()))));
      }
    }
    Object allowed = c.config().get("rejected_fraction_allowed");
    Html.table(out, "Highest request rate meeting every target (" + c.targets() + (allowed instanceof Number && !c.targets().stream()
        .anyMatch(t -> String.valueOf(t).startsWith("rejected")) ? ", and every request finished" : "") + ")",
        List.of("system", "max rate (req/s)", "goodput (req/s)", "not finished", "at upper bound"), rows);
    for (String n : none) {
      out.append("<p>").append(Html.escape(n)).append("</p>\n");
    }
    SeedSection.capacity(out, l.source().dir()); // a search over seeds: its intervals
    // The chart is drawn again from summary.json, not taken from capacity.svg: the report needs the folder's data files only.
    String id = "c" + (++charts);
    boolean attainment = c.latencyTargets().isEmpty();
    out.append("<figure>\n<figcaption>").append(attainment ? "SLO attainment" : "Latency")
        .append(" against request rate, each system's highest rate within the targets marked</figcaption>\n");
    String alt = "Line chart of " + (attainment ? "the SLO attainment" : "the first latency target's value")
        + " against the request rate (zoomed to the rates found), one line per system through its "
        + "probes, the target dashed, each system's highest rate within the targets a vertical line labelled with it; the legend gives each system's "
        + "highest rate, its goodput and the share of requests not finished there.";
    out.append(inlineSvg(CapacityChart.SVG_FILE, () -> CapacityChart.build(c, subject), CapacityChart.WIDTH, CapacityChart.HEIGHT, id, alt)).append('\n')
        .append("<p class=\"alt\">").append(Html.escape(alt)).append("</p>\n");
    out.append("<details><summary>Data: every probe</summary>\n");
    Html.table(out, "Probes", List.of("system", "rate (req/s)", "met", "goodput (req/s)", "not finished", "values (s)"), probes);
    out.append("</details>\n</figure>\n");
  }

  // ---- pieces

  private void config(Map<String, Object> config) {
    String text;
    try {
      text = JsonTrees.prettyString(config); // as ResultsWriter.json().writeValueAsString(config)
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.append("<details><summary>Configuration</summary>\n<pre>").append(Html.escape(text)).append("</pre>\n</details>\n");
  }

  /** Appends a table ({@link Html#table}). */
  void table(String caption, List<String> header, List<List<String>> rows) {
    Html.table(out, caption, header, rows);
  }

  /** Appends a paragraph of plain text. */
  void note(String text) {
    out.append("<p>").append(Html.escape(text)).append("</p>\n");
  }

  void figure(JFreeChart chart, int width, int height, String caption, String alt, String tableCaption, List<String> header,
      List<List<String>> rows) {
    figure(null, () -> chart, width, height, caption, alt, tableCaption, header, rows);
  }

  /**
   * Appends a figure: the chart {@code chart} builds, inline, under {@code caption}, then {@code
   * alt} and the data table; where {@code svgFile} is not null and the folder's own charts are being
   * drawn ({@link #drawn}), the SVG drawn for that file instead of drawing the chart again.
   */
  private void figure(String svgFile, Supplier<JFreeChart> chart, int width, int height, String caption, String alt, String tableCaption,
      List<String> header, List<List<String>> rows) {
    String id = "c" + (++charts);
    out.append("<figure>\n<figcaption>").append(Html.escape(caption)).append("</figcaption>\n")
        .append(inlineSvg(svgFile, chart, width, height, id, alt)).append('\n')
        .append("<p class=\"alt\">").append(Html.escape(alt)).append("</p>\n<details><summary>Data: ").append(Html.escape(tableCaption))
        .append("</summary>\n");
    Html.table(out, tableCaption, header, rows);
    out.append("</details>\n</figure>\n");
  }

  /** Returns a chart as an inline {@code <svg>} ({@link ChartFiles#inlineSvg}): drawn for {@code svgFile} where {@link #drawn} has it, else drawn here. */
  private String inlineSvg(String svgFile, Supplier<JFreeChart> chart, int width, int height, String id, String alt) {
    ChartFiles.Svg svg = drawn != null && svgFile != null ? drawn.svg(svgFile, width, height) : null;
    return svg != null ? svg.inline(id, alt) : ChartFiles.inlineSvg(chart.get(), width, height, id, alt);
  }

  /** At most {@link #TABLE_ROWS} evenly spaced rows, the last included. */
  private static List<double[]> thin(List<double[]> rows) {
    if (rows.size() <= TABLE_ROWS) {
      return rows;
    }
    List<double[]> out = new ArrayList<>();
    for (int i = 0; i < TABLE_ROWS; i++) {
      out.add(rows.get((int) ((long) i * (rows.size() - 1) / (TABLE_ROWS - 1))));
    }
    return out;
  }

  private static List<List<String>> rowsOf(List<String[]> rows) {
    List<List<String>> out = new ArrayList<>();
    rows.forEach(r -> out.add(List.of(r)));
    return out;
  }

  @SuppressWarnings("unchecked")
  private static Object stat(Map<String, Object> s, String metric, String stat) {
    return s.get(metric) instanceof Map<?, ?> m ? ((Map<String, Object>) m).get(stat) : null;
  }

  private static String share(Map<String, Object> s, String category) {
    double v = ServingCharts.meanShare(s, category);
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * v);
  }

  private static String str(Object o) {
    return o == null ? "-" : o.toString();
  }

  /** Returns a capacity answer's or probe's requests not finished as {@code "416 of 1000 (41.6 %)"}, {@code "0"}, or "-" where not recorded. */
  private static String notFinished(long requests, long finished) {
    long n = requests - finished;
    return n == 0 ? "0" : n + " of " + requests + " (" + String.format(Locale.ROOT, "%.1f %%", 100.0 * n / requests) + ")";
  }

  private static String num(Object o) {
    if (!(o instanceof Number n) || Double.isNaN(n.doubleValue())) {
      return "-";
    }
    double v = n.doubleValue();
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : String.format(Locale.ROOT, "%.4g", v);
  }

  private static String ratio(Double v) {
    return v == null ? "-" : String.format(Locale.ROOT, "%.4f", v);
  }

  private static String gib(double bytes) {
    return String.format(Locale.ROOT, "%.2f", bytes / Bytes.GiB);
  }

  private static String gib(Double bytes) {
    return bytes == null ? "-" : gib(bytes.doubleValue()) + " GiB";
  }

  private static final String CSS = """
      body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1a1a1a;background:#fff;line-height:1.45}
      header{background:#20344c;color:#fff;padding:1rem 2rem}
      header h1{margin:0;font-size:1.6rem}
      main{padding:0 2rem 3rem;max-width:1280px}
      h2{border-bottom:2px solid #20344c;padding-bottom:.2rem;margin-top:2.2rem}
      figure{margin:1.2rem 0;padding:.6rem;border:1px solid #ddd;border-radius:4px}
      figcaption{font-weight:600;margin-bottom:.4rem}
      p.alt{font-size:.9rem;color:#444}
      p.headline{font-size:1.15rem;font-weight:600;background:#f3f6fa;border-left:4px solid #20344c;padding:.5rem .8rem}
      p.subject{color:#333}
      table{border-collapse:collapse;margin:.8rem 0;font-size:.85rem}
      caption{text-align:left;font-weight:600;padding:.3rem 0}
      th,td{border:1px solid #ccc;padding:.2rem .5rem}
      thead th{background:#eef2f6}
      tbody th{text-align:left;font-weight:normal}
      td.n{text-align:right;font-variant-numeric:tabular-nums}
      pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:18rem;font-size:.8rem}
      details summary{cursor:pointer;color:#20344c}
      """;
}

package kvsim.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import kvsim.metrics.Interval;
import kvsim.metrics.SeedStats;

/**
 * A sweep's table grouped over seeds: one group per cell with its seed left out, each metric as
 * its median over the seeds with the order-statistic interval of the median (Note [The seed
 * interval] on {@code metrics.Interval}); the file {@value #CSV_FILE} and the table {@code kvsim
 * sweep} prints when the grid has more than one seed (results/SCHEMA.md, "sweep-seeds.csv").
 *
 * <p>A column is a metric when some row holds a number in it; the other columns (text: workload,
 * allocator or system, options, seed) are the cell's parameters.
 *
 * @param parameters the parameter columns, {@code seed} left out
 * @param metrics the metric columns
 * @param seeds the distinct seeds, in order (empty where the grid has none)
 * @param groups one per cell without its seed, in the order of first appearance
 */
public record SweepTableSeeds(List<String> parameters, List<String> metrics, List<String> seeds, List<Group> groups) {
  /** The grouped table as CSV, beside {@code sweep.csv}. */
  public static final String CSV_FILE = "sweep-seeds.csv";

  /**
   * One cell over its seeds.
   *
   * @param label its parameters as {@code KEY=VALUE} separated by spaces
   * @param parameters the value of each parameter column
   * @param perSeed each seed's metric values, in the table's order
   */
  public record Group(String label, Map<String, String> parameters, List<Map<String, Object>> perSeed) {
    /** Returns each metric's median and interval over the seeds that defined it. */
    public Map<String, Interval> intervals() {
      return SeedStats.intervals(perSeed, Set.of());
    }
  }

  /** Groups the rows of a sweep's table by their cell without the seed. */
  public static SweepTableSeeds of(SweepTableResults table) {
    Set<String> metrics = new LinkedHashSet<>();
    for (SweepTableResults.Row r : table.rows()) {
      r.values().forEach((k, v) -> {
        if (v instanceof Number && !k.equals("seed")) {
          metrics.add(k);
        }
      });
    }
    List<String> parameters = new ArrayList<>();
    for (String c : table.columns()) {
      if (!metrics.contains(c) && !c.equals("seed")) {
        parameters.add(c);
      }
    }
    Set<String> seeds = new LinkedHashSet<>();
    Map<String, Group> groups = new LinkedHashMap<>();
    for (SweepTableResults.Row r : table.rows()) {
      if (r.values().containsKey("seed")) {
        seeds.add(r.text("seed"));
      }
      Map<String, String> params = new LinkedHashMap<>();
      StringBuilder label = new StringBuilder();
      for (String p : parameters) {
        params.put(p, r.text(p));
        if (!r.text(p).isEmpty()) {
          label.append(label.length() == 0 ? "" : " ").append(p).append('=').append(r.text(p));
        }
      }
      Map<String, Object> values = new LinkedHashMap<>();
      for (String m : metrics) {
        values.put(m, r.values().get(m) instanceof Number n ? n : null);
      }
      groups.computeIfAbsent(label.toString(), l -> new Group(l, params, new ArrayList<>())).perSeed().add(values);
    }
    return new SweepTableSeeds(List.copyOf(parameters), List.copyOf(metrics), List.copyOf(seeds), List.copyOf(groups.values()));
  }

  /** Returns whether the grid ran more than one seed (then {@code kvsim sweep} writes {@value #CSV_FILE} and prints the grouped table). */
  public boolean severalSeeds() {
    return seeds.size() > 1;
  }

  /**
   * Returns {@value #CSV_FILE}: the parameters, {@code seeds} (how many), {@code coverage} (of the
   * intervals at that many seeds), then per metric its median, {@code METRIC.low} and {@code
   * METRIC.high}; whole numbers as integers, others {@code %.6f} (never scientific notation), empty
   * where no seed defined the metric.
   */
  public String csv() {
    StringBuilder sb = new StringBuilder();
    List<String> header = new ArrayList<>(parameters);
    header.add("seeds");
    header.add("coverage");
    for (String m : metrics) {
      header.addAll(List.of(m, m + ".low", m + ".high"));
    }
    sb.append(String.join(",", header.stream().map(SweepTableSeeds::csvField).toList())).append('\n');
    for (Group g : groups) {
      List<String> row = new ArrayList<>();
      g.parameters().values().forEach(v -> row.add(csvField(v)));
      row.add(Integer.toString(g.perSeed().size()));
      row.add(plain(Interval.coverage(g.perSeed().size(), Interval.rank(g.perSeed().size())) * (g.perSeed().size() > 1 ? 1 : 0)));
      Map<String, Interval> in = g.intervals();
      for (String m : metrics) {
        Interval i = in.get(m);
        row.add(i == null ? "" : plain(i.median()));
        row.add(i == null ? "" : plain(i.low()));
        row.add(i == null ? "" : plain(i.high()));
      }
      sb.append(String.join(",", row)).append('\n');
    }
    return sb.toString();
  }

  /** Writes {@value #CSV_FILE} into a sweep's folder and lists it in the folder's marker. */
  public void write(java.nio.file.Path dir) throws java.io.IOException {
    byte[] bytes = csv().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    kvsim.core.AtomicFiles.write(dir.resolve(CSV_FILE), o -> o.write(bytes));
    ResultFolder.seal(dir);
  }

  /** The metrics the printed table shows where the sweep has them, in this order. */
  private static final List<String> HEADLINES = List.of("throughput_tokens_per_second", "ttft_seconds.p50", "tpot_seconds.p50", "preemptions",
      "external_fragmentation.peak", "external_fragmentation.mean", "internal_fragmentation.mean", "oom_count");

  /** Prints the grouped table: the parameters that vary, then up to five headline metrics as median [low, high]. */
  public void print(java.io.PrintWriter out) {
    List<String> varying = new ArrayList<>();
    for (String p : parameters) {
      if (groups.stream().map(g -> g.parameters().get(p)).distinct().count() > 1) {
        varying.add(p);
      }
    }
    List<String> shown = new ArrayList<>();
    for (String h : HEADLINES) {
      if (metrics.contains(h) && shown.size() < 5) {
        shown.add(h);
      }
    }
    for (String m : metrics) {
      if (shown.isEmpty()) {
        shown.add(m);
      }
    }
    List<String> header = new ArrayList<>(varying);
    header.add("seeds");
    header.addAll(shown);
    List<String[]> table = new ArrayList<>();
    table.add(header.toArray(String[]::new));
    for (Group g : groups) {
      List<String> row = new ArrayList<>();
      varying.forEach(p -> row.add(g.parameters().get(p)));
      row.add(Integer.toString(g.perSeed().size()));
      Map<String, Interval> in = g.intervals();
      for (String m : shown) {
        Interval i = in.get(m);
        row.add(i == null ? "-" : Diff.withInterval(i.median(), i));
      }
      table.add(row.toArray(String[]::new));
    }
    TextTable.print(out, table, varying.size());
    int n = groups.isEmpty() ? 0 : groups.get(0).perSeed().size();
    out.printf(Locale.ROOT, "median [interval] over %d seeds per cell: the order-statistic interval of the median, coverage %.1f %%; every metric in %s%n", n,
        n > 1 ? Interval.coverage(n, Interval.rank(n)) * 100 : 0.0, CSV_FILE);
  }

  private static String plain(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : String.format(Locale.ROOT, "%.6f", v);
  }

  private static String csvField(String s) {
    return s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 ? s : '"' + s.replace("\"", "\"\"") + '"';
  }
}

package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import kvsim.core.InputException;
import kvsim.metrics.Interval;
import kvsim.metrics.SeedStats;

/**
 * {@code kvsim diff A B}: what changed between two result folders of one kind (serving, capacity,
 * replay/compare, sweep), per entry (system, allocator or grid cell, matched by label) and per
 * numeric metric, with a verdict on whether the change exceeds the seeds' noise (Note [Diff
 * verdicts]).
 *
 * <p>Note [Diff verdicts]: a metric with an interval over seeds on both sides (Note [The seed
 * interval] on {@code metrics.Interval}) is judged by overlap: {@code exceeds noise} when the two
 * intervals are disjoint, {@code noise} when they share a value. Disjoint order-statistic intervals
 * of the median are a conservative test: two samples of the same distribution give disjoint ~95 %
 * intervals far less often than 5 % of the time, so a real change of the size of the seed spread
 * may still read {@code noise}; kvsim prefers that to calling noise a change. A single run on
 * either side has no spread to compare with: {@code no noise estimate}, never a guess. Equal values
 * are {@code unchanged}; a metric defined (non-null) on one side only says which.
 */
public final class Diff {
  private Diff() {}

  /** The verdicts (Note [Diff verdicts]). */
  public static final String EXCEEDS = "exceeds noise";
  public static final String NOISE = "noise";
  public static final String NO_ESTIMATE = "no noise estimate";
  public static final String UNCHANGED = "unchanged";

  /**
   * One entry of a folder: a system, an allocator or a sweep cell (seeds aside).
   *
   * @param label its name, matched across the two folders
   * @param values per metric path, its value (the median over seeds where there are several), null where undefined
   * @param intervals per metric path, its interval over seeds; empty for a single run
   */
  public record Entry(String label, Map<String, Double> values, Map<String, Interval> intervals) {}

  /**
   * One folder as the diff sees it.
   *
   * @param dir the folder
   * @param kind {@code serving}, {@code capacity}, {@code replay} or {@code sweep}
   * @param seeds the seeds of a run over seeds (empty for a single run)
   * @param entries by label, in the folder's order
   */
  public record Side(Path dir, String kind, List<String> seeds, Map<String, Entry> entries) {
    /** Returns how the side is described in a heading: {@code serving, seeds 1..5 (5)} or {@code serving, single run}. */
    public String description() {
      return kind + ", " + (seeds.isEmpty() ? "single run" : seeds.size() + " seeds (" + seeds.get(0) + " … " + seeds.get(seeds.size() - 1) + ")");
    }
  }

  /**
   * One metric of one entry on both sides.
   *
   * @param label the entry's label
   * @param metric the metric's path
   * @param a its value in A (null where undefined or absent)
   * @param b its value in B
   * @param intervalA its interval in A, null without one
   * @param intervalB its interval in B
   * @param verdict the verdict (Note [Diff verdicts]), or {@code only in A} / {@code only in B}
   */
  public record Row(String label, String metric, Double a, Double b, Interval intervalA, Interval intervalB, String verdict) {
    /** Returns B − A, null where either is undefined. */
    public Double change() {
      return a == null || b == null ? null : b - a;
    }

    /** Returns the change as a percentage of |A|, null where A is 0 or either is undefined. */
    public Double changePercent() {
      return a == null || b == null || a == 0 ? null : (b - a) / Math.abs(a) * 100;
    }

    /** Returns whether the metric differs between A and B. */
    public boolean changed() {
      return !verdict.equals(UNCHANGED);
    }
  }

  /**
   * The comparison of two folders.
   *
   * @param a folder A
   * @param b folder B
   * @param rows one per metric of every entry present on both sides, in A's order (B's new metrics after)
   * @param onlyInA labels of entries only A has
   * @param onlyInB labels of entries only B has
   */
  public record Result(Side a, Side b, List<Row> rows, List<String> onlyInA, List<String> onlyInB) {
    /** Returns the rows whose metric changed. */
    public List<Row> changed() {
      return rows.stream().filter(Row::changed).toList();
    }

    /** Returns {@code diff.json}'s tree: the two folders, then every row (or only the changed ones) and the unmatched entries. */
    public Map<String, Object> toMap(boolean all) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("format", FORMAT);
      m.put("kind", a.kind());
      m.put("a", side(a));
      m.put("b", side(b));
      List<Object> out = new ArrayList<>();
      for (Row r : all ? rows : changed()) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("system", r.label());
        o.put("metric", r.metric());
        o.put("a", r.a());
        o.put("b", r.b());
        o.put("a_interval", r.intervalA() == null ? null : r.intervalA().toMap());
        o.put("b_interval", r.intervalB() == null ? null : r.intervalB().toMap());
        o.put("change", r.change());
        o.put("change_percent", r.changePercent());
        o.put("verdict", r.verdict());
        out.add(o);
      }
      m.put("rows", out);
      m.put("only_in_a", onlyInA);
      m.put("only_in_b", onlyInB);
      return m;
    }

    private static Map<String, Object> side(Side s) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("folder", s.dir().toString());
      m.put("seeds", s.seeds());
      return m;
    }
  }

  /** The {@code format} of {@code kvsim diff --json}. */
  public static final String FORMAT = "kvsim-diff";

  /** Compares two folders of one kind; different kinds are an {@link InputException} naming both. */
  public static Result compare(Path a, Path b) {
    Side sa = read(a);
    Side sb = read(b);
    if (!sa.kind().equals(sb.kind())) {
      throw new InputException(a + " is " + article(sa.kind()) + " result and " + b + " " + article(sb.kind())
          + " result; kvsim diff compares two folders of the same kind");
    }
    List<Row> rows = new ArrayList<>();
    List<String> onlyInA = new ArrayList<>();
    List<String> onlyInB = new ArrayList<>();
    for (Entry ea : sa.entries().values()) {
      Entry eb = sb.entries().get(ea.label());
      if (eb == null) {
        onlyInA.add(ea.label());
        continue;
      }
      Set<String> metrics = new LinkedHashSet<>(ea.values().keySet());
      metrics.addAll(eb.values().keySet());
      for (String metric : metrics) {
        rows.add(row(ea, eb, metric));
      }
    }
    for (String label : sb.entries().keySet()) {
      if (!sa.entries().containsKey(label)) {
        onlyInB.add(label);
      }
    }
    return new Result(sa, sb, rows, onlyInA, onlyInB);
  }

  private static String article(String kind) {
    return "a " + kind;
  }

  private static Row row(Entry ea, Entry eb, String metric) {
    boolean inA = ea.values().containsKey(metric);
    boolean inB = eb.values().containsKey(metric);
    Double a = ea.values().get(metric);
    Double b = eb.values().get(metric);
    Interval ia = ea.intervals().get(metric);
    Interval ib = eb.intervals().get(metric);
    String verdict;
    if (!inA || !inB) {
      verdict = inA ? "only in A" : "only in B";
    } else if (a == null && b == null || a != null && a.equals(b)) {
      verdict = UNCHANGED;
    } else if (a == null || b == null) {
      verdict = a == null ? "undefined in A" : "undefined in B";
    } else if (ia == null || ib == null || ia.n() < 2 || ib.n() < 2) {
      verdict = NO_ESTIMATE;
    } else {
      verdict = ia.disjoint(ib) ? EXCEEDS : NOISE;
    }
    return new Row(ea.label(), metric, a, b, ia, ib, verdict);
  }

  /**
   * Reads a result folder for the diff: {@code summary.json} of a serving, capacity or
   * replay/compare run (single or over seeds), or {@code sweep.json} of a sweep. Everything else is
   * an {@link InputException} naming the folder or file.
   */
  @SuppressWarnings("unchecked")
  public static Side read(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new InputException(dir + ": " + (Files.exists(dir) ? "not a folder" : "no such folder") + "; kvsim diff compares two result folders");
    }
    Path summary = dir.resolve(ResultsReader.SUMMARY_FILE);
    if (!Files.isRegularFile(summary)) {
      if (Files.isRegularFile(dir.resolve(SweepTable.JSON_FILE))) {
        return sweep(dir, SweepTable.read(dir));
      }
      throw new InputException(dir + ": not a kvsim result folder (no " + ResultsReader.SUMMARY_FILE + " or " + SweepTable.JSON_FILE + ")");
    }
    JsonFile f = new JsonFile(summary);
    JsonNode root = f.readObject();
    JsonNode format = root.get("format");
    String name = format != null && format.isTextual() ? format.textValue() : null;
    Map<String, Object> plain = (Map<String, Object>) f.plain(root);
    List<String> seeds = new ArrayList<>();
    if (plain.get("seeds") instanceof List<?> list) {
      list.forEach(s -> seeds.add(String.valueOf(s)));
    }
    if (ResultsReader.SERVING_FORMAT.equals(name)) {
      return new Side(dir, "serving", seeds, entries(f, plain, "systems", e -> ServingResults.label(e),
          Set.of("system", "cell", "kv_memory_bytes", "parts", "intervals")));
    }
    if (ResultsReader.CAPACITY_FORMAT.equals(name)) {
      return new Side(dir, "capacity", seeds, entries(f, plain, "systems", e -> ServingResults.label(e),
          Set.of("system", "cell", "kv_memory_bytes", "intervals", "probes")));
    }
    if (ResultsReader.RUN_FORMAT.equals(name)) {
      return new Side(dir, "replay", List.of(), entries(f, plain, "allocators", e -> String.valueOf(e.get("allocator")), Set.of("allocator", "options")));
    }
    if (ResultsReader.SWEEP_FORMAT.equals(name)) {
      return new Side(dir, "replay", seeds, replaySweep(f, plain));
    }
    throw f.error("format", (name == null ? "missing" : "\"" + name + "\" is not")
        + " a result kvsim diff compares (serving, capacity, replay/compare or sweep folders)");
  }

  /** Reads the entries of a list of objects ({@code systems}, {@code allocators}) with their intervals. */
  @SuppressWarnings("unchecked")
  private static Map<String, Entry> entries(
      JsonFile f, Map<String, Object> plain, String field, java.util.function.Function<Map<String, Object>, String> label, Set<String> skip) {
    if (!(plain.get(field) instanceof List<?> list)) {
      throw f.error(field, plain.containsKey(field) ? "expected a list" : "missing");
    }
    Map<String, Entry> out = new LinkedHashMap<>();
    for (int i = 0; i < list.size(); i++) {
      if (!(list.get(i) instanceof Map<?, ?> m) || !(m.get(field.equals("allocators") ? "allocator" : "system") instanceof String)) {
        throw f.error(field + "[" + i + "]", "expected an object naming its " + (field.equals("allocators") ? "allocator" : "system"));
      }
      Map<String, Object> e = (Map<String, Object>) m;
      Map<String, Double> values = new LinkedHashMap<>();
      // A replay's metrics and extra keep their own names, as in a seed sweep's per_seed and a sweep's table.
      SeedStats.leaves(e, skip).forEach((k, v) -> values.put(k.replaceFirst("^(metrics|extra)\\.", ""), v == null ? null : v.doubleValue()));
      Map<String, Interval> intervals = new LinkedHashMap<>();
      if (e.get("intervals") instanceof Map<?, ?> in) {
        for (Map.Entry<?, ?> x : in.entrySet()) {
          intervals.put(String.valueOf(x.getKey()), interval(f, field + "[" + i + "].intervals." + x.getKey(), x.getValue()));
        }
      }
      out.put(unique(out, label.apply(e)), new Entry(unique(out, label.apply(e)), values, intervals));
    }
    return out;
  }

  private static String unique(Map<String, Entry> seen, String label) {
    String l = label;
    for (int k = 2; seen.containsKey(l); k++) {
      l = label + " #" + k;
    }
    return l;
  }

  private static Interval interval(JsonFile f, String at, Object o) {
    if (o instanceof Map<?, ?> m && m.get("median") instanceof Number median && m.get("low") instanceof Number low && m.get("high") instanceof Number high
        && m.get("n") instanceof Number n) {
      double coverage = m.get("coverage") instanceof Number c ? c.doubleValue() : 0;
      return new Interval(median.doubleValue(), low.doubleValue(), high.doubleValue(), n.intValue(), coverage);
    }
    throw f.error(at, "expected an object with median, low, high and n");
  }

  /** Reads a replay seed sweep: per allocator, each headline's median and interval computed from {@code per_seed}. */
  @SuppressWarnings("unchecked")
  private static Map<String, Entry> replaySweep(JsonFile f, Map<String, Object> plain) {
    if (!(plain.get("allocators") instanceof List<?> list)) {
      throw f.error("allocators", plain.containsKey("allocators") ? "expected a list" : "missing");
    }
    Map<String, Entry> out = new LinkedHashMap<>();
    for (int i = 0; i < list.size(); i++) {
      Map<String, Object> e = list.get(i) instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
      if (!(e.get("per_seed") instanceof List<?> rows) || !(e.get("allocator") instanceof String name)) {
        throw f.error("allocators[" + i + "]", "expected an object with allocator and per_seed");
      }
      List<Map<String, Object>> perSeed = new ArrayList<>();
      for (Object r : rows) {
        Map<String, Object> row = new LinkedHashMap<>((Map<String, Object>) r);
        row.remove("seed");
        perSeed.add(row);
      }
      out.put(unique(out, name), seedEntry(unique(out, name), perSeed));
    }
    return out;
  }

  /** Returns the entry of several seeds' values: medians and intervals; a single seed has values only. */
  static Entry seedEntry(String label, List<Map<String, Object>> perSeed) {
    Map<String, Interval> intervals = SeedStats.intervals(perSeed, Set.of());
    Map<String, Double> values = new LinkedHashMap<>();
    for (String path : SeedStats.leaves(perSeed.get(0), Set.of()).keySet()) {
      values.put(path, null);
    }
    intervals.forEach((k, v) -> values.put(k, v.median()));
    return new Entry(label, values, perSeed.size() > 1 ? intervals : Map.of());
  }

  /** Reads a sweep's table: one entry per cell without its seed, its metrics over the seeds ({@link SweepTableSeeds}). */
  private static Side sweep(Path dir, SweepTableResults table) {
    SweepTableSeeds grouped = SweepTableSeeds.of(table);
    Map<String, Entry> out = new LinkedHashMap<>();
    for (SweepTableSeeds.Group g : grouped.groups()) {
      out.put(g.label(), seedEntry(g.label(), g.perSeed()));
    }
    return new Side(dir, "sweep", grouped.seeds(), out);
  }

  /** Returns a value as the diff shows it: whole numbers whole, else four significant digits, never in scientific notation. */
  public static String number(Double v) {
    if (v == null) {
      return "-";
    }
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString(v.longValue());
    }
    if (Math.abs(v) >= 1000) {
      return String.format(Locale.ROOT, "%.1f", v);
    }
    return new BigDecimal(v).round(new MathContext(4)).stripTrailingZeros().toPlainString();
  }

  /** Returns a value with its interval, {@code 412 [398, 430]}, or the value alone. */
  public static String withInterval(Double v, Interval in) {
    return in == null || in.n() < 2 ? number(v) : number(v) + " [" + number(in.low()) + ", " + number(in.high()) + "]";
  }

  /** Returns the change with its sign, {@code +12.5}, or {@code -}. */
  public static String signed(Double v) {
    return v == null ? "-" : (v > 0 ? "+" : "") + number(v);
  }

  /** Returns the change in percent, {@code +3.1 %}, or {@code -}. */
  public static String percent(Double v) {
    return v == null ? "-" : String.format(Locale.ROOT, "%+.1f %%", v);
  }
}

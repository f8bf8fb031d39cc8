package kvsim.report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The printed table of a run over seeds ({@code serving --seeds}, {@code capacity --seeds}): each
 * headline metric as its median with its interval, {@code 412 [398, 430]} (Note [The seed interval]
 * on {@code metrics.Interval}), read from an entry's {@code intervals} (results/SCHEMA.md, "Seeds").
 */
public final class SeedTable {
  private SeedTable() {}

  /** One headline column: its header, its field path in {@code intervals}, and how a value is shown. */
  private record Column(String header, String path, java.util.function.DoubleFunction<String> format) {}

  private static final List<Column> SERVING = List.of(
      new Column("finished", "requests_finished", v -> String.format(Locale.ROOT, "%.0f", v)),
      new Column("rejected", "requests_rejected", v -> String.format(Locale.ROOT, "%.0f", v)),
      new Column("tokens/s", "throughput_tokens_per_second", v -> String.format(Locale.ROOT, "%.0f", v)),
      new Column("TTFT p50", "ttft_seconds.p50", SeedTable::seconds),
      new Column("TPOT p50", "tpot_seconds.p50", SeedTable::seconds),
      new Column("norm. lat", "normalized_latency_seconds_per_token.mean", SeedTable::seconds),
      new Column("preempt", "preemptions", v -> String.format(Locale.ROOT, "%.0f", v)),
      new Column("idle", "kv_breakdown.idle.mean", v -> String.format(Locale.ROOT, "%.3f", v)));
  /** The SLO columns of a run with {@code --slo} (README, "SLO attainment and goodput"). */
  private static final List<Column> SLO = List.of(
      new Column("SLO attain.", "slo.attainment", v -> String.format(Locale.ROOT, "%.1f %%", 100 * v)),
      new Column("goodput req/s", "slo.goodput_rps", v -> String.format(Locale.ROOT, "%.3g", v)),
      new Column("goodput tok/s", "slo.goodput_tokens_per_second", v -> String.format(Locale.ROOT, "%.0f", v)));

  /**
   * Prints the serving table of a run over seeds: the grid's keys, the system, then each headline
   * metric as median [low, high], and a line saying what the brackets are.
   */
  public static void serving(PrintWriter out, List<String> keys, ServingResults folder) {
    List<Column> columns = new ArrayList<>(SERVING);
    if (!folder.entries().isEmpty() && folder.entries().get(0).slo() != null) {
      columns.addAll(SLO);
    }
    List<String> header = new ArrayList<>(keys);
    header.add("system");
    columns.forEach(c -> header.add(c.header()));
    List<String[]> table = new ArrayList<>();
    table.add(header.toArray(String[]::new));
    for (ServingResults.Entry e : folder.entries()) {
      List<String> row = new ArrayList<>(e.cell().values());
      row.add(e.system());
      Map<String, Map<String, Object>> intervals = intervals(e.optional().get("intervals"));
      for (Column c : columns) {
        row.add(cell(intervals.get(c.path()), c.format()));
      }
      table.add(row.toArray(String[]::new));
    }
    TextTable.print(out, table, keys.size() + 1);
    out.println(legend(folder.entries().isEmpty() ? null : intervals(folder.entries().get(0).optional().get("intervals"))));
  }

  /** Returns the line under a table over seeds: the seeds, the method and the coverage its n gives. */
  public static String legend(Map<String, Map<String, Object>> intervals) {
    Map<String, Object> any = intervals == null || intervals.isEmpty() ? null : intervals.values().iterator().next();
    if (any == null) {
      return "median [95 % interval] over the seeds";
    }
    int n = ((Number) any.get("n")).intValue();
    double coverage = ((Number) any.get("coverage")).doubleValue();
    return String.format(Locale.ROOT, "median [interval] over %d seeds: the order-statistic interval of the median, coverage %.1f %%%s;"
        + " every metric in summary.json (intervals) and per-seed values in per_seed.csv", n, coverage * 100,
        coverage < 0.95 ? " (below 95 %: too few seeds for a 95 % interval, it spans the whole range)" : "");
  }

  /** Returns {@code median [low, high]}, or {@code -} where the metric has no interval. */
  public static String cell(Map<String, Object> interval, java.util.function.DoubleFunction<String> format) {
    if (interval == null) {
      return "-";
    }
    return format.apply(((Number) interval.get("median")).doubleValue()) + " [" + format.apply(((Number) interval.get("low")).doubleValue()) + ", "
        + format.apply(((Number) interval.get("high")).doubleValue()) + "]";
  }

  /** Returns an entry's {@code intervals} object as a map of field path to interval object (empty where absent). */
  @SuppressWarnings("unchecked")
  public static Map<String, Map<String, Object>> intervals(Object field) {
    return field instanceof Map<?, ?> m ? (Map<String, Map<String, Object>>) m : Map.of();
  }

  /** Returns seconds as the serving table shows them: milliseconds under a second. */
  public static String seconds(double s) {
    return s < 1 ? String.format(Locale.ROOT, "%.1f ms", s * 1e3) : String.format(Locale.ROOT, "%.2f s", s);
  }
}

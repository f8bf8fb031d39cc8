package kvsim.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The SLO columns of a serving run's tables, for the terminal ({@code kvsim serving --slo}) and the
 * HTML report alike: per entry its attainment, goodput and, per target, the share of requests
 * meeting it (per-request targets) or its value and verdict (aggregate, attainment and rejection
 * targets). Read from the entries' {@code slo} objects ({@link ServingResults.Slo}); a folder
 * written without {@code --slo} has none, and then no SLO table.
 */
public final class SloTable {
  private SloTable() {}

  /** The columns {@link #summaryCells} gives, for the summary table. */
  public static final List<String> SUMMARY_HEADER = List.of("SLO attain.", "goodput req/s", "goodput tok/s");

  /** Returns whether the entries of this run carry SLO results. */
  public static boolean present(ServingResults r) {
    return !r.entries().isEmpty() && r.entries().get(0).slo() != null;
  }

  /** Returns an entry's attainment and goodputs ({@link #SUMMARY_HEADER}); dashes where it has no {@code slo}. */
  public static List<String> summaryCells(ServingResults.Entry e) {
    ServingResults.Slo s = e.slo();
    if (s == null) {
      return List.of("-", "-", "-");
    }
    return List.of(percent(s.attainment()), number(s.goodputRps(), "%.3g"), number(s.goodputTokensPerSecond(), "%.0f"));
  }

  /** Returns the header of the per-target table: {@code requests met}, each target as written, then {@code all met}. */
  public static List<String> targetHeader(ServingResults r) {
    List<String> header = new ArrayList<>(List.of("met", "missed"));
    header.addAll(r.entries().get(0).slo().perTarget().keySet());
    header.add("all met");
    return header;
  }

  /**
   * Returns an entry's row of the per-target table: requests met and missed, per target the share of
   * requests within it ({@code 95.0 %}) or its value and verdict ({@code 1.20 s: met}, {@code 87.5 %:
   * missed}), and whether every target with a verdict was met ({@code -} when none has one).
   */
  public static List<String> targetCells(ServingResults.Entry e) {
    ServingResults.Slo s = e.slo();
    List<String> row = new ArrayList<>(List.of(Long.toString(s.requestsMet()), Long.toString(s.requestsMissed())));
    for (Map.Entry<String, Map<String, Object>> t : s.perTarget().entrySet()) {
      Map<String, Object> o = t.getValue();
      if (o.containsKey("share_met")) {
        row.add(o.get("share_met") instanceof Number n ? percent(n.doubleValue()) : "-");
        continue;
      }
      String value;
      if (o.containsKey("value_seconds")) {
        value = o.get("value_seconds") instanceof Number n ? seconds(n.doubleValue()) : "undefined";
      } else {
        value = o.get("value") instanceof Number n ? percent(n.doubleValue()) : "-";
      }
      row.add(value + ": " + (Boolean.TRUE.equals(o.get("met")) ? "met" : "missed"));
    }
    row.add(s.met() == null ? "-" : s.met() ? "yes" : "no");
    return row;
  }

  /** Returns the header of the report's SLO table: system, {@link #SUMMARY_HEADER}, then {@link #targetHeader}. */
  static List<String> htmlHeader(ServingResults r) {
    List<String> header = new ArrayList<>(List.of("system"));
    header.addAll(SUMMARY_HEADER);
    header.addAll(targetHeader(r));
    return header;
  }

  /** Returns an entry's row of the report's SLO table ({@link #htmlHeader}). */
  static List<String> htmlRow(ServingResults.Entry e) {
    List<String> row = new ArrayList<>(List.of(e.label()));
    row.addAll(summaryCells(e));
    row.addAll(targetCells(e));
    return row;
  }

  private static String percent(double share) {
    return String.format(Locale.ROOT, "%.1f %%", 100 * share);
  }

  private static String number(Double v, String format) {
    return v == null ? "-" : String.format(Locale.ROOT, format, v);
  }

  private static String seconds(double s) {
    return s < 1 ? String.format(Locale.ROOT, "%.1f ms", s * 1e3) : String.format(Locale.ROOT, "%.2f s", s);
  }
}

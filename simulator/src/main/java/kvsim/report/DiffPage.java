package kvsim.report;

import java.util.ArrayList;
import java.util.List;
import kvsim.core.OutputFile;

/**
 * The HTML page of {@code kvsim diff -o}: the two folders, the table of metrics with their change
 * and verdict (Note [Diff verdicts] on {@link Diff}), and the entries present on one side only. A
 * page starts with a marker line so that a later {@code kvsim diff} may replace it (Note [Output
 * rule] on {@code core.OutputFile}).
 */
public final class DiffPage {
  private DiffPage() {}

  /** The line every diff page starts with. */
  static final String MARKER = "<!DOCTYPE html>\n<!-- kvsim diff -->\n";

  /** What a diff page is, for the output rule. */
  public static final OutputFile.Kind OUTPUT_KIND = OutputFile.Kind.startingWith("a kvsim diff page", MARKER);

  /** The page's file name when {@code -o} names a folder. */
  public static final String FILE = "diff.html";

  /** Returns the page of a diff: every metric with {@code all}, else only the changed ones. */
  public static String html(Diff.Result r, boolean all) {
    StringBuilder out = new StringBuilder(MARKER);
    out.append("<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kvsim diff</title>\n<style>\n")
        .append("body{font-family:system-ui,sans-serif;margin:2rem;color:#1a1a1a}table{border-collapse:collapse;font-size:.85rem}")
        .append("caption{text-align:left;font-weight:600;padding:.3rem 0}th,td{border:1px solid #ccc;padding:.2rem .5rem}thead th{background:#eef2f6}")
        .append("td.n{text-align:right;font-variant-numeric:tabular-nums}tr.exceeds td{background:#fde7d9}\n</style>\n</head>\n<body>\n");
    out.append("<h1>kvsim diff</h1>\n<p>A: <code>").append(Html.escape(r.a().dir().toString())).append("</code> (").append(Html.escape(r.a().description()))
        .append(")<br>B: <code>").append(Html.escape(r.b().dir().toString())).append("</code> (").append(Html.escape(r.b().description())).append(")</p>\n");
    out.append("<p>").append(Html.escape(DiffText.summary(r))).append("</p>\n<p>").append(Html.escape(DiffText.LEGEND)).append("</p>\n");
    List<List<String>> rows = new ArrayList<>();
    for (Diff.Row row : all ? r.rows() : r.changed()) {
      rows.add(List.of(row.label(), row.metric(), Diff.withInterval(row.a(), row.intervalA()), Diff.withInterval(row.b(), row.intervalB()),
          Diff.signed(row.change()), Diff.percent(row.changePercent()), row.verdict()));
    }
    StringBuilder table = new StringBuilder();
    Html.table(table, all ? "Every metric" : "Changed metrics", List.of("system", "metric", "A", "B", "change", "change %", "verdict"), rows);
    out.append(table.toString().replaceAll("<tr>(<th scope=\"row\">[^\n]*<td>exceeds noise</td></tr>)",
        "<tr class=\"exceeds\">$1"));
    if (!r.onlyInA().isEmpty()) {
      out.append("<p>Only in A: ").append(Html.escape(String.join(", ", r.onlyInA()))).append("</p>\n");
    }
    if (!r.onlyInB().isEmpty()) {
      out.append("<p>Only in B: ").append(Html.escape(String.join(", ", r.onlyInB()))).append("</p>\n");
    }
    out.append("</body>\n</html>\n");
    return out.toString();
  }
}

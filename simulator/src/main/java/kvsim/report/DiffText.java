package kvsim.report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** The text table of {@code kvsim diff}: the two folders, one row per metric, a summary line and what the verdicts mean (Note [Diff verdicts] on {@link Diff}). */
public final class DiffText {
  private DiffText() {}

  /** What the verdicts mean, under every table and on the page. */
  public static final String LEGEND = "verdict: \"exceeds noise\" where the 95 % intervals of the median over seeds do not overlap, \"noise\" where they do;"
      + " \"no noise estimate\" where a side is a single run (rerun both with --seeds for one)";

  /** Prints the diff: every metric with {@code all}, else only the changed ones. */
  public static void print(PrintWriter out, Diff.Result r, boolean all) {
    out.println("A: " + r.a().dir() + " (" + r.a().description() + ")");
    out.println("B: " + r.b().dir() + " (" + r.b().description() + ")");
    List<Diff.Row> rows = all ? r.rows() : r.changed();
    if (!rows.isEmpty()) {
      List<String[]> table = new ArrayList<>();
      table.add(new String[] {"system", "metric", "A", "B", "change", "change %", "verdict"});
      for (Diff.Row row : rows) {
        table.add(new String[] {row.label(), row.metric(), Diff.withInterval(row.a(), row.intervalA()), Diff.withInterval(row.b(), row.intervalB()),
            Diff.signed(row.change()), Diff.percent(row.changePercent()), row.verdict()});
      }
      TextTable.print(out, table, java.util.Set.of(0, 1, 6));
    }
    out.println(summary(r) + (all ? "" : " (--all lists every metric)"));
    if (!r.onlyInA().isEmpty()) {
      out.println("only in A: " + String.join(", ", r.onlyInA()));
    }
    if (!r.onlyInB().isEmpty()) {
      out.println("only in B: " + String.join(", ", r.onlyInB()));
    }
    out.println(LEGEND);
  }

  /** Returns the line that counts the metrics by verdict. */
  public static String summary(Diff.Result r) {
    long changed = r.changed().size();
    long exceeds = r.rows().stream().filter(x -> x.verdict().equals(Diff.EXCEEDS)).count();
    long noise = r.rows().stream().filter(x -> x.verdict().equals(Diff.NOISE)).count();
    long none = r.rows().stream().filter(x -> x.verdict().equals(Diff.NO_ESTIMATE)).count();
    long other = changed - exceeds - noise - none;
    return changed + " of " + r.rows().size() + " metrics changed: " + exceeds + " exceed noise, " + noise + " noise, " + none + " without a noise estimate"
        + (other > 0 ? ", " + other + " present or defined on one side only" : "");
  }
}

package kvsim.report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import kvsim.core.Bytes;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.Gauge;
import kvsim.metrics.SeedSweep;

/** Plain-text tables for the terminal: the allocator comparison, the seed-sweep distribution, and any table of names and figures ({@link #print(PrintWriter, List, int)}). */
public final class TextTable {
  private TextTable() {}

  /**
   * Prints one row per allocator with the headline metrics. Refusals are split by reason ({@code
   * OOMs} = {@code frag} + {@code no mem} + {@code too large}, all in the region under test), and
   * refusals in the activations region of a memory plan have a column of their own.
   */
  public static void comparison(PrintWriter out, List<AllocatorResult> results) {
    print(out, comparisonRows(results));
  }

  /** Returns the rows {@link #comparison} prints, the header first. */
  static List<String[]> comparisonRows(List<AllocatorResult> results) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {
      "allocator", "peak ext frag", "mean ext frag", "mean int frag", "peak allocated", "peak reserved",
      "allocs", "OOMs", "frag", "no mem", "too large", "act. OOMs", "alloc time"
    });
    for (AllocatorResult r : results) {
      Map<String, Gauge.Summary> s = r.summaries();
      rows.add(new String[] {
        r.allocator(),
        ratio(s.get("external_fragmentation").peak()),
        ratio(s.get("external_fragmentation").mean()),
        ratio(s.get("internal_fragmentation").mean()),
        bytes(s.get("allocated_bytes").peak()),
        bytes(s.get("reserved_bytes").peak()),
        Long.toString(r.counters().get("alloc_count")),
        Long.toString(r.counters().get("oom_count")),
        Long.toString(r.counters().get("fragmentation_oom_count")),
        Long.toString(r.counters().get("no_memory_oom_count")),
        Long.toString(r.counters().get("too_large_oom_count")),
        Long.toString(r.activationOomCount()),
        String.format(Locale.ROOT, "%.3f ms", r.modelledAllocatorNanos() / 1e6)
      });
    }
    return rows;
  }

  /** Prints, per allocator and headline metric, the median, p10, p90 and mean over seeds. */
  public static void sweep(PrintWriter out, Map<String, SeedSweep> sweeps) {
    print(out, sweepRows(sweeps));
  }

  /** Returns the rows {@link #sweep} prints, the header first. */
  static List<String[]> sweepRows(Map<String, SeedSweep> sweeps) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"allocator", "metric", "median", "p10", "p90", "mean", "seeds"});
    for (Map.Entry<String, SeedSweep> e : sweeps.entrySet()) {
      for (Map.Entry<String, SeedSweep.Stats> m : e.getValue().stats().entrySet()) {
        SeedSweep.Stats st = m.getValue();
        boolean isBytes = m.getKey().contains("_bytes");
        boolean isRatio = m.getKey().contains("fragmentation.");
        rows.add(new String[] {
          e.getKey(), m.getKey(),
          st == null ? "-" : fmt(st.median(), isBytes, isRatio),
          st == null ? "-" : fmt(st.p10(), isBytes, isRatio),
          st == null ? "-" : fmt(st.p90(), isBytes, isRatio),
          st == null ? "-" : fmt(st.mean(), isBytes, isRatio),
          (st == null ? 0 : st.defined()) + "/" + e.getValue().runs()
        });
      }
    }
    return rows;
  }

  /** Prints any table: the header, a rule, then the rows (the first column left-aligned, the others right). */
  public static void table(PrintWriter out, List<String> header, List<List<String>> rows) {
    List<String[]> all = new ArrayList<>();
    all.add(header.toArray(String[]::new));
    rows.forEach(r -> all.add(r.toArray(String[]::new)));
    print(out, all);
  }

  private static String fmt(double v, boolean isBytes, boolean isRatio) {
    if (isBytes) {
      return Bytes.format(Math.round(v));
    }
    if (isRatio) {
      return String.format(Locale.ROOT, "%.4f", v);
    }
    return String.format(Locale.ROOT, "%.2f", v);
  }

  private static String ratio(Double v) {
    return v == null ? "-" : String.format(Locale.ROOT, "%.4f", v);
  }

  private static String bytes(Double v) {
    return v == null ? "-" : Bytes.format(Math.round(v));
  }

  private static void print(PrintWriter out, List<String[]> rows) {
    print(out, rows, rows.get(0)[1].equals("metric") ? Set.of(0, 1) : Set.of(0));
  }

  /** Prints rows as {@link #print(PrintWriter, List, Set)} does, with the first {@code leftColumns} columns left-aligned. */
  public static void print(PrintWriter out, List<String[]> rows, int leftColumns) {
    Set<Integer> left = new java.util.HashSet<>();
    for (int i = 0; i < leftColumns; i++) {
      left.add(i);
    }
    print(out, rows, left);
  }

  /**
   * Prints a header row, a rule of dashes, then the rows: the columns whose indexes are in {@code
   * leftAligned} left-aligned (text), the others right-aligned (numbers); trailing blanks removed.
   */
  public static void print(PrintWriter out, List<String[]> rows, Set<Integer> leftAligned) {
    int[] w = new int[rows.get(0).length];
    for (String[] r : rows) {
      for (int i = 0; i < r.length; i++) {
        w[i] = Math.max(w[i], r[i].length());
      }
    }
    for (int k = 0; k < rows.size(); k++) {
      String[] r = rows.get(k);
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < r.length; i++) {
        String cell = r[i];
        if (k == 0 || leftAligned.contains(i)) {
          sb.append(String.format("%-" + w[i] + "s", cell));
        } else {
          sb.append(String.format("%" + w[i] + "s", cell));
        }
        sb.append(i + 1 < r.length ? "  " : "");
      }
      out.println(sb.toString().stripTrailing());
      if (k == 0) {
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < w.length; i++) {
          line.append("-".repeat(w[i])).append(i + 1 < w.length ? "  " : "");
        }
        out.println(line);
      }
    }
    out.flush();
  }

}

package kvsim.gpu.calibrate;

import java.util.Locale;
import java.util.Map;
import kvsim.core.Bytes;

/**
 * The table {@code kvsim gpu calibrate} prints of its samples: per measured shape the repetitions,
 * the median and the 99th percentile (Note [Median and p99]), and for copies and products the rate
 * the median achieves (bytes per second of copy size; floating-point operations per second).
 */
public final class SummaryTable {
  private SummaryTable() {}

  /** The table's text, one line per series, in the order measured. */
  public static String of(Samples samples) {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "%-9s %-30s %5s %14s %14s  %s%n", "kind", "shape", "reps", "median", "p99", "rate at the median"));
    for (Samples.Series s : samples.series()) {
      double median = s.medianNanos();
      String rate = "";
      if (s.kind().startsWith("copy")) {
        rate = String.format(Locale.ROOT, "%.2f GB/s", s.get("size_bytes") / median);
      } else if (s.kind().equals("gemm")) {
        rate = String.format(Locale.ROOT, "%.1f TFLOP/s", 2.0 * s.get("tokens") * s.get("inner") * s.get("outer") / median / 1e3);
      }
      b.append(String.format(Locale.ROOT, "%-9s %-30s %5d %14s %14s  %s", s.kind(), shape(s.shape()), s.nanos().length, nanos(median),
          nanos(s.p99Nanos()), rate).stripTrailing()).append('\n');
    }
    return b.toString();
  }

  private static String shape(Map<String, Long> shape) {
    if (shape.containsKey("size_bytes")) {
      return Bytes.format(shape.get("size_bytes"));
    }
    if (shape.containsKey("pages")) {
      return shape.get("pages") + " × " + Bytes.format(shape.get("page_bytes"));
    }
    return shape.get("tokens") + " tokens, " + shape.get("inner") + "×" + shape.get("outer");
  }

  private static String nanos(double ns) {
    if (ns >= 1e6) {
      return String.format(Locale.ROOT, "%.3f ms", ns / 1e6);
    }
    if (ns >= 1e3) {
      return String.format(Locale.ROOT, "%.1f µs", ns / 1e3);
    }
    return String.format(Locale.ROOT, "%.0f ns", ns);
  }
}

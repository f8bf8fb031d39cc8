package kvsim.regress;

import java.util.Locale;

/**
 * One watched metric of one allocator or serving system in one scenario: its baseline value, its
 * value now, and the verdict. Values are Numbers as the result files hold them, or null where the
 * metric is undefined (a fragmentation ratio while nothing was free, a latency of no request).
 *
 * <p>The verdict: equal values are {@link Verdict#UNCHANGED}; a move no larger than the tolerance
 * allows ({@link Tolerance#allowedMove}) is {@link Verdict#WITHIN_TOLERANCE}; a larger move is
 * {@link Verdict#IMPROVED} or {@link Verdict#REGRESSED} by the watch's direction. A value that
 * becomes undefined, or becomes defined, has no size to compare and is {@link Verdict#REGRESSED}:
 * the gate never lets a change it cannot measure pass unseen.
 *
 * @param scenario the scenario's name
 * @param run the allocator or system
 * @param watch the watched metric
 * @param baseline the baseline's value (null: undefined, or no baseline with {@link Verdict#NEW})
 * @param now the value now
 * @param verdict what happened
 * @param wallNanos the wall time of the run that gave {@code now}
 */
public record Comparison(String scenario, String run, Suite.Watch watch, Number baseline, Number now, Verdict verdict, long wallNanos) {

  /** Compares a value with its baseline. */
  static Comparison of(String scenario, String run, Suite.Watch watch, Number baseline, Number now, long wallNanos) {
    return new Comparison(scenario, run, watch, baseline, now, verdict(watch, baseline, now), wallNanos);
  }

  /** A value with no baseline to compare with. */
  static Comparison fresh(String scenario, String run, Suite.Watch watch, Number now, long wallNanos) {
    return new Comparison(scenario, run, watch, null, now, Verdict.NEW, wallNanos);
  }

  private static Verdict verdict(Suite.Watch watch, Number baseline, Number now) {
    if (baseline == null || now == null) {
      return baseline == now ? Verdict.UNCHANGED : Verdict.REGRESSED;
    }
    double b = baseline.doubleValue();
    double n = now.doubleValue();
    if (b == n) {
      return Verdict.UNCHANGED;
    }
    if (Math.abs(n - b) <= watch.tolerance().allowedMove(b)) {
      return Verdict.WITHIN_TOLERANCE;
    }
    boolean higher = n > b;
    return higher == (watch.better() == Suite.Better.HIGHER) ? Verdict.IMPROVED : Verdict.REGRESSED;
  }

  /** Returns the metric's name. */
  public String metric() {
    return watch.metric();
  }

  /** Returns the baseline as printed ({@code -} for none, {@code null} for undefined). */
  public String baselineText() {
    return verdict == Verdict.NEW ? "-" : format(baseline);
  }

  /** Returns the value now as printed. */
  public String nowText() {
    return format(now);
  }

  /**
   * Returns the change as printed: the difference and, against a non-zero baseline, the relative
   * change ({@code +68 (+15.7%)}); {@code 0} when unchanged, {@code n/a} when a side is undefined.
   */
  public String deltaText() {
    if (verdict == Verdict.NEW) {
      return "-";
    }
    if (baseline == null || now == null) {
      return baseline == now ? "0" : "n/a";
    }
    double b = baseline.doubleValue();
    double d = now.doubleValue() - b;
    if (d == 0) {
      return "0";
    }
    String abs = (d > 0 ? "+" : "") + format(isWhole(baseline) && isWhole(now) ? (Number) (now.longValue() - baseline.longValue()) : d);
    return b == 0 ? abs : abs + String.format(Locale.ROOT, " (%+.2f%%)", 100 * d / Math.abs(b));
  }

  /** Returns a one-line account of the comparison, for failure messages. */
  public String describe() {
    return scenario + " / " + run + " / " + metric() + " " + verdict.label() + ": " + baselineText() + " -> " + nowText() + ", delta " + deltaText()
        + " (" + watch.better().name().toLowerCase(Locale.ROOT) + " is better, tolerance " + watch.tolerance() + ")";
  }

  private static boolean isWhole(Number n) {
    return n instanceof Long || n instanceof Integer || n instanceof java.math.BigInteger;
  }

  /** Integers as integers; other numbers with six significant digits, trailing zeros dropped. */
  static String format(Number n) {
    if (n == null) {
      return "null";
    }
    if (isWhole(n)) {
      return Long.toString(n.longValue());
    }
    double v = n.doubleValue();
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    String s = String.format(Locale.ROOT, "%.6g", v);
    if (s.contains("e")) {
      return s.replaceAll("\\.?0+e", "e");
    }
    return s.contains(".") ? s.replaceAll("\\.?0+$", "") : s;
  }
}

package kvsim.regress;

import java.math.BigDecimal;
import java.util.Locale;

/**
 * How far a watched metric may move from its baseline before the move counts as a regression or an
 * improvement: not at all ({@code exact}), by an absolute amount in the metric's unit ({@code
 * 1000}), or by a share of the baseline value ({@code 2%}).
 *
 * <p>Note [Default tolerances]: kvsim's results are deterministic, so a count, a byte total or a
 * fraction that moves at all moved because the code or the policy changed; they are exact by
 * default. Modelled times (the allocators' {@code modelled_allocator_nanos}, serving latencies,
 * spans and throughputs, which divide by a modelled span) come from latency models whose constants
 * are estimates that a calibration replaces; a retuned constant should not fail every scenario, so
 * they get {@value #DEFAULT_TIME_PERCENT} % by default. A metric is a modelled time when its name
 * holds {@code _nanos} or {@code _seconds} or begins with {@code throughput_}.
 *
 * @param kind exact, absolute or relative
 * @param amount the allowed absolute move, or the allowed share (0.02 for 2 %)
 * @param text the tolerance as written ({@code exact}, {@code 1000}, {@code 2%})
 */
public record Tolerance(Kind kind, double amount, String text) {
  /** The default relative tolerance of modelled times, in percent. */
  public static final int DEFAULT_TIME_PERCENT = 1;

  /** The kinds of tolerance. */
  public enum Kind {
    EXACT,
    ABSOLUTE,
    RELATIVE
  }

  /** No move allowed. */
  public static final Tolerance EXACT = new Tolerance(Kind.EXACT, 0, "exact");

  /** Returns the default tolerance of a metric (Note [Default tolerances]). */
  public static Tolerance defaultFor(String metric) {
    return isModelledTime(metric) ? new Tolerance(Kind.RELATIVE, DEFAULT_TIME_PERCENT / 100.0, DEFAULT_TIME_PERCENT + "%") : EXACT;
  }

  /** Returns whether a metric is a modelled time (Note [Default tolerances]). */
  public static boolean isModelledTime(String metric) {
    return metric.contains("_nanos") || metric.contains("_seconds") || metric.startsWith("throughput_");
  }

  /**
   * Parses {@code exact}, {@code N%} (relative) or {@code N} (absolute, in the metric's unit);
   * throws IllegalArgumentException for anything else or a negative amount.
   */
  public static Tolerance parse(String text) {
    String t = text.trim();
    if (t.equals("exact")) {
      return EXACT;
    }
    boolean relative = t.endsWith("%");
    BigDecimal amount;
    try {
      amount = new BigDecimal(relative ? t.substring(0, t.length() - 1).trim() : t);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("expected exact, an amount (1000) or a share of the baseline (2%), found '" + text + "'");
    }
    if (amount.signum() < 0) {
      throw new IllegalArgumentException("a tolerance is not negative, found '" + text + "'");
    }
    if (amount.signum() == 0) {
      return EXACT;
    }
    return relative ? new Tolerance(Kind.RELATIVE, amount.doubleValue() / 100, t) : new Tolerance(Kind.ABSOLUTE, amount.doubleValue(), t);
  }

  /** Returns how far a value may move from {@code baseline} and still be within this tolerance. */
  public double allowedMove(double baseline) {
    return switch (kind) {
      case EXACT -> 0;
      case ABSOLUTE -> amount;
      case RELATIVE -> amount * Math.abs(baseline);
    };
  }

  @Override
  public String toString() {
    return kind == Kind.RELATIVE ? String.format(Locale.ROOT, "%s relative", text) : text;
  }
}

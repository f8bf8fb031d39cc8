package kvsim.core;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Byte quantities: parsing of human sizes ({@code 80GiB}, {@code 40GB}, {@code 512KiB}, {@code 4096})
 * and formatting for tables. Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones
 * (KB, MB, GB, TB) powers of 1000, as in IEC 80000-13.
 */
public final class Bytes {
  public static final long KiB = 1024L;
  public static final long MiB = 1024L * KiB;
  public static final long GiB = 1024L * MiB;
  public static final long TiB = 1024L * GiB;

  private static final Pattern SIZE =
      Pattern.compile("\\s*(\\d+(?:\\.\\d+)?)\\s*([KMGT]i?B|B)?\\s*", Pattern.CASE_INSENSITIVE);

  private Bytes() {}

  /** Returns the number of bytes a size string denotes; throws IllegalArgumentException otherwise. */
  public static long parse(String text) {
    Matcher m = SIZE.matcher(text == null ? "" : text);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "not a size: '" + text + "' (expected e.g. 4096, 512KiB, 2MiB, 80GiB or 40GB)");
    }
    String unit = m.group(2) == null ? "B" : m.group(2).toUpperCase(Locale.ROOT);
    long multiplier =
        switch (unit) {
          case "B" -> 1L;
          case "KIB" -> KiB;
          case "MIB" -> MiB;
          case "GIB" -> GiB;
          case "TIB" -> TiB;
          case "KB" -> 1_000L;
          case "MB" -> 1_000_000L;
          case "GB" -> 1_000_000_000L;
          case "TB" -> 1_000_000_000_000L;
          default -> throw new IllegalArgumentException("unknown unit in '" + text + "'");
        };
    java.math.BigDecimal value = new java.math.BigDecimal(m.group(1)).multiply(java.math.BigDecimal.valueOf(multiplier));
    if (value.scale() > 0 && value.stripTrailingZeros().scale() > 0) {
      throw new IllegalArgumentException("size '" + text + "' is not a whole number of bytes");
    }
    try {
      return value.longValueExact();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("size '" + text + "' is too large");
    }
  }

  /** Formats a byte count with the largest binary unit that keeps the value at or above 1. */
  public static String format(long bytes) {
    double v = bytes;
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return i == 0 ? bytes + " B" : String.format(Locale.ROOT, "%.2f %s", v, units[i]);
  }

  /**
   * Returns {@code value} (>= 0) rounded up to a multiple of {@code alignment} (> 0); throws
   * ArithmeticException when that multiple exceeds {@code Long.MAX_VALUE}.
   */
  public static long roundUp(long value, long alignment) {
    long r = value % alignment;
    return r == 0 ? value : Math.addExact(value, alignment - r);
  }

  /**
   * Returns ceil(a / b) for a >= 0, b > 0, for every such pair: the quotient is rounded up from the
   * remainder instead of computed as {@code (a + b - 1) / b}, which overflows for a near {@code
   * Long.MAX_VALUE}.
   */
  public static long ceilDiv(long a, long b) {
    long q = a / b;
    return a % b == 0 ? q : q + 1;
  }
}

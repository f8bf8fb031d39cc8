package kvsim.metrics;

/**
 * The two fragmentation ratios of kvsim's results, defined once (README, "Metrics"; the same words
 * as PyTorch's memory statistics):
 *
 * <ul>
 *   <li><b>internal</b>: {@code 1 − requested / allocated}, the share of allocated bytes that no
 *       caller asked for (rounding, unsplit remainders, unused page tails);
 *   <li><b>external</b>: {@code 1 − largest free request / free}, the share of free memory that no
 *       single request can use.
 * </ul>
 *
 * <p>Both are undefined while their denominator is zero (nothing allocated, nothing free): they are
 * then {@code NaN} here, left out of peaks and means by {@link Gauge}, and written as {@code null}
 * (JSON) or an empty field (CSV), never as a number.
 */
public final class Fragmentation {
  private Fragmentation() {}

  /** Returns {@code 1 − requested / allocated}, or NaN when nothing is allocated. */
  public static double internal(long requestedBytes, long allocatedBytes) {
    return allocatedBytes == 0 ? Double.NaN : 1.0 - (double) requestedBytes / allocatedBytes;
  }

  /** Returns {@code 1 − largestFree / free}, or NaN when nothing is free. */
  public static double external(long largestFreeBytes, long freeBytes) {
    return freeBytes == 0 ? Double.NaN : 1.0 - (double) largestFreeBytes / freeBytes;
  }

  /** Returns the ratio boxed, or null where it is undefined (NaN): the form of JSON reports. */
  public static Double orNull(double ratio) {
    return Double.isNaN(ratio) ? null : ratio;
  }
}

package kvsim.gpu.calibrate;

import java.util.Arrays;

/**
 * The two summaries a calibration gives of each measured series (Note [Median and p99]).
 *
 * <p>Note [Median and p99]: the median of n repetitions is the middle one of the sorted times,
 * the mean of the two middle ones for even n; the 99th percentile is the nearest-rank one, the
 * ceil(0.99 n)-th smallest, so it is always a time that was measured (with fewer than 100
 * repetitions it is the largest). Medians, not means, are what the fit uses: a GPU call's time has
 * a long right tail (a context's first touch, a driver's lazy work) that a mean would carry into
 * every modelled call.
 */
public final class Stats {
  private Stats() {}

  /** The median of {@code nanos} (Note [Median and p99]). */
  public static double median(long[] nanos) {
    long[] s = sorted(nanos);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + (double) s[n / 2]) / 2;
  }

  /** The nearest-rank 99th percentile of {@code nanos} (Note [Median and p99]). */
  public static long p99(long[] nanos) {
    long[] s = sorted(nanos);
    int rank = (int) Math.ceil(0.99 * s.length);
    return s[Math.max(rank, 1) - 1];
  }

  /** The median of some values. */
  static double median(double[] values) {
    if (values.length == 0) {
      throw new IllegalArgumentException("no values");
    }
    double[] s = values.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  private static long[] sorted(long[] nanos) {
    if (nanos.length == 0) {
      throw new IllegalArgumentException("no repetitions");
    }
    long[] s = nanos.clone();
    Arrays.sort(s);
    return s;
  }
}

package kvsim.metrics;

import java.util.Arrays;
import org.apache.commons.statistics.descriptive.Quantile;

/**
 * The values of one per-request measurement (a latency), for its mean, maximum and quantiles.
 * Quantiles use the same estimator as seed sweeps (Hyndman and Fan's type 7, numpy's default).
 *
 * <p>Note [Bounded samples]: up to {@value #EXACT_LIMIT} values are kept (eight bytes each, 8 MiB),
 * and quantiles are exact. Past that the values move into a histogram whose buckets are the
 * doubles sharing their sign, exponent and top {@value #MANTISSA_BITS} mantissa bits (a width of
 * 2^-10 of the value), so a run of any length holds a few hundred KiB per measurement: a quantile
 * is then the type-7 estimate over order statistics each taken as its bucket's midpoint, within
 * 2^-11 of the exact value, relatively. The mean (an exact sum) and the maximum stay exact. Runs of
 * up to {@value #EXACT_LIMIT} requests are unchanged by the histogram. Values must then be finite
 * and not negative, as latencies are.
 */
public final class Samples {
  /** The most values kept one by one; past it, the histogram. */
  public static final int EXACT_LIMIT = 1 << 20;
  /** The mantissa bits a histogram bucket keeps. */
  public static final int MANTISSA_BITS = 10;

  private static final int DROPPED_BITS = 52 - MANTISSA_BITS;
  private static final int PAGE = 1 << MANTISSA_BITS;

  private double[] values = new double[1024];
  private int size;
  private long count;
  private double sum;
  private double max = Double.NaN;
  /** Histogram counts by exponent (pages allocated on first use), then by top mantissa bits; null while exact. */
  private long[][] pages;

  /** Adds one value. */
  public void add(double value) {
    count++;
    sum += value;
    max = Double.isNaN(max) ? value : Math.max(max, value);
    if (pages != null) {
      count(value);
      return;
    }
    if (size == EXACT_LIMIT) {
      // Note [Bounded samples]
      pages = new long[1 << 11][];
      for (int i = 0; i < size; i++) {
        count(values[i]);
      }
      values = null;
      count(value);
      return;
    }
    if (size == values.length) {
      values = Arrays.copyOf(values, Math.min(size * 2, EXACT_LIMIT));
    }
    values[size++] = value;
  }

  private void count(double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException("a sample past " + EXACT_LIMIT + " values must be finite and not negative, got " + value);
    }
    long bucket = Double.doubleToRawLongBits(value + 0.0) >>> DROPPED_BITS;
    int exponent = (int) (bucket >>> MANTISSA_BITS);
    long[] page = pages[exponent];
    if (page == null) {
      page = pages[exponent] = new long[PAGE];
    }
    page[(int) (bucket & (PAGE - 1))]++;
  }

  /** Returns the number of values. */
  public long size() {
    return count;
  }

  /** Returns whether quantiles are exact (at most {@value #EXACT_LIMIT} values). */
  public boolean exact() {
    return pages == null;
  }

  /** Returns the mean, or NaN when there are no values. */
  public double mean() {
    return count == 0 ? Double.NaN : sum / count;
  }

  /** Returns the largest value, or NaN when there are no values. */
  public double max() {
    return max;
  }

  /** Returns the p-quantile (p in [0, 1]), or NaN when there are no values. */
  public double quantile(double p) {
    if (count == 0) {
      return Double.NaN;
    }
    if (pages == null) {
      return Quantile.withDefaults().with(Quantile.EstimationMethod.HF7).evaluate(Arrays.copyOf(values, size), p);
    }
    // Hyndman and Fan's type 7 over the order statistics x[0..n-1]: x[lo] + (h - lo)(x[lo + 1] - x[lo]), h = (n - 1) p.
    double h = (count - 1) * p;
    long lo = (long) Math.floor(h);
    double low = orderStatistic(lo);
    return lo + 1 >= count ? low : low + (h - lo) * (orderStatistic(lo + 1) - low);
  }

  /** Returns the k-th smallest value (from 0) as its bucket's midpoint. */
  private double orderStatistic(long k) {
    long seen = 0;
    for (int e = 0; e < pages.length; e++) {
      long[] page = pages[e];
      if (page == null) {
        continue;
      }
      for (int m = 0; m < PAGE; m++) {
        seen += page[m];
        if (seen > k) {
          long bucket = ((long) e << MANTISSA_BITS) | m;
          return bucket == 0 ? 0.0 : Double.longBitsToDouble((bucket << DROPPED_BITS) | (1L << (DROPPED_BITS - 1)));
        }
      }
    }
    throw new IllegalStateException("order statistic " + k + " of " + count);
  }

  /**
   * Returns the p-quantiles for each of {@code ps} (each in [0, 1]), estimated as {@link #quantile}
   * does (linear interpolation, numpy's default) but sorting once; NaNs when there are no values.
   */
  public double[] quantiles(double[] ps) {
    double[] out = new double[ps.length];
    if (count == 0) {
      Arrays.fill(out, Double.NaN);
      return out;
    }
    if (pages != null) { // Note [Bounded samples]: the histogram's estimates, one by one
      for (int i = 0; i < ps.length; i++) {
        out[i] = quantile(ps[i]);
      }
      return out;
    }
    double[] sorted = Arrays.copyOf(values, size);
    Arrays.sort(sorted);
    for (int i = 0; i < ps.length; i++) {
      double h = (size - 1) * ps[i];
      int lo = (int) Math.floor(h);
      int hi = Math.min(lo + 1, size - 1);
      out[i] = sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
    }
    return out;
  }
}

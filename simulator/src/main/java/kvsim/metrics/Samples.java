package kvsim.metrics;

import java.util.Arrays;
import org.apache.commons.statistics.descriptive.Quantile;

/**
 * Every value of one per-request measurement (a latency), kept to give exact quantiles: eight
 * bytes per request, so a run of ten million requests holds 80 MB per measurement. Quantiles use
 * the same estimator as seed sweeps (Hyndman and Fan's type 7, numpy's default).
 */
public final class Samples {
  private double[] values = new double[1024];
  private int size;
  private double sum;

  /** Adds one value. */
  public void add(double value) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = value;
    sum += value;
  }

  /** Returns the number of values. */
  public int size() {
    return size;
  }

  /** Returns the mean, or NaN when there are no values. */
  public double mean() {
    return size == 0 ? Double.NaN : sum / size;
  }

  /** Returns the largest value, or NaN when there are no values. */
  public double max() {
    double m = Double.NaN;
    for (int i = 0; i < size; i++) {
      m = Double.isNaN(m) ? values[i] : Math.max(m, values[i]);
    }
    return m;
  }

  /** Returns the p-quantile (p in [0, 1]), or NaN when there are no values. */
  public double quantile(double p) {
    if (size == 0) {
      return Double.NaN;
    }
    return Quantile.withDefaults().with(Quantile.EstimationMethod.HF7).evaluate(Arrays.copyOf(values, size), p);
  }

  /**
   * Returns the p-quantiles for each of {@code ps} (each in [0, 1]), estimated as {@link #quantile}
   * does (linear interpolation, numpy's default) but sorting once; NaNs when there are no values.
   */
  public double[] quantiles(double[] ps) {
    double[] out = new double[ps.length];
    if (size == 0) {
      Arrays.fill(out, Double.NaN);
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

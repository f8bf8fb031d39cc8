package kvsim.metrics;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A metric's median over seeds with a distribution-free interval for it: the order-statistic
 * (binomial) confidence interval for the median, as in Conover, "Practical Nonparametric
 * Statistics", §3.2, and Hahn &amp; Meeker, "Statistical Intervals", §5.2. Rationale in Note [The
 * seed interval].
 *
 * <p>Note [The seed interval]: the values of one metric over n seeds are n independent draws of the
 * metric's distribution over workloads. With the values sorted, x(1) ≤ … ≤ x(n), the interval
 * [x(k), x(n+1−k)] holds the true median with probability 1 − 2·P(B ≤ k−1) for B ~ Binomial(n,
 * 1/2), whatever the distribution (exact for continuous ones, at least that for discrete ones). kvsim
 * takes the largest k ≥ 1 whose coverage is at least 95 %; where even k = 1 (the whole range) falls
 * short, as for n ≤ 5, the interval is the whole range and its coverage is stated, not rounded up:
 * n = 5 gives [min, max] at 93.75 %, n = 6 [min, max] at 96.9 %, n = 10 [x(2), x(9)] at 97.9 %, n =
 * 20 [x(6), x(15)] at 95.9 %. The coverage is written beside every interval. Unlike a bootstrap it
 * needs no random numbers (so results stay byte-identical) and is exact at the few seeds a serving
 * study can afford; unlike Student-t on the mean it assumes nothing of the shape, which matters for
 * counts such as preemptions that are often 0 with rare large values. The median itself is the
 * sample median (the mean of the two middle values for even n).
 *
 * @param median the sample median
 * @param low the interval's lower end, x(k)
 * @param high the interval's upper end, x(n+1−k)
 * @param n how many values (seeds that defined the metric)
 * @param coverage the interval's exact coverage of the true median (0 for n = 1)
 */
public record Interval(double median, double low, double high, int n, double coverage) {
  /** The coverage kvsim aims at. */
  public static final double TARGET_COVERAGE = 0.95;

  /**
   * Returns the median and interval of {@code values} (Note [The seed interval]).
   *
   * @throws IllegalArgumentException when there are no values or one is not finite
   */
  public static Interval of(double[] values) {
    if (values.length == 0) {
      throw new IllegalArgumentException("no values");
    }
    double[] x = values.clone();
    for (double v : x) {
      if (!Double.isFinite(v)) {
        throw new IllegalArgumentException("not a finite value: " + v);
      }
    }
    Arrays.sort(x);
    int n = x.length;
    double median = n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    if (n == 1) {
      return new Interval(median, x[0], x[0], 1, 0);
    }
    int k = rank(n);
    return new Interval(median, x[k - 1], x[n - k], n, coverage(n, k));
  }

  /**
   * Returns the rank k of the interval's lower end for n values: the largest k ≥ 1 with {@link
   * #coverage}(n, k) ≥ 95 %, or 1 where none reaches it.
   */
  public static int rank(int n) {
    int k = 1;
    while (k + 1 <= (n + 1) / 2 && coverage(n, k + 1) >= TARGET_COVERAGE) {
      k++;
    }
    return k;
  }

  /** Returns the coverage of [x(k), x(n+1−k)]: 1 − 2·P(B ≤ k−1), B ~ Binomial(n, 1/2). */
  public static double coverage(int n, int k) {
    // P(B = j) = C(n, j) / 2^n, summed in logs so that large n stay finite.
    double tail = 0;
    double logC = 0; // log C(n, 0)
    for (int j = 0; j <= k - 1; j++) {
      if (j > 0) {
        logC += Math.log(n - j + 1) - Math.log(j);
      }
      tail += Math.exp(logC - n * Math.log(2));
    }
    return Math.max(0, 1 - 2 * tail);
  }

  /** Returns whether this interval and {@code other} share no value (Note [The seed interval]: disjoint intervals exceed the seeds' noise). */
  public boolean disjoint(Interval other) {
    return high < other.low || other.high < low;
  }

  /** Returns the object of {@code summary.json}'s {@code intervals}: median, low, high, n, coverage. */
  public Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("median", median);
    m.put("low", low);
    m.put("high", high);
    m.put("n", n);
    m.put("coverage", Math.round(coverage * 1e6) / 1e6);
    return m;
  }
}

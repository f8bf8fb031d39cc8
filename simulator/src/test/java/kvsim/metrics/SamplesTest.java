package kvsim.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.apache.commons.statistics.descriptive.Quantile;
import org.junit.jupiter.api.Test;

/** Samples: exact quantiles up to the limit, then a histogram within 2^-11 relatively, with the mean and maximum still exact. */
class SamplesTest {
  @Test
  void pastTheLimitQuantilesAreWithinTheBucketWidthAndMeanAndMaxStayExact() {
    Samples s = new Samples();
    int n = Samples.EXACT_LIMIT + 300_000;
    double[] all = new double[n];
    SplittableRandom rng = new SplittableRandom(7);
    double sum = 0;
    for (int i = 0; i < n; i++) {
      double v = Math.exp(rng.nextGaussian() * 2 - 3); // latencies from about 1 ms to 10 s
      all[i] = v;
      sum += v;
      s.add(v);
      if (i == Samples.EXACT_LIMIT - 1) {
        assertTrue(s.exact());
        assertEquals(Quantile.withDefaults().with(Quantile.EstimationMethod.HF7).evaluate(Arrays.copyOf(all, i + 1), 0.9), s.quantile(0.9));
      }
    }
    assertFalse(s.exact());
    assertEquals(n, s.size());
    assertEquals(sum / n, s.mean());
    assertEquals(Arrays.stream(all).max().getAsDouble(), s.max());
    double[] ps = {0, 0.01, 0.5, 0.9, 0.99, 0.999, 1};
    double[] many = s.quantiles(ps); // the quantile table a serving run writes: once failed past the limit
    for (int i = 0; i < ps.length; i++) {
      double p = ps[i];
      double exact = Quantile.withDefaults().with(Quantile.EstimationMethod.HF7).evaluate(all, p);
      double approx = s.quantile(p);
      assertTrue(Math.abs(approx - exact) <= exact * Math.pow(2, -11), "p" + p + ": " + approx + " vs " + exact);
      assertEquals(approx, many[i], "p" + p);
    }
  }

  @Test
  void manyQuantilesAtOnceAreTheOnesTakenOneByOne() {
    Samples s = new Samples();
    double[] ps = {0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1};
    assertTrue(Arrays.stream(s.quantiles(ps)).allMatch(Double::isNaN), "no values: NaN");
    SplittableRandom rng = new SplittableRandom(3);
    for (int i = 0; i < 1000; i++) {
      s.add(rng.nextDouble());
    }
    double[] many = s.quantiles(ps);
    for (int i = 0; i < ps.length; i++) {
      assertEquals(s.quantile(ps[i]), many[i], 1e-15, "p" + ps[i]);
    }
  }

  @Test
  void zerosAreExactAndANegativeValuePastTheLimitIsRefused() {
    Samples s = new Samples();
    for (int i = 0; i <= Samples.EXACT_LIMIT; i++) {
      s.add(i < Samples.EXACT_LIMIT / 2 ? 0.0 : 1.0);
    }
    assertEquals(0.0, s.quantile(0.25));
    assertEquals(1.0, s.quantile(0.75), Math.pow(2, -11));
    assertThrows(IllegalArgumentException.class, () -> s.add(-1));
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The breakdown windows against a naive model that keeps every arrival (Note [Arrivals kept] in
 * {@link KvBreakdownWindows}): the same steady window to the last bit up to {@link
 * KvBreakdownWindows#KEPT_LIMIT} arrivals, and past it the naive window opened at the first kept
 * arrival at or after the ⌈N/10⌉-th, with at most {@code KEPT_LIMIT} arrivals kept.
 */
class KvBreakdownWindowsProperties {
  private static final int K = KvBreakdownWindows.CATEGORIES.size();

  /** The windows as they were before arrivals were bounded: every arrival kept, the window opened at any arrival. */
  private static final class Naive {
    boolean started;
    long startNanos;
    long lastNanos;
    final double[] last = new double[K];
    final double[] integral = new double[K];
    final double[] segmentPeak = new double[K];
    long[] arrivalNanos = new long[16];
    long[] covered = new long[16];
    double[] integrals = new double[16 * K];
    double[] segmentPeaks = new double[16 * K];
    int arrivals;

    Naive() {
      Arrays.fill(segmentPeak, Double.NaN);
    }

    void record(long timeNanos, double[] shares) {
      if (started) {
        for (int c = 0; c < K; c++) {
          integral[c] += last[c] * (timeNanos - lastNanos);
        }
      } else {
        started = true;
        startNanos = timeNanos;
      }
      lastNanos = timeNanos;
      for (int c = 0; c < K; c++) {
        last[c] = shares[c];
        segmentPeak[c] = Double.isNaN(segmentPeak[c]) ? shares[c] : Math.max(segmentPeak[c], shares[c]);
      }
    }

    void arrival(long timeNanos) {
      if (arrivals == arrivalNanos.length) {
        arrivalNanos = Arrays.copyOf(arrivalNanos, arrivals * 2);
        covered = Arrays.copyOf(covered, arrivals * 2);
        integrals = Arrays.copyOf(integrals, arrivals * 2 * K);
        segmentPeaks = Arrays.copyOf(segmentPeaks, arrivals * 2 * K);
      }
      long dt = started ? timeNanos - lastNanos : 0;
      arrivalNanos[arrivals] = timeNanos;
      covered[arrivals] = started ? timeNanos - startNanos : 0;
      for (int c = 0; c < K; c++) {
        integrals[arrivals * K + c] = integral[c] + last[c] * dt;
        if (arrivals > 0) {
          segmentPeaks[(arrivals - 1) * K + c] = segmentPeak[c];
        }
        segmentPeak[c] = started ? last[c] : Double.NaN;
      }
      arrivals++;
    }

    /** The window from arrival {@code from} to the last: bounds in seconds, then K means, then K peaks. */
    double[] window(int from) {
      int to = arrivals - 1;
      double[] out = new double[2 + 2 * K];
      Arrays.fill(out, Double.NaN);
      out[0] = arrivalNanos[from] / 1e9;
      out[1] = arrivalNanos[to] / 1e9;
      long span = covered[to] - covered[from];
      if (span > 0) {
        for (int c = 0; c < K; c++) {
          out[2 + c] = (integrals[to * K + c] - integrals[from * K + c]) / span;
          for (int a = from; a < to; a++) {
            double p = segmentPeaks[a * K + c];
            if (!Double.isNaN(p) && (Double.isNaN(out[2 + K + c]) || p > out[2 + K + c])) {
              out[2 + K + c] = p;
            }
          }
        }
      }
      return out;
    }
  }

  /** Drives both with {@code n} arrivals, a few samples between them, and returns the naive model. */
  private static Naive drive(KvBreakdownWindows w, int n, long seed) {
    Naive naive = new Naive();
    SplittableRandom rng = new SplittableRandom(seed);
    long now = 0;
    double[] shares = new double[K];
    for (int i = 0; i < n; i++) {
      int samples = rng.nextInt(3);
      for (int s = 0; s < samples; s++) {
        now += rng.nextInt(1_000_000);
        double rest = 1;
        for (int c = 0; c < K - 1; c++) {
          shares[c] = rest * rng.nextDouble() * 0.5;
          rest -= shares[c];
        }
        shares[K - 1] = rest;
        w.record(now, shares);
        naive.record(now, shares);
      }
      now += rng.nextInt(3) == 0 ? 0 : rng.nextInt(2_000_000);
      w.arrival(now);
      naive.arrival(now);
    }
    return naive;
  }

  private static double[] flat(KvBreakdownWindows.Window w) {
    double[] out = new double[2 + 2 * K];
    out[0] = w.fromSeconds();
    out[1] = w.toSeconds();
    System.arraycopy(w.mean(), 0, out, 2, K);
    System.arraycopy(w.peak(), 0, out, 2 + K, K);
    return out;
  }

  @Test
  void upToTheLimitEveryArrivalIsKeptAndTheWindowIsTheNaiveOne() {
    for (int n : new int[] {1, 2, 9, 10, 11, 21, 1000, 54_321}) {
      KvBreakdownWindows w = new KvBreakdownWindows();
      Naive naive = drive(w, n, n);
      assertArrayEquals(naive.window(KvBreakdownWindows.steadyFromIndex(n)), flat(w.steady()), n + " arrivals");
    }
    KvBreakdownWindows w = new KvBreakdownWindows();
    Naive naive = drive(w, KvBreakdownWindows.KEPT_LIMIT, 7);
    assertArrayEquals(naive.window(KvBreakdownWindows.steadyFromIndex(KvBreakdownWindows.KEPT_LIMIT)), flat(w.steady()));
    assertEquals(KvBreakdownWindows.KEPT_LIMIT, w.keptArrivals());
  }

  @Test
  void pastTheLimitTheWindowOpensAtTheFirstKeptArrivalFromTheTenthOn() {
    int limit = KvBreakdownWindows.KEPT_LIMIT;
    // Just past the limit (stride 2), at a second halving (stride 4), and at one that leaves the
    // tenth arrival between two kept ones.
    for (int n : new int[] {limit + 1, 2 * limit + 1, 3 * limit + 7, 4 * limit}) {
      KvBreakdownWindows w = new KvBreakdownWindows();
      Naive naive = drive(w, n, n);
      int stride = Integer.highestOneBit((n - 1) / limit) * 2;
      int from = (KvBreakdownWindows.steadyFromIndex(n) + stride - 1) / stride * stride;
      assertArrayEquals(naive.window(from), flat(w.steady()), n + " arrivals, stride " + stride);
      assertTrue(w.keptArrivals() <= limit && w.keptArrivals() > limit / 2, n + " arrivals kept " + w.keptArrivals());
    }
  }
}

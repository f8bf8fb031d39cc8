package kvsim.serving;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The KV breakdown of a serving run as a step function of simulated time, summed into its two
 * averaging windows (Note [Breakdown windows] in {@link ServingMetrics}): the whole run, and the
 * steady state from the arrival of the ⌈N/10⌉-th of the run's N requests to the arrival of the
 * last. A sample's shares hold from its time until the next sample. Since N is known only when the
 * requests have all arrived, the running integral of each share (and the time covered) is kept at
 * every arrival, with the largest share seen between consecutive arrivals, so that any window from
 * one arrival to another is a difference of two of them: a few numbers per request, for at most
 * {@value #KEPT_LIMIT} arrivals (Note [Arrivals kept]).
 */
final class KvBreakdownWindows {
  /** The categories, in the order of the shares passed to {@link #record} and of the summaries. */
  static final List<String> CATEGORIES = List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle");
  /** The categories of the memory in use, {@link #CATEGORIES} without {@code idle}. */
  static final List<String> USED = CATEGORIES.subList(0, 4);
  static final int IDLE = 4;
  private static final int K = CATEGORIES.size();
  /** The most arrivals kept (Note [Arrivals kept]); the latency samples' limit too ({@link kvsim.metrics.Samples#EXACT_LIMIT}). */
  static final int KEPT_LIMIT = 1 << 20;

  // Note [Arrivals kept]: keeping every arrival costs 96 bytes a request, 2.6 GB for the 27 M
  // requests of a week-long trace, more than the launcher's heap: the run's memory would be its
  // length. So at most KEPT_LIMIT arrivals are kept, every stride-th one (the 0th, the stride-th,
  // ...): the stride is 1 up to KEPT_LIMIT arrivals, and each time the kept arrivals fill up, every
  // second one is dropped (its segment's peak merged into the one kept before it) and the stride
  // doubles. The last arrival is kept apart, always. The steady window then opens at the first kept
  // arrival at or after the ⌈N/10⌉-th: that very arrival for runs of up to KEPT_LIMIT requests, and
  // fewer than a stride of arrivals later past them (the week's 27 M arrivals end at a stride of
  // 32); its bounds are reported, so the window is always the one its numbers describe.

  private boolean started;
  private long startNanos;
  private long lastNanos;
  private final double[] last = new double[K];
  private final double[] integral = new double[K];
  private final double[] peak = new double[K];
  private final double[] segmentPeak = new double[K];
  /**
   * Per kept arrival (the j-th is arrival {@code j * stride}): its time; the integrals ({@code K} per
   * arrival) and time covered up to it; the peaks from it to the next kept one.
   */
  private long[] arrivalNanos = new long[64];
  private double[] arrivalIntegrals = new double[64 * K];
  private long[] arrivalCovered = new long[64];
  private double[] segmentPeaks = new double[64 * K];
  private int kept;
  private int stride = 1;
  private int arrivals;
  /** The last arrival: its time, the time covered and the integrals up to it. */
  private long lastArrivalNanos;
  private long lastArrivalCovered;
  private final double[] lastArrivalIntegrals = new double[K];

  KvBreakdownWindows() {
    Arrays.fill(peak, Double.NaN);
    Arrays.fill(segmentPeak, Double.NaN);
  }

  /** Records the shares (in {@link #CATEGORIES} order, summing to 1) that hold from {@code timeNanos} (non-decreasing) on. */
  void record(long timeNanos, double[] shares) {
    if (started) {
      long dt = timeNanos - lastNanos;
      for (int c = 0; c < K; c++) {
        integral[c] += last[c] * dt;
      }
    } else {
      started = true;
      startNanos = timeNanos;
    }
    lastNanos = timeNanos;
    for (int c = 0; c < K; c++) {
      last[c] = shares[c];
      peak[c] = Double.isNaN(peak[c]) ? shares[c] : Math.max(peak[c], shares[c]);
      segmentPeak[c] = Double.isNaN(segmentPeak[c]) ? shares[c] : Math.max(segmentPeak[c], shares[c]);
    }
  }

  /** Marks a request's arrival at {@code timeNanos} (non-decreasing, and never before a sample already recorded). */
  void arrival(long timeNanos) {
    long dt = started ? timeNanos - lastNanos : 0;
    if (arrivals > 0) {
      // The segment from the previous arrival closes: its peak joins the kept arrival it follows.
      for (int c = 0; c < K; c++) {
        segmentPeaks[(kept - 1) * K + c] = larger(segmentPeaks[(kept - 1) * K + c], segmentPeak[c]);
      }
    }
    lastArrivalNanos = timeNanos;
    lastArrivalCovered = started ? timeNanos - startNanos : 0;
    for (int c = 0; c < K; c++) {
      lastArrivalIntegrals[c] = integral[c] + last[c] * dt;
      // The share holding at the arrival counts in the segment it opens.
      segmentPeak[c] = started ? last[c] : Double.NaN;
    }
    if (arrivals % stride == 0) {
      if (kept == KEPT_LIMIT) {
        dropEverySecond(); // arrivals is KEPT_LIMIT times the old stride, so a multiple of the new one
      }
      if (kept == arrivalNanos.length) {
        int n = Math.min(kept * 2, KEPT_LIMIT);
        arrivalNanos = Arrays.copyOf(arrivalNanos, n);
        arrivalCovered = Arrays.copyOf(arrivalCovered, n);
        arrivalIntegrals = Arrays.copyOf(arrivalIntegrals, n * K);
        segmentPeaks = Arrays.copyOf(segmentPeaks, n * K);
      }
      arrivalNanos[kept] = timeNanos;
      arrivalCovered[kept] = lastArrivalCovered;
      System.arraycopy(lastArrivalIntegrals, 0, arrivalIntegrals, kept * K, K);
      Arrays.fill(segmentPeaks, kept * K, kept * K + K, Double.NaN);
      kept++;
    }
    arrivals++;
  }

  /** Note [Arrivals kept]: keeps every second kept arrival, each with the peaks up to the next one left, and doubles the stride. */
  private void dropEverySecond() {
    int half = kept / 2;
    for (int j = 0; j < half; j++) {
      arrivalNanos[j] = arrivalNanos[2 * j];
      arrivalCovered[j] = arrivalCovered[2 * j];
      for (int c = 0; c < K; c++) {
        arrivalIntegrals[j * K + c] = arrivalIntegrals[2 * j * K + c];
        segmentPeaks[j * K + c] = larger(segmentPeaks[2 * j * K + c], segmentPeaks[(2 * j + 1) * K + c]);
      }
    }
    kept = half;
    stride *= 2;
  }

  /** The larger of two peaks, NaN (none) only where both are. */
  private static double larger(double a, double b) {
    if (Double.isNaN(a)) {
      return b;
    }
    return !Double.isNaN(b) && b > a ? b : a;
  }

  /**
   * One window's breakdown: its kind and bounds in seconds (null where it has none), each category's
   * time-weighted mean and peak, and the shares of the memory in use (each used category's mean over
   * 1 − idle's); a value is null where the window is empty or the memory never in use.
   */
  record Window(String kind, Double fromSeconds, Double toSeconds, double[] mean, double[] peak) {
    /** Returns the window as the object of {@code kv_breakdown} (results/SCHEMA.md). */
    Map<String, Object> toMap() {
      Map<String, Object> m = new LinkedHashMap<>();
      Map<String, Object> w = new LinkedHashMap<>();
      w.put("kind", kind);
      w.put("from_s", fromSeconds);
      w.put("to_s", toSeconds);
      m.put("window", w);
      for (int c = 0; c < K; c++) {
        Map<String, Object> one = new LinkedHashMap<>();
        one.put("mean", orNull(mean[c]));
        one.put("peak", orNull(peak[c]));
        m.put(CATEGORIES.get(c), one);
      }
      Map<String, Object> used = new LinkedHashMap<>();
      double inUse = 1 - mean[IDLE];
      for (int c = 0; c < USED.size(); c++) {
        used.put(USED.get(c), inUse > 0 ? orNull(mean[c] / inUse) : null);
      }
      m.put("used_memory", used);
      return m;
    }

    /** Returns the mean of {@code category}, NaN where undefined; throws for an unknown category. */
    double mean(String category) {
      int c = CATEGORIES.indexOf(category);
      if (c < 0) {
        throw new IllegalArgumentException(category);
      }
      return mean[c];
    }
  }

  private static Double orNull(double v) {
    return Double.isNaN(v) ? null : v;
  }

  /**
   * The whole run: from the first sample to the last (the engine's, from the first arrival to the
   * last finish); the shares of the last sample where no time passed, all undefined without samples.
   */
  Window whole() {
    double[] mean = new double[K];
    Arrays.fill(mean, Double.NaN);
    if (!started) {
      return new Window("whole run", null, null, mean, mean.clone());
    }
    long span = lastNanos - startNanos;
    for (int c = 0; c < K; c++) {
      mean[c] = span > 0 ? integral[c] / span : last[c];
    }
    return new Window("whole run", startNanos / 1e9, lastNanos / 1e9, mean, peak.clone());
  }

  /** Returns how many arrivals are kept (at most {@value #KEPT_LIMIT}: Note [Arrivals kept]). */
  int keptArrivals() {
    return kept;
  }

  /**
   * Returns the index (from 0) of the arrival that opens the steady window of {@code n} arrivals:
   * that of the ⌈n/10⌉-th request, the first for n of 10 or fewer.
   */
  static int steadyFromIndex(int n) {
    return Math.max(0, (n + 9) / 10 - 1);
  }

  /**
   * The steady state: from the arrival of the ⌈N/10⌉-th request (past {@value #KEPT_LIMIT}
   * requests, the first kept arrival from it on: Note [Arrivals kept]) to the arrival of the last
   * (Note [Breakdown windows]); its means and peaks undefined where the window has no length (one
   * request, or all arriving at once), its bounds null without arrivals.
   */
  Window steady() {
    double[] mean = new double[K];
    double[] peaks = new double[K];
    Arrays.fill(mean, Double.NaN);
    Arrays.fill(peaks, Double.NaN);
    if (arrivals == 0) {
      return new Window("steady state", null, null, mean, peaks);
    }
    int from = (steadyFromIndex(arrivals) + stride - 1) / stride;
    long covered = lastArrivalCovered - arrivalCovered[from];
    if (covered > 0) {
      for (int c = 0; c < K; c++) {
        mean[c] = (lastArrivalIntegrals[c] - arrivalIntegrals[from * K + c]) / covered;
        for (int j = from; j < kept; j++) {
          peaks[c] = larger(peaks[c], segmentPeaks[j * K + c]);
        }
      }
    }
    return new Window("steady state", arrivalNanos[from] / 1e9, lastArrivalNanos / 1e9, mean, peaks);
  }
}

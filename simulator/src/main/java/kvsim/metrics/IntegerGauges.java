package kvsim.metrics;

/**
 * Several integer gauges (bytes, counts) recorded together after every event, each summarised
 * exactly as its own {@link Gauge} would be: the same peak, time-weighted mean and final value,
 * bit for bit. Call {@link #time} once per event, then {@link #value} for every gauge in order.
 *
 * <p>Note [Gauges recorded together]: an integer value is never undefined, so the gauges recorded
 * at the same events share everything but their values: the first and last times, and the span
 * that weights the mean (each {@link Gauge} adds each positive step to its span only after a
 * defined value, and these values are always defined). The clock is kept here once instead of once
 * a gauge. A gauge's plain sum over events counts only while that span is still zero: it is read
 * only when the span stays zero to the end, and the span never shrinks, so the sum is the same
 * wherever it is read. The peak is kept as a long (converting to double is monotonic, so the
 * double of the largest long is the largest double), and the integral is summed in double, value
 * times step, in the same order as {@link Gauge} sums it (Note [Overflow] there). Eight separate
 * gauges an event, six of them integer, were a tenth of a binary trace's warm replay in
 * async-profiler samples.
 */
final class IntegerGauges {
  private final long[] last;
  private final long[] peak;
  private final double[] integral;
  private final double[] eventSum;
  private long events;
  private long firstTimeNanos;
  private long lastTimeNanos;
  private long spanNanos;
  /** The step since the previous event, if positive, else 0. */
  private long stepNanos;

  /** Gauges numbered 0 to {@code count - 1}. */
  IntegerGauges(int count) {
    last = new long[count];
    peak = new long[count];
    integral = new double[count];
    eventSum = new double[count];
  }

  /** Starts the record of an event at {@code timeNanos} (non-decreasing, Note [Overflow] on Gauge). */
  void time(long timeNanos) {
    if (events == 0) {
      firstTimeNanos = timeNanos;
      stepNanos = 0;
    } else {
      long dt = timeNanos - lastTimeNanos;
      stepNanos = dt > 0 ? dt : 0;
      spanNanos += stepNanos;
    }
    lastTimeNanos = timeNanos;
    events++;
  }

  /** Records gauge {@code g}'s value at the event that {@link #time} started. */
  void value(int g, long value) {
    if (stepNanos > 0) {
      integral[g] += (double) last[g] * stepNanos;
    } else if (spanNanos == 0) {
      eventSum[g] += value;
    }
    if (events == 1 || value > peak[g]) {
      peak[g] = value;
    }
    last[g] = value;
  }

  /** Returns gauge {@code g}'s value at the last event (0 before the first). */
  long last(int g) {
    return last[g];
  }

  /** Returns gauge {@code g}'s summary, equal to {@link Gauge#summary} over the same records. */
  Gauge.Summary summary(int g) {
    if (events == 0) {
      return new Gauge.Summary(null, null, null);
    }
    double mean;
    if (spanNanos > 0) {
      mean = integral[g] / spanNanos;
    } else if (lastTimeNanos == firstTimeNanos) {
      mean = eventSum[g] / events;
    } else {
      mean = last[g];
    }
    return new Gauge.Summary((double) peak[g], mean, (double) last[g]);
  }
}

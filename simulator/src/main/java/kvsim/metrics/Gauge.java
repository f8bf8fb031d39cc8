package kvsim.metrics;

/**
 * Exact summary of one gauge over a run: peak, time-weighted mean and final value, taken over every
 * event (not over sampled points). A value recorded at time t holds until the next record; the mean
 * is the integral over [first time, last time] divided by that span (SSJ's {@code Accumulate}
 * idea), or the plain mean over events when the trace carries no time. A ratio gauge may be
 * undefined at some events (NaN is passed); it then counts neither in the peak nor in the mean,
 * and a gauge that was never defined reports null.
 *
 * <p>Note [Overflow]: the time-weighted integral is a sum of value × nanoseconds, up to 2^126 for a
 * gauge and a span near 2^63, which no long holds; it is therefore accumulated in a double (as is
 * the plain sum over events), where it cannot overflow and a normal run's result is unchanged. Byte
 * values reach the double exactly up to 2^53 B (8 PiB), beyond any simulated device. The span is a
 * long: times are non-negative and non-decreasing (the L1 reader and the generators ensure it), so
 * each difference and their sum, at most the last time, stay below 2^63.
 */
public final class Gauge {
  private final String name;
  private boolean started;
  private long firstTimeNanos;
  private long lastTimeNanos;
  private double lastValue = Double.NaN;
  private double integral;
  private long definedSpanNanos;
  private double eventSum;
  private long definedEvents;
  private double peak = Double.NaN;

  public Gauge(String name) {
    this.name = name;
  }

  public String name() {
    return name;
  }

  /** Records the gauge's value after an event at {@code timeNanos} (non-decreasing). */
  public void record(long timeNanos, double value) {
    if (started) {
      long dt = timeNanos - lastTimeNanos; // no overflow for non-negative times (Note [Overflow])
      if (dt > 0 && !Double.isNaN(lastValue)) {
        integral += lastValue * dt; // in double: value × ns exceeds a long (Note [Overflow])
        definedSpanNanos += dt;
      }
    } else {
      started = true;
      firstTimeNanos = timeNanos;
    }
    lastTimeNanos = timeNanos;
    lastValue = value;
    if (!Double.isNaN(value)) {
      eventSum += value;
      definedEvents++;
      if (Double.isNaN(peak) || value > peak) {
        peak = value;
      }
    }
  }

  /** Returns the summary so far. */
  public Summary summary() {
    Double mean;
    if (definedSpanNanos > 0) {
      mean = integral / definedSpanNanos;
    } else if (definedEvents > 0 && lastTimeNanos == firstTimeNanos) {
      mean = eventSum / definedEvents;
    } else if (definedEvents > 0) {
      mean = Double.isNaN(lastValue) ? null : lastValue;
    } else {
      mean = null;
    }
    return new Summary(
        Double.isNaN(peak) ? null : peak, mean, Double.isNaN(lastValue) ? null : lastValue);
  }

  /**
   * Peak, time-weighted mean and final value; null where the gauge was never defined.
   *
   * @param peak the largest value recorded
   * @param mean the time-weighted mean
   * @param last the value after the last event
   */
  public record Summary(Double peak, Double mean, Double last) {}
}

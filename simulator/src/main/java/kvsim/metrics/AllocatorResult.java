package kvsim.metrics;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything one allocator run reports: what ran, the exact summaries, counters and the sampled
 * time series. Deterministic for the same inputs; wall-clock figures live in {@link Timing}.
 *
 * @param allocator registry name
 * @param options options in force, defaults included
 * @param counters operation and refusal counts by result-file name
 * @param summaries gauge summaries by metric name
 * @param modelledAllocatorNanos modelled time spent in the allocator's own operations
 * @param activationOomCount refusals in the activations region (0 without one)
 * @param extra model-specific metrics by result-file name
 * @param samples time-series rows: event, t_ns, then {@link RunMetrics#SAMPLE_COLUMNS}
 */
public record AllocatorResult(
    String allocator,
    Map<String, Object> options,
    Map<String, Long> counters,
    Map<String, Gauge.Summary> summaries,
    long modelledAllocatorNanos,
    long activationOomCount,
    Map<String, Long> extra,
    List<double[]> samples) {

  /**
   * Wall-clock figures of one run, kept out of the deterministic summary.
   *
   * @param allocator registry name
   * @param events events applied
   * @param wallNanos wall-clock time
   */
  public record Timing(String allocator, long events, long wallNanos) {
    /** Returns events per wall-clock second. */
    public double eventsPerSecond() {
      return wallNanos == 0 ? 0 : events * 1e9 / wallNanos;
    }
  }

  /**
   * Returns the run's entry of {@code summary.json} (format {@code kvsim-summary}): allocator,
   * options, counters, modelled time and each gauge's peak, mean and final value.
   */
  public Map<String, Object> summary() {
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("allocator", allocator);
    a.put("options", options);
    a.putAll(counters);
    a.put("activation_oom_count", activationOomCount);
    a.put("modelled_allocator_nanos", modelledAllocatorNanos);
    Map<String, Object> metrics = new LinkedHashMap<>();
    for (Map.Entry<String, Gauge.Summary> e : summaries.entrySet()) {
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("peak", integral(e.getKey(), e.getValue().peak()));
      s.put("mean", e.getValue().mean());
      s.put("final", integral(e.getKey(), e.getValue().last()));
      metrics.put(e.getKey(), s);
    }
    a.put("metrics", metrics);
    if (!extra.isEmpty()) {
      a.put("extra", extra);
    }
    return a;
  }

  /** Byte and count gauges are whole numbers: written as integers. */
  private static Object integral(String metric, Double v) {
    if (v == null) {
      return null;
    }
    return isIntegralGauge(metric) ? (Object) Math.round(v) : v;
  }

  /** Returns whether a gauge's peak and final value are whole numbers (bytes, counts). */
  public static boolean isIntegralGauge(String metric) {
    return metric.endsWith("_bytes") || metric.equals("live_allocations");
  }

  /** Returns the value of a headline metric: a counter, or {@code name.peak|mean|last} of a gauge; null if undefined. */
  public Double headline(String name) {
    Long c = counters.get(name);
    if (c != null) {
      return c.doubleValue();
    }
    int dot = name.lastIndexOf('.');
    if (dot < 0) {
      throw new IllegalArgumentException("unknown metric " + name);
    }
    Gauge.Summary s = summaries.get(name.substring(0, dot));
    if (s == null) {
      throw new IllegalArgumentException("unknown metric " + name);
    }
    return switch (name.substring(dot + 1)) {
      case "peak" -> s.peak();
      case "mean" -> s.mean();
      case "last" -> s.last();
      default -> throw new IllegalArgumentException("unknown statistic in " + name);
    };
  }
}

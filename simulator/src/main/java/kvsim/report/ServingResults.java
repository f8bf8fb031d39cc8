package kvsim.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a serving run's result folder holds: {@code run.ServingRunner#results} builds it from a
 * run, {@link ResultsWriter#writeServing(ResultFolder.Target, ServingResults, List)} writes it and
 * {@link ServingResultsReader} gives it back: the configuration echo, the grid of a what-if run, one
 * entry per system or grid cell in the order written, and the files of sampled rows. Each entry is
 * an {@link Entry}: the fields every system has, typed, and the optional ones (the KV manager's
 * counters, sequence groups: {@code results/SCHEMA.md}) as an ordered map; {@link Entry#toMap}
 * gives the object of {@code summary.json} back, field for field.
 *
 * @param config the configuration echo: every top-level field of {@code summary.json} but the
 *     format marker, {@code grid} and {@code systems}, in file order
 * @param grid each key of a what-if grid with its values, as given; empty without a grid
 * @param entries one per system (per cell with a grid), in the order written
 * @param seriesColumns the columns of {@code timeseries.csv} after {@code system}
 * @param series per entry's {@link #label}, in order, its sampled rows
 * @param quantileColumns the columns of {@code latency-quantiles.csv} after {@code system} (empty
 *     without that file)
 * @param quantiles per entry's {@link #label}, the rows of {@code latency-quantiles.csv} (empty for
 *     folders written before that file existed)
 */
public record ServingResults(
    Map<String, Object> config,
    Map<String, List<String>> grid,
    List<Entry> entries,
    List<String> seriesColumns,
    Map<String, List<double[]>> series,
    List<String> quantileColumns,
    Map<String, List<double[]>> quantiles) {

  /** The latency fields of an entry, in the order written. */
  public static final List<String> LATENCIES = List.of("ttft_seconds", "tpot_seconds", "e2e_seconds", "normalized_latency_seconds_per_token");

  /**
   * Returns the results of these entries given as the plain objects of {@code summary.json} (as a
   * run builds them), each made an {@link Entry} ({@link Entry#of}).
   */
  public static ServingResults of(
      Map<String, Object> config, Map<String, List<String>> grid, List<Map<String, Object>> systems, List<String> seriesColumns,
      Map<String, List<double[]>> series, List<String> quantileColumns, Map<String, List<double[]>> quantiles) {
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < systems.size(); i++) {
      String at = "systems[" + i + "]";
      entries.add(Entry.of(systems.get(i), (field, problem) -> new IllegalArgumentException(at + "." + field + ": " + problem)));
    }
    return new ServingResults(config, grid, entries, seriesColumns, series, quantileColumns, quantiles);
  }

  /** Returns each entry as the object of {@code summary.json}, in order. */
  public List<Map<String, Object>> systems() {
    return entries.stream().map(Entry::toMap).toList();
  }

  /**
   * The counts of an entry: requests, iterations, preemptions, tokens and the largest batch.
   *
   * @param requestsArrived requests that arrived
   * @param requestsFinished requests that finished
   * @param requestsRejected requests refused (too long for the KV memory or the model)
   * @param requestsTruncated requests cut at the model's length
   * @param iterations iterations run
   * @param preemptions preemptions of running requests
   * @param scheduledTokens tokens scheduled over all iterations
   * @param outputTokens tokens generated
   * @param batchSizeMax the largest batch of an iteration
   */
  public record Counts(
      long requestsArrived, long requestsFinished, long requestsRejected, long requestsTruncated, long iterations, long preemptions,
      long scheduledTokens, long outputTokens, long batchSizeMax) {}

  /**
   * The rates of an entry, null where undefined (no time passed, no iteration).
   *
   * @param spanSeconds from the first arrival to the last finish
   * @param throughputTokensPerSecond output tokens per second of the span
   * @param throughputRequestsPerSecond finished requests per second of the span
   * @param batchSizeMean sequences scheduled per iteration, averaged over iterations
   */
  public record Rates(double spanSeconds, Double throughputTokensPerSecond, Double throughputRequestsPerSecond, Double batchSizeMean) {}

  /** One latency's statistics in seconds, each null where no request defined it. */
  public record Latency(Double mean, Double p50, Double p90, Double p99) {
    /** Returns the statistic of this name ({@code mean}, {@code p50}, {@code p90}, {@code p99}), null for another. */
    public Double get(String statistic) {
      return switch (statistic) {
        case "mean" -> mean;
        case "p50" -> p50;
        case "p90" -> p90;
        case "p99" -> p99;
        default -> null;
      };
    }
  }

  /**
   * An entry's {@code slo} object, written only by runs with {@code --slo} (results/SCHEMA.md;
   * the rules are {@code run.SloTargets}' and Note [Per-request targets] in {@code
   * serving.ServingMetrics}).
   *
   * @param targets the targets as written
   * @param attainment the share of the arrived requests that finished and met every per-request target
   * @param requestsMet the requests that did
   * @param requestsMissed the others (rejected, aborted and unfinished ones included)
   * @param goodputRps requests met per second of the run's span; null when no time passed
   * @param goodputTokensPerSecond their output tokens per second of the span; null likewise
   * @param perTarget per target as written: {@code share_met} (per-request targets) or {@code
   *     value}/{@code value_seconds} and {@code met}, as plain values
   * @param met whether every target with a verdict was met; null when none has one
   */
  public record Slo(List<String> targets, double attainment, long requestsMet, long requestsMissed, Double goodputRps, Double goodputTokensPerSecond,
      Map<String, Map<String, Object>> perTarget, Boolean met) {
    /** Reads the {@code slo} object {@code v}; a problem is {@code error(field, problem)}. */
    @SuppressWarnings("unchecked")
    static Slo of(Object v, java.util.function.BiFunction<String, String, RuntimeException> error) {
      if (!(v instanceof Map<?, ?> raw)) {
        throw error.apply("slo", "expected an object, found " + Entry.shown(v));
      }
      Map<String, Object> m = (Map<String, Object>) raw;
      var in = Entry.inside("slo", error);
      if (!(m.get("targets") instanceof List<?> ts) || ts.isEmpty() || !ts.stream().allMatch(t -> t instanceof String)) {
        throw in.apply("targets", "expected a non-empty list of targets as written");
      }
      Double attainment = Entry.numberOrNull(m, "attainment", in);
      if (attainment == null || attainment < 0 || attainment > 1) {
        throw in.apply("attainment", "expected a share in [0, 1], found " + m.get("attainment"));
      }
      Map<String, Object> per = Entry.object(m, "per_target", in);
      Map<String, Map<String, Object>> perTarget = new LinkedHashMap<>();
      for (String t : per.keySet()) {
        Map<String, Object> o = Entry.object(per, t, Entry.inside("slo.per_target", error));
        var at = Entry.inside("slo.per_target." + t, error);
        if (o.containsKey("share_met")) {
          Entry.numberOrNull(o, "share_met", at);
        } else if (!(o.get("met") instanceof Boolean)) {
          throw at.apply("met", o.containsKey("met") ? "expected true or false, found " + Entry.shown(o.get("met")) : "missing");
        }
        perTarget.put(t, java.util.Collections.unmodifiableMap(o));
      }
      Object met = m.get("met");
      if (!m.containsKey("met") || met != null && !(met instanceof Boolean)) {
        throw in.apply("met", m.containsKey("met") ? "expected true, false or null, found " + Entry.shown(met) : "missing");
      }
      return new Slo(List.copyOf((List<String>) ts), attainment, Entry.whole(m, "requests_met", in), Entry.whole(m, "requests_missed", in),
          Entry.numberOrNull(m, "goodput_rps", in), Entry.numberOrNull(m, "goodput_tokens_per_second", in),
          java.util.Collections.unmodifiableMap(perTarget), (Boolean) met);
    }
  }

  /** One category's share of the KV region: time-weighted mean and peak, null where undefined. */
  public record Share(Double mean, Double peak) {}

  /**
   * The window a KV breakdown averages over (Note [Breakdown windows] in {@code
   * serving.ServingMetrics}): {@code whole run} or {@code steady state}, its bounds in seconds of
   * simulated time, null where it has none (no sample, no arrival).
   */
  public record Window(String kind, Double fromSeconds, Double toSeconds) {}

  /**
   * A KV breakdown over one window ({@code kv_breakdown}, {@code kv_breakdown_steady}).
   *
   * @param window the window; null in folders written before the window was stated
   * @param shares per category ({@code token_states}, ..., {@code idle}), its share of the KV region
   * @param usedMemory per category of the memory in use (idle excluded), its share of that memory,
   *     null where undefined; empty in folders written before idle memory was told apart
   */
  public record Breakdown(Window window, Map<String, Share> shares, Map<String, Double> usedMemory) {
    /**
     * Returns the time-weighted mean share of {@code category}, null where undefined or absent. The
     * names of folders written before idle memory was told apart are read too: {@code internal_waste}
     * is {@code internal_fragmentation}, {@code external_waste} is {@code external_fragmentation}
     * plus {@code idle}.
     */
    public Double mean(String category) {
      Share s = shares.get(category);
      if (s != null) {
        return s.mean();
      }
      if (category.equals("internal_waste")) {
        return mean("internal_fragmentation");
      }
      if (category.equals("external_waste") && shares.containsKey("idle")) {
        Double fragmented = mean("external_fragmentation");
        Double idle = mean("idle");
        return fragmented == null || idle == null ? null : fragmented + idle;
      }
      return null;
    }

    /** Returns the object written for it in {@code summary.json}. */
    Map<String, Object> toMap() {
      Map<String, Object> kv = new LinkedHashMap<>();
      if (window != null) {
        Map<String, Object> w = new LinkedHashMap<>();
        w.put("kind", window.kind());
        w.put("from_s", window.fromSeconds());
        w.put("to_s", window.toSeconds());
        kv.put("window", w);
      }
      shares.forEach((category, share) -> {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("mean", share.mean());
        o.put("peak", share.peak());
        kv.put(category, o);
      });
      if (!usedMemory.isEmpty()) {
        kv.put("used_memory", new LinkedHashMap<>(usedMemory));
      }
      return kv;
    }
  }

  /**
   * One system's results, or one grid cell's: the fields of {@code summary.json}'s entry, in its
   * order (results/SCHEMA.md).
   *
   * @param system the system's name
   * @param cell the value of each grid key in this cell; empty without a grid
   * @param kvMemoryBytes the cell's KV memory (with a grid), else null
   * @param parts what the system is built from, as written
   * @param counts the counts
   * @param rates the rates
   * @param latencies per {@link #LATENCIES} name, its statistics
   * @param kvBreakdown the KV breakdown over the whole run
   * @param kvBreakdownSteady the KV breakdown over the steady window; null in folders written
   *     before it was reported
   * @param optional the fields only some systems have ({@code kv_manager}, {@code
   *     prefix_cache_hit_rate}, {@code sequence_groups}, ...), as plain values in file order
   */
  public record Entry(
      String system, Map<String, String> cell, Long kvMemoryBytes, Map<String, Object> parts, Counts counts, Rates rates,
      Map<String, Latency> latencies, Breakdown kvBreakdown, Breakdown kvBreakdownSteady, Map<String, Object> optional) {
    private static final java.util.Set<String> FIXED = java.util.Set.of("system", "cell", "kv_memory_bytes", "parts", "requests_arrived",
        "requests_finished", "requests_rejected", "requests_truncated", "iterations", "preemptions", "scheduled_tokens", "output_tokens",
        "span_seconds", "throughput_tokens_per_second", "throughput_requests_per_second", "batch_size_mean", "batch_size_max", "ttft_seconds",
        "tpot_seconds", "e2e_seconds", "normalized_latency_seconds_per_token", "kv_breakdown", "kv_breakdown_steady");

    /** Makes an entry of the plain object of {@code summary.json}; a problem is {@code error(field, problem)}. */
    @SuppressWarnings("unchecked")
    public static Entry of(Map<String, Object> m, java.util.function.BiFunction<String, String, RuntimeException> error) {
      if (!(m.get("system") instanceof String system) || system.isEmpty()) {
        throw error.apply("system", "expected a non-empty string, found " + shown(m.get("system")));
      }
      Map<String, String> cell = new LinkedHashMap<>();
      if (m.containsKey("cell")) {
        if (!(m.get("cell") instanceof Map<?, ?> c)) {
          throw error.apply("cell", "expected an object");
        }
        ((Map<String, Object>) c).forEach((k, v) -> cell.put(k, String.valueOf(v)));
      }
      Long kvMemoryBytes = m.containsKey("kv_memory_bytes") ? whole(m, "kv_memory_bytes", error) : null;
      if (!(m.get("parts") instanceof Map<?, ?> parts)) {
        throw error.apply("parts", m.containsKey("parts") ? "expected an object" : "missing");
      }
      Counts counts = new Counts(whole(m, "requests_arrived", error), whole(m, "requests_finished", error), whole(m, "requests_rejected", error),
          whole(m, "requests_truncated", error), whole(m, "iterations", error), whole(m, "preemptions", error), whole(m, "scheduled_tokens", error),
          whole(m, "output_tokens", error), whole(m, "batch_size_max", error));
      Double span = numberOrNull(m, "span_seconds", error);
      if (span == null) {
        throw error.apply("span_seconds", "expected a number, found null");
      }
      Rates rates = new Rates(span, numberOrNull(m, "throughput_tokens_per_second", error), numberOrNull(m, "throughput_requests_per_second", error),
          numberOrNull(m, "batch_size_mean", error));
      Map<String, Latency> latencies = new LinkedHashMap<>();
      for (String name : LATENCIES) {
        Map<String, Object> l = object(m, name, error);
        latencies.put(name, new Latency(numberOrNull(l, "mean", inside(name, error)), numberOrNull(l, "p50", inside(name, error)),
            numberOrNull(l, "p90", inside(name, error)), numberOrNull(l, "p99", inside(name, error))));
      }
      Breakdown breakdown = breakdown(m, "kv_breakdown", error);
      Breakdown steady = m.containsKey("kv_breakdown_steady") ? breakdown(m, "kv_breakdown_steady", error) : null;
      if (m.containsKey("slo")) {
        Slo.of(m.get("slo"), error);
      }
      IntervalMarks.read(m.get("intervals"), error);
      Map<String, Object> optional = new LinkedHashMap<>();
      m.forEach((k, v) -> {
        if (!FIXED.contains(k)) {
          optional.put(k, v);
        }
      });
      return new Entry(system, java.util.Collections.unmodifiableMap(cell), kvMemoryBytes, (Map<String, Object>) parts, counts, rates,
          java.util.Collections.unmodifiableMap(latencies), breakdown, steady, java.util.Collections.unmodifiableMap(optional));
    }

    /**
     * Returns the entry's intervals over seeds per metric path ({@code kv_breakdown.idle.mean}), as
     * {@code summary.json}'s {@code intervals} holds them (checked by {@link #of}); empty for one run.
     */
    public Map<String, kvsim.metrics.Interval> intervals() {
      Map<String, kvsim.metrics.Interval> in = IntervalMarks.read(optional.get("intervals"), (f, p) -> new IllegalStateException(f + ": " + p));
      return in == null ? Map.of() : in;
    }

    /** Reads the breakdown object {@code field} of an entry: its window, categories and {@code used_memory}. */
    private static Breakdown breakdown(Map<String, Object> m, String field, java.util.function.BiFunction<String, String, RuntimeException> error) {
      Map<String, Object> b = object(m, field, error);
      var at = inside(field, error);
      Window window = null;
      Map<String, Share> shares = new LinkedHashMap<>();
      Map<String, Double> used = new LinkedHashMap<>();
      for (String key : b.keySet()) {
        Map<String, Object> c = object(b, key, at);
        var in = inside(field + "." + key, error);
        switch (key) {
          case "window" -> {
            if (!(c.get("kind") instanceof String kind)) {
              throw in.apply("kind", c.containsKey("kind") ? "expected a string, found " + shown(c.get("kind")) : "missing");
            }
            window = new Window(kind, numberOrNull(c, "from_s", in), numberOrNull(c, "to_s", in));
          }
          case "used_memory" -> {
            for (String category : c.keySet()) {
              used.put(category, numberOrNull(c, category, in));
            }
          }
          default -> shares.put(key, new Share(numberOrNull(c, "mean", in), numberOrNull(c, "peak", in)));
        }
      }
      return new Breakdown(window, java.util.Collections.unmodifiableMap(shares), java.util.Collections.unmodifiableMap(used));
    }

    static java.util.function.BiFunction<String, String, RuntimeException> inside(
        String prefix, java.util.function.BiFunction<String, String, RuntimeException> error) {
      return (field, problem) -> error.apply(prefix + "." + field, problem);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Map<String, Object> m, String field, java.util.function.BiFunction<String, String, RuntimeException> error) {
      if (!(m.get(field) instanceof Map<?, ?> o)) {
        throw error.apply(field, m.containsKey(field) ? "expected an object, found " + shown(m.get(field)) : "missing");
      }
      return (Map<String, Object>) o;
    }

    static long whole(Map<String, Object> m, String field, java.util.function.BiFunction<String, String, RuntimeException> error) {
      Object v = m.get(field);
      if (v instanceof Integer || v instanceof Long) {
        long n = ((Number) v).longValue();
        if (n >= 0) {
          return n;
        }
      }
      throw error.apply(field, m.containsKey(field) ? "expected a non-negative integer, found " + shown(v) : "missing");
    }

    static Double numberOrNull(Map<String, Object> m, String field, java.util.function.BiFunction<String, String, RuntimeException> error) {
      if (!m.containsKey(field)) {
        throw error.apply(field, "missing");
      }
      Object v = m.get(field);
      if (v == null) {
        return null;
      }
      if (!(v instanceof Number n) || !Double.isFinite(n.doubleValue())) {
        throw error.apply(field, "expected a number or null, found " + shown(v));
      }
      return n.doubleValue();
    }

    /** Returns a value as JSON shows it: a string in quotes. */
    static String shown(Object v) {
      return v instanceof String t ? "\"" + t + "\"" : String.valueOf(v);
    }

    /** Returns the entry as the object of {@code summary.json}, its fields in the order written. */
    public Map<String, Object> toMap() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("system", system);
      if (!cell.isEmpty()) {
        m.put("cell", new LinkedHashMap<>(cell));
      }
      if (kvMemoryBytes != null) {
        m.put("kv_memory_bytes", kvMemoryBytes);
      }
      m.put("parts", parts);
      m.put("requests_arrived", counts.requestsArrived());
      m.put("requests_finished", counts.requestsFinished());
      m.put("requests_rejected", counts.requestsRejected());
      m.put("requests_truncated", counts.requestsTruncated());
      m.put("iterations", counts.iterations());
      m.put("preemptions", counts.preemptions());
      m.put("scheduled_tokens", counts.scheduledTokens());
      m.put("output_tokens", counts.outputTokens());
      m.put("span_seconds", rates.spanSeconds());
      m.put("throughput_tokens_per_second", rates.throughputTokensPerSecond());
      m.put("throughput_requests_per_second", rates.throughputRequestsPerSecond());
      m.put("batch_size_mean", rates.batchSizeMean());
      m.put("batch_size_max", counts.batchSizeMax());
      latencies.forEach((name, l) -> {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("mean", l.mean());
        o.put("p50", l.p50());
        o.put("p90", l.p90());
        o.put("p99", l.p99());
        m.put(name, o);
      });
      m.put("kv_breakdown", kvBreakdown.toMap());
      if (kvBreakdownSteady != null) {
        m.put("kv_breakdown_steady", kvBreakdownSteady.toMap());
      }
      m.putAll(optional);
      return m;
    }

    /** Returns the entry's {@code slo} object (a run with {@code --slo}), or null where it has none. */
    public Slo slo() {
      return optional.containsKey("slo") ? Slo.of(optional.get("slo"), (field, problem) -> new IllegalStateException(field + ": " + problem)) : null;
    }

    /** Returns the whole entry as written, as plain values ({@link #toMap}). */
    public Map<String, Object> summary() {
      return toMap();
    }

    /** Returns the entry's name in the folder's CSV files, tables and charts ({@link ServingResults#label}). */
    public String label() {
      return ServingResults.label(toMap());
    }

    /** Returns an integer field of the entry ({@code requests_finished}, {@code preemptions}), or throws naming it where absent. */
    public long count(String field) {
      if (toMap().get(field) instanceof Number n) {
        return n.longValue();
      }
      throw new IllegalStateException("no integer " + field + " in the entry of " + label());
    }

    /** Returns a numeric field of the entry ({@code throughput_tokens_per_second}), null where undefined or absent. */
    public Double number(String field) {
      return toMap().get(field) instanceof Number n ? n.doubleValue() : null;
    }

    /**
     * Returns one statistic of a latency, in seconds ({@code latency("ttft_seconds", "p50")}),
     * null where undefined (no request defined it).
     */
    public Double latency(String metric, String statistic) {
      Latency l = latencies.get(metric);
      return l == null ? null : l.get(statistic);
    }

    /**
     * Returns the whole run's time-weighted mean share of the KV region in {@code category} ({@code
     * token_states}), null where undefined or absent ({@link Breakdown#mean}).
     */
    public Double kvMeanShare(String category) {
      return kvBreakdown.mean(category);
    }

    /** Returns the steady window's time-weighted mean share in {@code category}, null where undefined or absent. */
    public Double kvSteadyMeanShare(String category) {
      return kvBreakdownSteady == null ? null : kvBreakdownSteady.mean(category);
    }

    /**
     * Returns the whole run's (or, with {@code steady}, the steady window's) share of the memory in
     * use in {@code category} (idle excluded; the breakdown to compare with the vLLM paper's Fig.
     * 2), null where undefined or absent.
     */
    public Double kvUsedShare(String category, boolean steady) {
      Breakdown b = steady ? kvBreakdownSteady : kvBreakdown;
      return b == null ? null : b.usedMemory().get(category);
    }
  }

  /**
   * One entry's wall-clock figures, the entry of {@code timing.json} (not deterministic, so kept
   * out of {@code summary.json}).
   *
   * @param system the entry's label ({@link #label})
   * @param iterations the iterations run
   * @param wallNanos the wall time of the run
   */
  public record Timing(String system, long iterations, long wallNanos) {
    /** Returns the entry of {@code timing.json}: {@code system}, {@code iterations}, {@code wall_seconds}, {@code iterations_per_second}. */
    public Map<String, Object> toMap() {
      Map<String, Object> m = new java.util.LinkedHashMap<>();
      m.put("system", system);
      m.put("iterations", iterations);
      m.put("wall_seconds", wallNanos / 1e9);
      m.put("iterations_per_second", wallNanos > 0 ? Math.round(iterations * 1e9 / wallNanos) : 0);
      return m;
    }
  }

  /**
   * Returns the name of an entry in the folder's CSV files and in charts: its system, followed by
   * {@code KEY=VALUE} of each grid setting of its cell ({@code vllm block-size=32}).
   */
  @SuppressWarnings("unchecked")
  public static String label(Map<String, Object> entry) {
    StringBuilder sb = new StringBuilder((String) entry.get("system"));
    if (entry.get("cell") instanceof Map<?, ?> cell) {
      ((Map<String, Object>) cell).forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
    }
    return sb.toString();
  }

  /** Returns the index of a latency quantile column, or throws naming the file. */
  int quantileColumn(String name) {
    int i = quantileColumns.indexOf(name);
    if (i < 0) {
      throw new kvsim.core.InputException(ResultsReader.QUANTILES_FILE + ": header: no column " + name);
    }
    return i;
  }
}

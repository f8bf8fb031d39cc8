package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.metrics.Gauge;
import kvsim.metrics.SampledSeries;
import kvsim.metrics.Samples;

/**
 * The serving metrics of one run, under the names {@code results/SCHEMA.md} gives them ("A serving
 * run's folder").
 *
 * <ul>
 *   <li>Per finished request: {@code ttft} (first token − arrival), {@code tpot} ((finish − first
 *       token) / (output tokens − 1), for requests of at least two output tokens), {@code e2e}
 *       (finish − arrival) and {@code normalized_latency} (e2e / output tokens, the vLLM paper's
 *       measure); each as mean, p50, p90, p99, in seconds.
 *   <li>Throughput over the run's span (first arrival to last finish): output tokens/s and
 *       requests/s.
 *   <li>Batch size (sequences scheduled per iteration): mean and max over iterations.
 *   <li>The KV breakdown ({@link KvManager#breakdown}) as time-weighted fractions of the KV region,
 *       recorded after every iteration's scheduling: {@code token_states}, {@code reserved_future},
 *       {@code internal_waste}, {@code external_waste}; they sum to 1.
 *   <li>Counters: requests arrived, finished, rejected (a prompt of {@code max_model_len} tokens or
 *       more, or one that vLLM v0's watermark says can never be admitted) and truncated (output cut
 *       at {@code max_model_len}), iterations, preemptions, tokens scheduled (prefill and decode,
 *       recomputation included) and output tokens; the prefix cache's hit rate in tokens where the KV
 *       manager has one ({@code prefix_cache_hit_rate}: hits over queries of vLLM's {@code
 *       PrefixCacheStats}, lookups of preempted requests left out, as vLLM reports it; null before
 *       any lookup).
 *   <li>{@code kv_manager}: the KV manager's own counters ({@link KvManager#counters}), when it
 *       has any.
 *   <li>Under the naive plan only: {@code activation_oom_count} (iterations whose activations the
 *       allocator refused) and {@code requests_aborted} (requests of those batches, never finished).
 *   <li>{@code sequence_groups}, only in runs with requests of {@code n} &gt; 1 or a beam width:
 *       see {@link #groupsMap}. Latencies are then per request (group): first token of any of its
 *       sequences, finish of the last; output tokens count every sequence's tokens.
 * </ul>
 */
public final class ServingMetrics {
  final Samples ttft = new Samples();
  final Samples tpot = new Samples();
  final Samples e2e = new Samples();
  final Samples normalized = new Samples();
  final Gauge tokenStates = new Gauge("token_states");
  final Gauge reservedFuture = new Gauge("reserved_future");
  final Gauge internalWaste = new Gauge("internal_waste");
  final Gauge externalWaste = new Gauge("external_waste");
  long arrived;
  long finished;
  long rejected;
  long truncated;
  long iterations;
  long preemptions;
  long scheduledTokens;
  long outputTokens;
  long batchSum;
  int batchMax;
  long multiSequenceRequests;
  long sequences;
  long beamReplacements;
  long swapPreemptions;
  boolean naivePlan;
  long activationOoms;
  long aborted;
  long firstArrivalNanos = -1;
  long lastFinishNanos;
  private final long[] slots = new long[4];
  private final SampledSeries series = new SampledSeries(SERIES_COLUMNS.size(), 0);

  /**
   * Columns of the time series, one row per sampled iteration (after its scheduling): the
   * iteration, its start time, the sequences running and waiting, the batch, the tokens scheduled,
   * preemptions and finished requests so far, and the KV breakdown.
   */
  public static final List<String> SERIES_COLUMNS = List.of(
      "iteration", "t_ns", "running", "waiting", "batch_size", "scheduled_tokens", "preemptions", "finished",
      "token_states", "reserved_future", "internal_waste", "external_waste");
  /** The KV manager's own counters at the end of the run ({@link KvManager#counters}). */
  Map<String, Long> kvCounters = Map.of();
  /** The KV manager's group counters at the end of the run ({@link KvManager.GroupCounting#groupCounters}). */
  Map<String, Long> groupCounters = Map.of();

  void recordFinish(SequenceGroup g) {
    double arrival = g.request.arrivalNanos();
    int outputs = g.lead().outputTokens();
    ttft.add((g.firstTokenNanos - arrival) / 1e9);
    e2e.add((g.finishNanos - arrival) / 1e9);
    normalized.add((g.finishNanos - arrival) / 1e9 / outputs);
    if (outputs > 1) {
      tpot.add((g.finishNanos - g.firstTokenNanos) / 1e9 / (outputs - 1));
    }
    finished++;
    lastFinishNanos = Math.max(lastFinishNanos, g.finishNanos);
  }

  void recordIteration(long timeNanos, StepPlan plan, KvManager kv, int running, int waiting) {
    iterations++;
    batchSum += plan.size();
    batchMax = Math.max(batchMax, plan.size());
    preemptions += plan.preempted();
    for (int i = 0; i < plan.preempted(); i++) {
      if (plan.preemptedSequence(i).status() == Sequence.Status.SWAPPED) {
        swapPreemptions++;
      }
    }
    scheduledTokens += plan.totalTokens();
    kv.breakdown(slots);
    double total = slots[0] + slots[1] + slots[2] + slots[3];
    tokenStates.record(timeNanos, slots[0] / total);
    reservedFuture.record(timeNanos, slots[1] / total);
    internalWaste.record(timeNanos, slots[2] / total);
    externalWaste.record(timeNanos, slots[3] / total);
    double[] row = series.next();
    row[1] = timeNanos;
    row[2] = running;
    row[3] = waiting;
    row[4] = plan.size();
    row[5] = plan.totalTokens();
    row[6] = preemptions;
    row[7] = finished;
    row[8] = slots[0] / total;
    row[9] = slots[1] / total;
    row[10] = slots[2] / total;
    row[11] = slots[3] / total;
    series.commit();
  }

  /** The columns of {@link #latencyQuantiles}'s rows. */
  public static final List<String> QUANTILE_COLUMNS = List.of(
      "quantile", "ttft_seconds", "tpot_seconds", "e2e_seconds", "normalized_latency_seconds_per_token");

  /**
   * Returns the latency distributions of the finished requests as 101 rows, the quantiles 0, 0.01,
   * ..., 1 of {@link #QUANTILE_COLUMNS} (NaN where no request defines the latency): the CDFs of a
   * serving report, bounded whatever the number of requests.
   */
  public List<double[]> latencyQuantiles() {
    double[] ps = new double[101];
    for (int i = 0; i <= 100; i++) {
      ps[i] = i / 100.0;
    }
    double[][] cols = {ps, ttft.quantiles(ps), tpot.quantiles(ps), e2e.quantiles(ps), normalized.quantiles(ps)};
    List<double[]> rows = new java.util.ArrayList<>();
    for (int i = 0; i < ps.length; i++) {
      double[] row = new double[cols.length];
      for (int c = 0; c < cols.length; c++) {
        row[c] = cols[c][i];
      }
      rows.add(row);
    }
    return rows;
  }

  /** Returns the sampled time series: rows of {@link #SERIES_COLUMNS}, at most about 2,048 of them. */
  public List<double[]> series() {
    return series.rows();
  }

  /** Returns the metrics as a result-file object: latencies in seconds, fractions of the KV region. */
  public Map<String, Object> toMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("requests_arrived", arrived);
    m.put("requests_finished", finished);
    m.put("requests_rejected", rejected);
    m.put("requests_truncated", truncated);
    m.put("iterations", iterations);
    m.put("preemptions", preemptions);
    m.put("scheduled_tokens", scheduledTokens);
    m.put("output_tokens", outputTokens);
    double spanSeconds = firstArrivalNanos < 0 ? 0 : (lastFinishNanos - firstArrivalNanos) / 1e9;
    m.put("span_seconds", spanSeconds);
    m.put("throughput_tokens_per_second", spanSeconds > 0 ? outputTokens / spanSeconds : null);
    m.put("throughput_requests_per_second", spanSeconds > 0 ? finished / spanSeconds : null);
    m.put("batch_size_mean", iterations > 0 ? (double) batchSum / iterations : null);
    m.put("batch_size_max", batchMax);
    m.put("ttft_seconds", latency(ttft));
    m.put("tpot_seconds", latency(tpot));
    m.put("e2e_seconds", latency(e2e));
    m.put("normalized_latency_seconds_per_token", latency(normalized));
    Map<String, Object> kv = new LinkedHashMap<>();
    for (Gauge g : new Gauge[] {tokenStates, reservedFuture, internalWaste, externalWaste}) {
      Gauge.Summary s = g.summary();
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("mean", s.mean());
      one.put("peak", s.peak());
      kv.put(g.name(), one);
    }
    m.put("kv_breakdown", kv);
    if (!kvCounters.isEmpty()) {
      m.put("kv_manager", new LinkedHashMap<>(kvCounters));
    }
    Long queries = kvCounters.get("prefix_cache_queries");
    if (queries != null) {
      m.put("prefix_cache_hit_rate", queries > 0 ? (double) kvCounters.get("prefix_cache_hits") / queries : null);
    }
    if (multiSequenceRequests > 0) {
      m.put("sequence_groups", groupsMap());
    }
    if (naivePlan) {
      m.put("activation_oom_count", activationOoms);
      m.put("requests_aborted", aborted);
    }
    return m;
  }

  /**
   * The {@code sequence_groups} object of a run with multi-sequence requests: requests with more
   * than one sequence, sequences in all, beam replacements, preemptions by mode (a swapped group
   * counts once), the KV manager's group counters and, where it measures sharing, {@code
   * sharing_saving}: 1 − blocks held / blocks the sequences' tables list, summed over iterations
   * (the vLLM paper's memory saving from sharing, Fig. 14 and 15).
   */
  private Map<String, Object> groupsMap() {
    Map<String, Object> g = new LinkedHashMap<>();
    g.put("requests_multi_sequence", multiSequenceRequests);
    g.put("sequences", sequences);
    g.put("beam_replacements", beamReplacements);
    g.put("preemptions_recompute", preemptions - swapPreemptions);
    g.put("preemptions_swap", swapPreemptions);
    g.putAll(groupCounters);
    Long unshared = groupCounters.get("unshared_block_iterations");
    if (unshared != null) {
      g.put("sharing_saving", unshared > 0 ? 1 - (double) groupCounters.get("held_block_iterations") / unshared : null);
    }
    return g;
  }

  /** Returns the memory saving from sharing (see {@code sequence_groups}), or NaN where not measured. */
  public double sharingSaving() {
    Long unshared = groupCounters.get("unshared_block_iterations");
    return unshared == null || unshared == 0 ? Double.NaN : 1 - (double) groupCounters.get("held_block_iterations") / unshared;
  }

  /** Returns the KV manager's group counters at the end of the run (empty for a manager without any). */
  public Map<String, Long> groupCounters() {
    return groupCounters;
  }

  /** Returns the requests aborted by activation out-of-memory (naive plan). */
  public long aborted() {
    return aborted;
  }

  /** Returns the iterations whose activations the allocator refused (naive plan). */
  public long activationOoms() {
    return activationOoms;
  }

  /** Returns the preemptions that swapped a group out. */
  public long swapPreemptions() {
    return swapPreemptions;
  }

  private static Map<String, Object> latency(Samples s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("mean", orNull(s.mean()));
    m.put("p50", orNull(s.quantile(0.5)));
    m.put("p90", orNull(s.quantile(0.9)));
    m.put("p99", orNull(s.quantile(0.99)));
    return m;
  }

  private static Double orNull(double v) {
    return Double.isNaN(v) ? null : v;
  }

  /** Returns the time-weighted mean of a breakdown category (token_states, …), or NaN. */
  public double meanFraction(String category) {
    for (Gauge g : new Gauge[] {tokenStates, reservedFuture, internalWaste, externalWaste}) {
      if (g.name().equals(category)) {
        Double mean = g.summary().mean();
        return mean == null ? Double.NaN : mean;
      }
    }
    throw new IllegalArgumentException(category);
  }

  /** Returns the mean batch size, or NaN before any iteration. */
  public double meanBatchSize() {
    return iterations == 0 ? Double.NaN : (double) batchSum / iterations;
  }

  /** Returns the KV manager's counters at the end of the run (empty for a manager without any). */
  public Map<String, Long> kvCounters() {
    return kvCounters;
  }

  /** Returns the finished requests. */
  public long finished() {
    return finished;
  }

  /** Returns the preemptions. */
  public long preemptions() {
    return preemptions;
  }

  /** Returns the output tokens produced. */
  public long outputTokens() {
    return outputTokens;
  }

  /** Returns the iterations run. */
  public long iterations() {
    return iterations;
  }

  /** Returns the requests that arrived. */
  public long arrived() {
    return arrived;
  }

  /** Returns the requests rejected. */
  public long rejected() {
    return rejected;
  }
}

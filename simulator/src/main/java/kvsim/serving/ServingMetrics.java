package kvsim.serving;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 *   <li>The KV breakdown ({@link KvManager#breakdown}) as time-weighted shares of the KV region,
 *       sampled after every iteration's scheduling and whenever the engine idles: {@code
 *       token_states}, {@code reserved_future}, {@code internal_fragmentation}, {@code
 *       external_fragmentation} (the vLLM paper's four uses of Fig. 2) and {@code idle}; they sum to
 *       1 (Note [Idle or fragmented]). Also the shares of the memory in use ({@code used_memory},
 *       idle excluded), which is what the paper's bars compare with. Over two windows, each stated
 *       with its bounds: the whole run ({@code kv_breakdown}) and the steady state ({@code
 *       kv_breakdown_steady}): Note [Breakdown windows].
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
 *   <li>Per-request targets ({@link #attainment}), given before the run ({@link #countTargets}):
 *       each finished request is checked against them as it finishes, and the requests meeting
 *       each and all of them are counted, so that the share of requests meeting every target (SLO
 *       attainment) and the goodput need no per-request memory (Note [Per-request targets]).
 *   <li>{@code sequence_groups}, only in runs with requests of {@code n} &gt; 1 or a beam width:
 *       see {@link #groupsMap}. Latencies are then per request (group): first token of any of its
 *       sequences, finish of the last; output tokens count every sequence's tokens.
 * </ul>
 */
public final class ServingMetrics {
  // Note [Idle or fragmented]: a KV manager's breakdown gives the free slots (what its allocator
  // could still hand out) apart from the rest it holds (allocator rounding and metadata, a null
  // block, the naive plan's activations); KvManager#breakdown. Free memory is not waste in itself:
  // at a low load vLLM runs a small batch with half its KV memory free because no request needs it.
  // So each sample calls its free slots
  //   - external_fragmentation when a sequence waits because memory could not be given to it: the
  //     scheduler's admission stopped on a failed allocation, a memory gate or the watermark, or a
  //     running sequence stalled for memory (Scheduler#waitingForMemory), or the iteration preempted
  //     a sequence. Free memory that cannot serve the waiting request is what the allocator's layout
  //     (holes of a contiguous allocator) or its granularity leaves; the vLLM paper's "external
  //     fragmentation";
  //   - idle otherwise: nothing waits, or what waits waits for another reason (max_num_seqs, the
  //     token budget), or the engine idles.
  // The rest (not free, held by no sequence) is always external_fragmentation: the paper's "and
  // others". The five shares (token_states, reserved_future, internal_fragmentation,
  // external_fragmentation, idle) sum to 1 at every sample. The paper's Fig. 2 bars cannot count idle
  // memory (vLLM's bar is 96.3 % token states, reached at a load that leaves much of the memory
  // free), so used_memory gives the four uses as shares of the memory in use, idle excluded: each
  // category's time-weighted mean over the window divided by 1 − idle's (null when the memory was
  // never in use); that breakdown is the one to compare with the paper.
  //
  // Note [Breakdown windows]: a sample's shares hold from its time to the next sample's. The engine
  // samples after every iteration's scheduling and when it idles (then with every free slot idle),
  // so the breakdown is defined from the first arrival to the last finish. Two windows are reported,
  // each with its bounds (seconds of simulated time):
  //   - "whole run" (kv_breakdown): from the first sample to the last, that is from the first
  //     arrival to the last finish: ramp-up and drain included;
  //   - "steady state" (kv_breakdown_steady): of the run's N arrived requests (rejected ones
  //     included), from the arrival of the ⌈N/10⌉-th to the arrival of the last. The first tenth of
  //     the arrivals fills the batch (ramp-up); after the last arrival the load only falls (drain).
  //     The bounds depend on the arrivals alone, so a user can compute them from the workload, and
  //     they are the same for every system of a run. The window is empty (its shares null) with one
  //     request, or when all arrive at once. Past KvBreakdownWindows.KEPT_LIMIT arrivals it opens
  //     at the first arrival kept from the ⌈N/10⌉-th on (Note [Arrivals kept] there).
  // Means are time-weighted over the window; peaks are the largest share sampled in it (for the
  // steady window: sampled between its bounds, or holding at its start).
  final Samples ttft = new Samples();
  final Samples tpot = new Samples();
  final Samples e2e = new Samples();
  final Samples normalized = new Samples();
  private final KvBreakdownWindows breakdown = new KvBreakdownWindows();
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
  private final long[] slots = new long[5];
  private final double[] shares = new double[KvBreakdownWindows.CATEGORIES.size()];
  private final SampledSeries series = new SampledSeries(SERIES_COLUMNS.size(), 0);

  /**
   * Columns of the time series, one row per sampled iteration (after its scheduling): the
   * iteration, its start time, the sequences running and waiting, the batch, the tokens scheduled,
   * preemptions and finished requests so far, and the KV breakdown.
   */
  public static final List<String> SERIES_COLUMNS = List.of(
      "iteration", "t_ns", "running", "waiting", "batch_size", "scheduled_tokens", "preemptions", "finished",
      "token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle");
  /** The KV manager's own counters at the end of the run ({@link KvManager#counters}). */
  Map<String, Long> kvCounters = Map.of();
  /** The KV manager's group counters at the end of the run ({@link KvManager.GroupCounting#groupCounters}). */
  Map<String, Long> groupCounters = Map.of();
  /** The per-request targets each finished request is checked against ({@link #countTargets}); empty: none. */
  private List<RequestTarget> targets = List.of();
  /** Per target of {@link #targets}, the finished requests that met it. */
  private long[] metPerTarget = new long[0];
  /** Finished requests that met every target of {@link #targets}, and their output tokens (every sequence's). */
  private long metAll;
  private long metAllOutputTokens;
  /** Output tokens of every finished request (every sequence's): the goodput when no per-request target is given. */
  private long finishedOutputTokens;

  void recordFinish(SequenceGroup g) {
    int groupOutputs = 0;
    for (Sequence s : g.sequences) {
      groupOutputs += s.outputTokens();
    }
    recordFinish(g.request.arrivalNanos(), g.firstTokenNanos, g.finishNanos, g.lead().outputTokens(), groupOutputs);
  }

  /**
   * Records a finished request from its times: arrival, first token and finish; {@code outputs} are
   * the lead sequence's output tokens (the latencies' denominator), {@code groupOutputs} every
   * sequence's.
   */
  void recordFinish(long arrivalNanos, long firstTokenNanos, long finishNanos, int outputs, int groupOutputs) {
    double arrival = arrivalNanos;
    ttft.add((firstTokenNanos - arrival) / 1e9);
    e2e.add((finishNanos - arrival) / 1e9);
    normalized.add((finishNanos - arrival) / 1e9 / outputs);
    if (outputs > 1) {
      tpot.add((finishNanos - firstTokenNanos) / 1e9 / (outputs - 1));
    }
    finishedOutputTokens += groupOutputs;
    if (!targets.isEmpty()) {
      boolean all = true;
      for (int t = 0; t < targets.size(); t++) {
        RequestTarget target = targets.get(t);
        if (requestValue(target.metric(), firstTokenNanos - arrivalNanos, finishNanos - arrivalNanos, outputs) <= target.limitSeconds()) {
          metPerTarget[t]++;
        } else {
          all = false;
        }
      }
      if (all) {
        metAll++;
        metAllOutputTokens += groupOutputs;
      }
    }
    finished++;
    lastFinishNanos = Math.max(lastFinishNanos, finishNanos);
  }

  /** Counts a request's arrival at {@code timeNanos} (the steady window's bounds are arrivals: Note [Breakdown windows]). */
  void recordArrival(long timeNanos) {
    arrived++;
    breakdown.arrival(timeNanos);
  }

  /**
   * Records the KV breakdown at {@code timeNanos} when the engine idles (nothing running or
   * waiting): the state that holds until the next iteration, in which no memory is in use.
   */
  void recordIdle(long timeNanos, KvManager kv) {
    sampleBreakdown(timeNanos, kv, false);
  }

  /**
   * Records an iteration after its scheduling at {@code timeNanos}: {@code waitingForMemory} is the
   * scheduler's ({@link Scheduler#waitingForMemory}), for the KV breakdown's split of free memory.
   */
  void recordIteration(long timeNanos, StepPlan plan, KvManager kv, int running, int waiting, boolean waitingForMemory) {
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
    sampleBreakdown(timeNanos, kv, waitingForMemory || plan.preempted() > 0);
    double[] row = series.next();
    row[1] = timeNanos;
    row[2] = running;
    row[3] = waiting;
    row[4] = plan.size();
    row[5] = plan.totalTokens();
    row[6] = preemptions;
    row[7] = finished;
    System.arraycopy(shares, 0, row, 8, shares.length);
    series.commit();
  }

  /**
   * Takes the KV manager's breakdown and records it as shares of the KV region, its free slots
   * external fragmentation when {@code memoryRefused}, idle otherwise (Note [Idle or fragmented]).
   */
  private void sampleBreakdown(long timeNanos, KvManager kv, boolean memoryRefused) {
    java.util.Arrays.fill(slots, 0);
    kv.breakdown(slots);
    double total = 0;
    for (long v : slots) {
      if (v < 0) {
        throw new IllegalStateException(kv.getClass().getSimpleName() + " breakdown has a negative slot count: " + java.util.Arrays.toString(slots));
      }
      total += v;
    }
    shares[0] = slots[0] / total;
    shares[1] = slots[1] / total;
    shares[2] = slots[2] / total;
    shares[3] = ((memoryRefused ? slots[3] : 0) + slots[4]) / total;
    shares[KvBreakdownWindows.IDLE] = (memoryRefused ? 0 : slots[3]) / total;
    breakdown.record(timeNanos, shares);
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
    m.put("kv_breakdown", breakdown.whole().toMap());
    m.put("kv_breakdown_steady", breakdown.steady().toMap());
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

  /**
   * Returns the whole run's time-weighted mean share of the KV region in a breakdown category
   * ({@code token_states}, {@code reserved_future}, {@code internal_fragmentation}, {@code
   * external_fragmentation}, {@code idle}), or NaN before any sample; throws for another name.
   */
  public double meanFraction(String category) {
    return breakdown.whole().mean(category);
  }

  /** Returns the steady window's time-weighted mean share in a breakdown category (as {@link #meanFraction}), NaN where undefined. */
  public double steadyMeanFraction(String category) {
    return breakdown.steady().mean(category);
  }

  /** Returns the steady window's bounds in seconds, {@code [from, to]}, or null before any arrival (Note [Breakdown windows]). */
  public double[] steadyWindowSeconds() {
    KvBreakdownWindows.Window w = breakdown.steady();
    return w.fromSeconds() == null ? null : new double[] {w.fromSeconds(), w.toSeconds()};
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

  // Note [Per-request targets]: a per-request target (ttft<=1s) is met by a request when its own
  // value is within the limit; a request meets the SLO when it finished and meets every per-request
  // target. This is goodput as vLLM's benchmarks/benchmark_serving.py computes it (calculate_metrics
  // with --goodput: a request is "good" when each of its ttft, tpot and e2el is at most the limit,
  // request_goodput = good requests / benchmark duration) and SLO attainment as DistServe (Zhong et
  // al., OSDI 2024) defines it (the share of requests meeting their SLOs). The values are those of
  // the aggregates above, per request: ttft = first token − arrival, tpot = (finish − first token) /
  // (output tokens − 1), e2e = finish − arrival, normalized_latency = e2e / output tokens (the lead
  // sequence's tokens for a group, as the aggregates count them). Where kvsim differs from vLLM:
  //   - attainment is over every request that arrived: a request rejected on arrival (too long for
  //     max_model_len or the KV memory), aborted (an activation OOM of the naive plan) or not
  //     finished counts as missing the SLO. vLLM's failed requests are likewise never good, but its
  //     script reports no attainment;
  //   - a request of one output token has no TPOT; vLLM "regards tpot as 0 for goodput", so it meets
  //     any TPOT target, and so it does here (the aggregate tpot leaves it out, as vLLM's mean does);
  //   - normalized_latency (the vLLM paper's measure) is a per-request target vLLM's script lacks;
  //   - goodput is also given in output tokens/s (the met requests' output tokens, every sequence of
  //     a group), and its span is the run's (first arrival to last finish, span_seconds), where vLLM
  //     divides by the benchmark's wall duration.
  // The targets are given before the run (countTargets) and each request is checked as it finishes:
  // a run keeps counters, not the requests, so its memory stays flat however long the trace.

  /**
   * One per-request target: {@code metric} one of {@link #REQUEST_METRICS}, met by a request whose
   * own value is at most {@code limitSeconds} (Note [Per-request targets]).
   *
   * @param metric {@code ttft}, {@code tpot}, {@code e2e} or {@code normalized_latency}
   * @param limitSeconds the largest value that meets the target, in seconds (seconds per token for
   *     {@code normalized_latency})
   * @param text the target as written
   */
  public record RequestTarget(String metric, double limitSeconds, String text) {
    public RequestTarget {
      if (!REQUEST_METRICS.contains(metric)) {
        throw new IllegalArgumentException("no per-request metric " + metric + "; one of " + REQUEST_METRICS);
      }
    }
  }

  /** The metrics a per-request target can name. */
  public static final List<String> REQUEST_METRICS = List.of("ttft", "tpot", "e2e", "normalized_latency");

  /**
   * How the requests of a run fared against per-request targets.
   *
   * @param arrived requests that arrived (rejected and aborted ones included)
   * @param met requests that finished and met every target
   * @param metOutputTokens the output tokens of the requests in {@code met}
   * @param metPerTarget per target, in the order given, the requests that finished and met it
   */
  public record Attainment(long arrived, long met, long metOutputTokens, List<Long> metPerTarget) {
    public Attainment {
      metPerTarget = List.copyOf(metPerTarget);
    }

    /** Returns the share of the arrived requests that met every target (NaN with none arrived). */
    public double attainment() {
      return arrived == 0 ? Double.NaN : (double) met / arrived;
    }

    /** Returns the share of the arrived requests that finished and met target {@code i}. */
    public double shareMeeting(int i) {
      return arrived == 0 ? Double.NaN : (double) metPerTarget.get(i) / arrived;
    }
  }

  /**
   * Checks each request against {@code targets} as it finishes from now on: call before the run
   * (Note [Per-request targets]); {@link #attainment} then answers for these targets.
   *
   * @throws IllegalStateException when a request has finished already
   */
  public void countTargets(List<RequestTarget> targets) {
    if (finished > 0) {
      throw new IllegalStateException("per-request targets are counted from the run's start; " + finished + " requests finished already");
    }
    this.targets = List.copyOf(targets);
    this.metPerTarget = new long[targets.size()];
  }

  /**
   * Returns how the requests fared against {@code targets}, the targets given to {@link
   * #countTargets} before the run: a request meets the SLO when it finished and met every target
   * (with none, every finished request meets it); requests that did not finish miss it (Note
   * [Per-request targets]).
   *
   * @throws IllegalStateException when {@code targets} are not those counted
   */
  public Attainment attainment(List<RequestTarget> targets) {
    if (targets.isEmpty()) {
      return new Attainment(arrived, finished, finishedOutputTokens, List.of());
    }
    if (!targets.equals(this.targets)) {
      throw new IllegalStateException("per-request targets " + targets + " were not counted in this run (counted: " + this.targets + ")");
    }
    List<Long> counts = new java.util.ArrayList<>();
    for (long c : metPerTarget) {
      counts.add(c);
    }
    return new Attainment(arrived, metAll, metAllOutputTokens, counts);
  }

  /** Returns the run's span in seconds: first arrival to last finish (0 before any arrival), as {@code span_seconds}. */
  public double spanSeconds() {
    return firstArrivalNanos < 0 ? 0 : (lastFinishNanos - firstArrivalNanos) / 1e9;
  }

  /**
   * Returns a finished request's value of a per-request metric in seconds, computed as {@link
   * #recordFinish} computes the aggregates' ({@code outputs}: the lead sequence's output tokens).
   */
  static double requestValue(String metric, long ttftNanos, long e2eNanos, int outputs) {
    return switch (metric) {
      case "ttft" -> ttftNanos / 1e9;
      case "e2e" -> e2eNanos / 1e9;
      case "normalized_latency" -> e2eNanos / 1e9 / outputs;
      // One output token: no TPOT; vLLM regards it as 0 for goodput (Note [Per-request targets]).
      case "tpot" -> outputs > 1 ? (e2eNanos - ttftNanos) / 1e9 / (outputs - 1) : 0;
      default -> throw new IllegalArgumentException(metric);
    };
  }
}

package kvsim.run;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kvsim.core.InputException;
import kvsim.report.CapacityResults;

/**
 * The capacity question: at what request rate does each serving system stop meeting its latency
 * targets? For each system, a bisection over the workload's arrival rate between a low and a high
 * bound: every probe is a full serving run of the same requests' lengths and seed at that rate (a
 * recorded trace's times scaled to it: {@link ServingSpec#withRate});
 * the answer is the highest rate probed that meets every target. Systems are searched in parallel
 * on all cores, each probe's runs in order, so results never depend on the number of threads.
 *
 * <p>Note [Rejections fail the target]: the latency statistics are over the requests that finished
 * only, so a system that rejects requests (a prompt of {@code max_model_len} tokens or more, a
 * group the KV memory can never hold, a batch aborted by an activation OOM) looks as fast as the
 * requests it kept, and a capacity printed for it overstates what it serves: the vLLM paper's
 * setup with the ShareGPT preset rejects 416 of 1,000 requests at every rate, which the latency
 * targets never see. A capacity planner asks at what rate the deployment serves the traffic it is
 * sent; a request it does not finish is not served, whatever the latency of the others. So every
 * probe also has the rejection target {@code rejected.fraction<=F}: the requests that did not
 * finish (rejected on arrival, or aborted) over the requests that arrived must be at most F, 0
 * unless the user gives the target among the {@code --slo}s, so any unfinished request fails the
 * probe by default and allowing some is a choice written on the command line and echoed in the
 * results. Beside each rate the results give its goodput (the rate times the share finished) and
 * the share rejected; a system that misses the rejection target at the lowest rate (rejections
 * that do not depend on the load, as over-long prompts) has no capacity to print, and is said so.
 *
 * <p>Per-request targets ({@code ttft<=1s}) are searched on their attainment: a rate meets them when
 * at least the share {@code attainment>=A} (default 1) of the arrived requests finished and met
 * every one of them, so rejected and aborted requests count against it and no rejection target is
 * added by default ({@link SloTargets}, Note [Target combinations]); each probe then carries its
 * attainment, and its goodput is the rate times the attainment.
 *
 * <p>Note [Monotone in rate]: bisection assumes a system that meets its targets at a rate meets
 * them at every lower rate. For queueing systems that holds on average; a single seed can break it
 * near the boundary, so every probe is returned and written out, and the answer is always a rate
 * that was probed and met.
 */
public final class CapacitySearch {
  /**
   * One latency target, e.g. {@code normalized_latency.mean<=0.2s}.
   *
   * @param metric the serving metric: {@code ttft}, {@code tpot}, {@code e2e} or {@code
   *     normalized_latency}
   * @param statistic {@code mean}, {@code p50}, {@code p90} or {@code p99}
   * @param limitSeconds the largest value that meets the target, in seconds
   * @param text the target as written
   */
  public record Slo(String metric, String statistic, double limitSeconds, String text) {
    private static final Pattern FORM = Pattern.compile("\\s*([a-z0-9_]+)\\.(mean|p50|p90|p99)\\s*<=\\s*([0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\\s*(s|ms)\\s*");
    private static final Map<String, String> SUMMARY_KEYS = Map.of(
        "ttft", "ttft_seconds",
        "tpot", "tpot_seconds",
        "e2e", "e2e_seconds",
        "normalized_latency", "normalized_latency_seconds_per_token");

    /** Parses {@code METRIC.STAT<=VALUE(s|ms)}; throws InputException saying what is expected. */
    public static Slo parse(String text) {
      Matcher m = FORM.matcher(text);
      if (!m.matches() || !SUMMARY_KEYS.containsKey(m.group(1))) {
        throw new InputException("--slo: '" + text + "' is not METRIC.STAT<=VALUE with METRIC one of ttft, tpot, e2e, normalized_latency, "
            + "STAT one of mean, p50, p90, p99, and VALUE in s or ms (e.g. normalized_latency.mean<=0.2s), nor rejected.fraction<=F with F in [0, 1]");
      }
      double v = Double.parseDouble(m.group(3)) * (m.group(4).equals("ms") ? 1e-3 : 1.0);
      return new Slo(m.group(1), m.group(2), v, text.strip());
    }

    /** Returns the measured value in seconds from a system's summary, or NaN where undefined. */
    @SuppressWarnings("unchecked")
    public double valueIn(Map<String, Object> summary) {
      Object stats = summary.get(SUMMARY_KEYS.get(metric));
      Object v = stats instanceof Map<?, ?> m ? ((Map<String, Object>) m).get(statistic) : null;
      return v instanceof Number n ? n.doubleValue() : Double.NaN;
    }
  }

  /**
   * Every target of a search: the aggregate latency targets, the rejection target (Note [Rejections
   * fail the target]) and the per-request targets with their attainment target (Note [Target
   * combinations] in {@link SloTargets}).
   *
   * @param latency the aggregate latency targets, in the order given
   * @param rejectedFractionAllowed the largest share of requests that may fail to finish, in [0, 1]
   * @param rejectedText the rejection target as written, or {@link #NO_REJECTIONS} when none was
   *     given, or {@link #ATTAINMENT_COUNTS_THEM} when none was given beside per-request targets
   * @param perRequest the per-request targets, in the order given (may be empty)
   * @param attainmentAtLeast the share of requests that must meet every per-request target; 0
   *     without per-request targets
   * @param attainmentText the attainment target as written, {@link #ALL_REQUESTS} when per-request
   *     targets came without one, null without per-request targets
   */
  public record Targets(List<Slo> latency, double rejectedFractionAllowed, String rejectedText, List<kvsim.serving.ServingMetrics.RequestTarget> perRequest,
      double attainmentAtLeast, String attainmentText) {
    /** The rejection target that holds unless another is given: every request must finish. */
    public static final String NO_REJECTIONS = "rejected.fraction<=0";
    /**
     * The rejection target that holds beside per-request targets unless another is given: none of
     * its own, since the attainment counts a request not finished as missing the targets.
     */
    public static final String ATTAINMENT_COUNTS_THEM = "rejected.fraction<=1";
    /** The attainment target that holds beside per-request targets unless another is given: every request meets them. */
    public static final String ALL_REQUESTS = "attainment>=1";

    public Targets {
      latency = List.copyOf(latency);
      perRequest = List.copyOf(perRequest);
    }

    /** Aggregate latency targets and a rejection target only. */
    public Targets(List<Slo> latency, double rejectedFractionAllowed, String rejectedText) {
      this(latency, rejectedFractionAllowed, rejectedText, List.of(), 0, null);
    }

    /** Latency targets only: no request may fail to finish. */
    public static Targets of(List<Slo> latency) {
      return new Targets(latency, 0, NO_REJECTIONS);
    }

    /**
     * Parses {@code --slo} texts ({@link SloTargets#parse}) with capacity's defaults (Note [Target
     * combinations]): per-request targets without {@code attainment>=A} take {@code attainment>=1};
     * without {@code rejected.fraction<=F}, no request may fail to finish, unless there are
     * per-request targets (their attainment counts those requests as missing). Throws
     * InputException for a bad or repeated target, or neither a latency target nor a per-request one.
     */
    public static Targets parse(List<String> texts) {
      SloTargets t = SloTargets.parse(texts);
      if (t.aggregate().isEmpty() && t.perRequest().isEmpty()) {
        throw new InputException("--slo: give at least one latency target: a statistic (e.g. normalized_latency.mean<=0.2s) or a per-request limit"
            + " with the share of requests to meet it (e.g. --slo 'ttft<=1s' --slo 'attainment>=0.9')");
      }
      boolean perRequest = !t.perRequest().isEmpty();
      double allowed = t.rejectedFractionAllowed() != null ? t.rejectedFractionAllowed() : perRequest ? 1 : 0;
      String rejectedText = t.rejectedText() != null ? t.rejectedText() : perRequest ? ATTAINMENT_COUNTS_THEM : NO_REJECTIONS;
      return new Targets(t.aggregate(), allowed, rejectedText, t.perRequest(), !perRequest ? 0 : t.attainmentAtLeast() != null ? t.attainmentAtLeast() : 1,
          !perRequest ? null : t.attainmentText() != null ? t.attainmentText() : ALL_REQUESTS);
    }
  }

  /**
   * One probe: a full run at a rate.
   *
   * @param rate the arrival rate, requests/s
   * @param values per latency target (as written), the measured value in seconds
   * @param latencyMet whether every latency target was met (an undefined value does not meet it)
   * @param rejectionsMet whether the share of requests not finished met the rejection target
   * @param requests requests that arrived
   * @param finished requests finished
   * @param rejected requests rejected on arrival
   * @param attainment the share of the requests that finished and met every per-request target;
   *     null without per-request targets
   * @param attainmentMet whether that share met the attainment target (true without per-request targets)
   */
  public record Probe(double rate, Map<String, Double> values, boolean latencyMet, boolean rejectionsMet, long requests, long finished, long rejected,
      Double attainment, boolean attainmentMet) {
    /** A probe without per-request targets. */
    public Probe(double rate, Map<String, Double> values, boolean latencyMet, boolean rejectionsMet, long requests, long finished, long rejected) {
      this(rate, values, latencyMet, rejectionsMet, requests, finished, rejected, null, true);
    }

    /** Returns whether every target, the rejection and attainment targets included, was met. */
    public boolean met() {
      return latencyMet && rejectionsMet && attainmentMet;
    }

    /** Returns the requests that arrived but did not finish and were not rejected (aborted by an activation OOM). */
    public long aborted() {
      return requests - finished - rejected;
    }

    /** Returns the share of the requests that did not finish (rejected or aborted), 0 for none. */
    public double rejectedFraction() {
      return requests == 0 ? 0 : (double) (requests - finished) / requests;
    }

    /**
     * Returns the goodput, requests/s: the rate times the share of requests served, which is the
     * share finished, or with per-request targets the share that finished and met them (the
     * attainment).
     */
    public double goodputRps() {
      if (attainment != null) {
        return rate * attainment;
      }
      return requests == 0 ? 0 : rate * finished / requests;
    }
  }

  /**
   * The answer for one system (in a grid, for one cell).
   *
   * @param system the system
   * @param maxRate the highest rate probed that met every target; 0 when even the low bound did not
   * @param atUpperBound whether the high bound itself met every target (the capacity is at least that)
   * @param probes every probe, in the order run
   */
  public record Capacity(String system, double maxRate, boolean atUpperBound, List<Probe> probes) {
    /** Returns the probe at the answer, or, when no rate met the targets, the one at the low bound. */
    public Probe answer() {
      for (Probe p : probes) {
        if (maxRate > 0 && p.met() && p.rate() == maxRate) {
          return p;
        }
      }
      return probes.get(0);
    }

    /** Returns whether some probed rate met every target. */
    public boolean anyMet() {
      return maxRate > 0;
    }

    /**
     * Returns whether the low bound missed the rejection target: the system rejects more than
     * allowed at the lowest rate probed, so no rate has a capacity to give (Note [Rejections fail
     * the target]).
     */
    public boolean rejectsAtLowBound() {
      return !anyMet() && !probes.get(0).rejectionsMet();
    }
  }

  private CapacitySearch() {}

  /**
   * Searches every system of {@code spec} between {@code lowRate} and {@code highRate} with {@code
   * steps} bisection probes after the two bounds.
   */
  public static List<Capacity> search(ServingSpec spec, List<Slo> slos, double lowRate, double highRate, int steps) throws IOException {
    return search(spec, slos.isEmpty() ? null : Targets.of(slos), lowRate, highRate, steps);
  }

  /**
   * Searches every system of {@code spec} between {@code lowRate} and {@code highRate} with {@code
   * steps} bisection probes after the two bounds, against {@code targets}.
   */
  public static List<Capacity> search(ServingSpec spec, Targets targets, double lowRate, double highRate, int steps) throws IOException {
    List<ServingGrid.Cell> cells = new ArrayList<>();
    for (String system : spec.systems()) {
      cells.add(new ServingGrid.Cell(Map.of(), system, spec.withSystems(List.of(system))));
    }
    return searchCells(cells, targets, lowRate, highRate, steps);
  }

  /**
   * Searches every cell of a grid (each a spec of one system), in parallel on all cores, with the
   * answers in the cells' order; no request may fail to finish.
   */
  public static List<Capacity> searchCells(List<ServingGrid.Cell> cells, List<Slo> slos, double lowRate, double highRate, int steps) throws IOException {
    return searchCells(cells, slos.isEmpty() ? null : Targets.of(slos), lowRate, highRate, steps);
  }

  /**
   * Searches every cell of a grid (each a spec of one system) against {@code targets}, in parallel
   * on all cores, with the answers in the cells' order.
   */
  public static List<Capacity> searchCells(List<ServingGrid.Cell> cells, Targets targets, double lowRate, double highRate, int steps) throws IOException {
    return searchCells(cells, targets, lowRate, highRate, steps, null);
  }

  /** Receives progress: {@code done} of the {@code planned} probes, {@code (2 + steps) × cells}, are over. */
  @FunctionalInterface
  public interface Progress {
    void probes(int done, int planned);
  }

  /**
   * As {@link #searchCells(List, Targets, double, double, int)}, telling {@code progress} (or no
   * one, when null) after each probe; a cell whose search ends early (no rate met at the low
   * bound, or the high bound met) counts its probes not run as done.
   */
  public static List<Capacity> searchCells(List<ServingGrid.Cell> cells, Targets targets, double lowRate, double highRate, int steps, Progress progress)
      throws IOException {
    if (!(lowRate > 0) || !(highRate > lowRate)) {
      throw new InputException("--min-rate and --max-rate: need 0 < min < max, got " + lowRate + " and " + highRate);
    }
    if (targets == null || targets.latency().isEmpty() && targets.perRequest().isEmpty()) {
      throw new InputException("--slo: give at least one latency target");
    }
    for (ServingGrid.Cell c : cells) {
      c.spec().withRate(lowRate); // a recorded workload is measured here once (its cells share it), before any run
    }
    int planned = (2 + steps) * cells.size();
    int[] done = {0};
    java.util.function.IntConsumer probed = n -> {
      if (progress != null && n > 0) {
        synchronized (done) {
          done[0] += n;
          progress.probes(done[0], planned);
        }
      }
    };
    return Parallel.map(cells.size(), Runtime.getRuntime().availableProcessors(), i -> {
      Capacity c = searchOne(cells.get(i).spec(), cells.get(i).system(), targets, lowRate, highRate, steps, probed);
      probed.accept(2 + steps - c.probes().size()); // the probes an early answer made unnecessary
      return c;
    });
  }

  private static Capacity searchOne(ServingSpec spec, String system, Targets slos, double low, double high, int steps, java.util.function.IntConsumer probed)
      throws IOException {
    List<Probe> probes = new ArrayList<>();
    Probe atLow = probe(spec, slos, low);
    probes.add(atLow);
    probed.accept(1);
    if (!atLow.met()) {
      return new Capacity(system, 0, false, probes);
    }
    Probe atHigh = probe(spec, slos, high);
    probes.add(atHigh);
    probed.accept(1);
    if (atHigh.met()) {
      return new Capacity(system, high, true, probes);
    }
    double met = low;
    double failed = high;
    for (int k = 0; k < steps; k++) {
      double mid = (met + failed) / 2;
      Probe p = probe(spec, slos, mid);
      probes.add(p);
      probed.accept(1);
      if (p.met()) {
        met = mid;
      } else {
        failed = mid;
      }
    }
    return new Capacity(system, met, false, probes);
  }

  /** Runs {@code spec} (one system) at {@code rate} and judges it against {@code targets}: one probe of a search. */
  public static Probe probeAt(ServingSpec spec, Targets targets, double rate) throws IOException {
    return probe(spec, targets, rate);
  }

  private static Probe probe(ServingSpec spec, Targets targets, double rate) throws IOException {
    ServingRunner.SystemResult r = new ServingRunner(1).countingTargets(targets.perRequest()).run(spec.withRate(rate), null).get(0);
    Map<String, Object> summary = r.metrics().toMap();
    Map<String, Double> values = new LinkedHashMap<>();
    boolean met = true;
    for (Slo slo : targets.latency()) {
      double v = slo.valueIn(summary);
      values.put(slo.text(), v);
      met &= !Double.isNaN(v) && v <= slo.limitSeconds();
    }
    long requests = r.metrics().arrived();
    long finished = r.metrics().finished();
    boolean rejectionsMet = requests - finished <= targets.rejectedFractionAllowed() * requests;
    if (targets.perRequest().isEmpty()) {
      return new Probe(rate, values, met, rejectionsMet, requests, finished, r.metrics().rejected());
    }
    double attainment = r.metrics().attainment(targets.perRequest()).attainment();
    return new Probe(rate, values, met, rejectionsMet, requests, finished, r.metrics().rejected(), attainment,
        attainment >= targets.attainmentAtLeast());
  }

  /**
   * Returns the typed results of a search, as its result folder holds them ({@code
   * report.CapacityResults}): the configuration echo of the cells and the search's bounds, the
   * targets as written, and one entry per cell with its answer and every probe.
   *
   * @param cells the cells searched, in order
   * @param axes the grid's axes (empty without {@code --set})
   * @param targets the targets parsed
   * @param targetTexts the targets as written ({@code --slo})
   * @param found the answers of {@link #searchCells}, in the cells' order
   */
  public static CapacityResults results(List<ServingGrid.Cell> cells, List<ServingGrid.Axis> axes, Targets targets, List<String> targetTexts,
      double lowRate, double highRate, int steps, List<Capacity> found) throws IOException {
    Map<String, Object> config = ServingGrid.configEcho(cells, axes);
    config.put("min_rate_rps", lowRate);
    config.put("max_rate_rps", highRate);
    config.put("steps", steps);
    config.put("rejected_fraction_allowed", targets.rejectedFractionAllowed());
    if (!targets.perRequest().isEmpty()) {
      config.put("attainment_required", targets.attainmentAtLeast());
    }
    // Which predictor timed the probes: one where every cell has the same, else each cell's, in the cells' order.
    List<Map<String, Object>> costModels = new ArrayList<>();
    for (ServingGrid.Cell cell : cells) {
      costModels.add(cell.spec().forwardTime().echo());
    }
    config.put("cost_model", costModels.stream().distinct().count() == 1 ? costModels.get(0) : costModels);
    ServingSpec s = cells.get(0).spec();
    if (!s.hasRateOption()) {
      config.put("trace_mean_rate_rps", s.recordedMeanRate());
    }
    List<CapacityResults.SystemEntry> systems = new ArrayList<>();
    for (int i = 0; i < found.size(); i++) {
      systems.add(entry(found.get(i), cells.get(i), !axes.isEmpty(), targets));
    }
    return new CapacityResults(config, targetTexts.stream().map(String::strip).toList(), systems);
  }

  /** Returns one cell's answer and probes as typed results; the answer is {@link Capacity#answer}'s probe. */
  private static CapacityResults.SystemEntry entry(Capacity c, ServingGrid.Cell cell, boolean grid, Targets targets) {
    List<CapacityResults.Probe> probes = new ArrayList<>();
    for (Probe p : c.probes()) {
      Map<String, Double> values = new LinkedHashMap<>();
      p.values().forEach((k, v) -> values.put(k, Double.isNaN(v) ? null : v));
      probes.add(new CapacityResults.Probe(p.rate(), p.met(), p.requests(), p.finished(), p.rejected(), p.aborted(), p.rejectedFraction(),
          p.goodputRps(), values, p.attainment()));
    }
    Probe a = c.answer();
    // The targets the low bound missed, when no rate met them (Note [Rejections fail the target]).
    List<String> unmet = new ArrayList<>();
    if (!c.anyMet()) {
      if (!a.latencyMet()) {
        for (Slo t : targets.latency()) {
          double v = a.values().get(t.text());
          if (Double.isNaN(v) || v > t.limitSeconds()) {
            unmet.add(t.text());
          }
        }
      }
      if (!a.rejectionsMet()) {
        unmet.add(targets.rejectedText());
      }
      if (!a.attainmentMet()) {
        unmet.add(targets.attainmentText());
      }
    }
    return new CapacityResults.SystemEntry(c.system(), grid ? cell.settings() : Map.of(), grid ? cell.spec().kvMemoryBytes() : null, c.maxRate(),
        c.atUpperBound(), c.anyMet() ? a.goodputRps() : null, a.requests(), a.finished(), a.rejected(), a.aborted(), a.rejectedFraction(), unmet,
        probes);
  }

  /** Formats a rate for tables: three significant digits. */
  public static String rate(double r) {
    return String.format(Locale.ROOT, "%.3g", r);
  }
}

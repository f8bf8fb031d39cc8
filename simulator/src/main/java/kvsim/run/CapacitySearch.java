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
   * Every target of a search: the latency targets and the rejection target (Note [Rejections fail
   * the target]).
   *
   * @param latency the latency targets, in the order given (at least one)
   * @param rejectedFractionAllowed the largest share of requests that may fail to finish, in [0, 1]
   * @param rejectedText the rejection target as written, or {@link #NO_REJECTIONS} when none was given
   */
  public record Targets(List<Slo> latency, double rejectedFractionAllowed, String rejectedText) {
    /** The rejection target that holds unless another is given: every request must finish. */
    public static final String NO_REJECTIONS = "rejected.fraction<=0";
    private static final Pattern REJECTED = Pattern.compile("\\s*rejected\\.fraction\\s*<=\\s*([0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\\s*");

    public Targets {
      latency = List.copyOf(latency);
    }

    /** Latency targets only: no request may fail to finish. */
    public static Targets of(List<Slo> latency) {
      return new Targets(latency, 0, NO_REJECTIONS);
    }

    /**
     * Parses {@code --slo} texts: {@code rejected.fraction<=F} (at most once) and latency targets
     * ({@link Slo#parse}); throws InputException for a bad one, a second rejection target, or no
     * latency target.
     */
    public static Targets parse(List<String> texts) {
      List<Slo> latency = new ArrayList<>();
      Double allowed = null;
      String written = NO_REJECTIONS;
      for (String t : texts) {
        if (t.strip().startsWith("rejected")) {
          Matcher m = REJECTED.matcher(t);
          double f = m.matches() ? Double.parseDouble(m.group(1)) : Double.NaN;
          if (!(f >= 0 && f <= 1)) {
            throw new InputException("--slo: '" + t + "' is not rejected.fraction<=F with F in [0, 1] (e.g. rejected.fraction<=0.01)");
          }
          if (allowed != null) {
            throw new InputException("--slo: '" + t + "' is a second rejection target after '" + written + "'; give one");
          }
          allowed = f;
          written = t.strip();
        } else {
          latency.add(Slo.parse(t));
        }
      }
      if (latency.isEmpty()) {
        throw new InputException("--slo: give at least one latency target (e.g. normalized_latency.mean<=0.2s)");
      }
      return new Targets(latency, allowed == null ? 0 : allowed, written);
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
   */
  public record Probe(double rate, Map<String, Double> values, boolean latencyMet, boolean rejectionsMet, long requests, long finished, long rejected) {
    /** Returns whether every target, the rejection target included, was met. */
    public boolean met() {
      return latencyMet && rejectionsMet;
    }

    /** Returns the requests that arrived but did not finish and were not rejected (aborted by an activation OOM). */
    public long aborted() {
      return requests - finished - rejected;
    }

    /** Returns the share of the requests that did not finish (rejected or aborted), 0 for none. */
    public double rejectedFraction() {
      return requests == 0 ? 0 : (double) (requests - finished) / requests;
    }

    /** Returns the goodput: the rate times the share of requests finished, requests/s. */
    public double goodputRps() {
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
    if (targets == null || targets.latency().isEmpty()) {
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

  private static Probe probe(ServingSpec spec, Targets targets, double rate) throws IOException {
    ServingRunner.SystemResult r = new ServingRunner(1).run(spec.withRate(rate), null).get(0);
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
    return new Probe(rate, values, met, rejectionsMet, requests, finished, r.metrics().rejected());
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
          p.goodputRps(), values));
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

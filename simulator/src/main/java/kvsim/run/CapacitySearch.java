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

/**
 * The capacity question: at what request rate does each serving system stop meeting its latency
 * targets? For each system, a bisection over the workload's arrival rate between a low and a high
 * bound: every probe is a full serving run of the same requests' lengths and seed at that rate (a
 * recorded trace's times scaled to it: {@link ServingSpec#withRate});
 * the answer is the highest rate probed that meets every target. Systems are searched in parallel
 * on all cores, each probe's runs in order, so results never depend on the number of threads.
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
            + "STAT one of mean, p50, p90, p99, and VALUE in s or ms (e.g. normalized_latency.mean<=0.2s)");
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
   * One probe: a full run at a rate.
   *
   * @param rate the arrival rate, requests/s
   * @param values per target (as written), the measured value in seconds
   * @param met whether every target was met (an undefined value does not meet it)
   * @param finished requests finished
   * @param rejected requests rejected
   */
  public record Probe(double rate, Map<String, Double> values, boolean met, long finished, long rejected) {}

  /**
   * The answer for one system (in a grid, for one cell).
   *
   * @param system the system
   * @param maxRate the highest rate probed that met every target; 0 when even the low bound did not
   * @param atUpperBound whether the high bound itself met every target (the capacity is at least that)
   * @param probes every probe, in the order run
   */
  public record Capacity(String system, double maxRate, boolean atUpperBound, List<Probe> probes) {}

  private CapacitySearch() {}

  /**
   * Searches every system of {@code spec} between {@code lowRate} and {@code highRate} with {@code
   * steps} bisection probes after the two bounds.
   */
  public static List<Capacity> search(ServingSpec spec, List<Slo> slos, double lowRate, double highRate, int steps) throws IOException {
    List<ServingGrid.Cell> cells = new ArrayList<>();
    for (String system : spec.systems()) {
      cells.add(new ServingGrid.Cell(Map.of(), system, spec.withSystems(List.of(system))));
    }
    return searchCells(cells, slos, lowRate, highRate, steps);
  }

  /**
   * Searches every cell of a grid (each a spec of one system), in parallel on all cores, with the
   * answers in the cells' order.
   */
  public static List<Capacity> searchCells(List<ServingGrid.Cell> cells, List<Slo> slos, double lowRate, double highRate, int steps) throws IOException {
    if (!(lowRate > 0) || !(highRate > lowRate)) {
      throw new InputException("--min-rate and --max-rate: need 0 < min < max, got " + lowRate + " and " + highRate);
    }
    if (slos.isEmpty()) {
      throw new InputException("--slo: give at least one latency target");
    }
    for (ServingGrid.Cell c : cells) {
      c.spec().withRate(lowRate); // a recorded workload is measured here once (its cells share it), before any run
    }
    return Parallel.map(cells.size(), Runtime.getRuntime().availableProcessors(),
        i -> searchOne(cells.get(i).spec(), cells.get(i).system(), slos, lowRate, highRate, steps));
  }

  private static Capacity searchOne(ServingSpec spec, String system, List<Slo> slos, double low, double high, int steps) throws IOException {
    List<Probe> probes = new ArrayList<>();
    Probe atLow = probe(spec, slos, low);
    probes.add(atLow);
    if (!atLow.met()) {
      return new Capacity(system, 0, false, probes);
    }
    Probe atHigh = probe(spec, slos, high);
    probes.add(atHigh);
    if (atHigh.met()) {
      return new Capacity(system, high, true, probes);
    }
    double met = low;
    double failed = high;
    for (int k = 0; k < steps; k++) {
      double mid = (met + failed) / 2;
      Probe p = probe(spec, slos, mid);
      probes.add(p);
      if (p.met()) {
        met = mid;
      } else {
        failed = mid;
      }
    }
    return new Capacity(system, met, false, probes);
  }

  private static Probe probe(ServingSpec spec, List<Slo> slos, double rate) throws IOException {
    ServingRunner.SystemResult r = new ServingRunner(1).run(spec.withRate(rate), null).get(0);
    Map<String, Object> summary = r.metrics().toMap();
    Map<String, Double> values = new LinkedHashMap<>();
    boolean met = true;
    for (Slo slo : slos) {
      double v = slo.valueIn(summary);
      values.put(slo.text(), v);
      met &= !Double.isNaN(v) && v <= slo.limitSeconds();
    }
    return new Probe(rate, values, met, r.metrics().finished(), r.metrics().rejected());
  }

  /** Formats a rate for tables: three significant digits. */
  public static String rate(double r) {
    return String.format(Locale.ROOT, "%.3g", r);
  }
}

package kvsim.report;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a capacity search's result folder holds, typed: {@link ResultsWriter#writeCapacity} writes
 * it ({@code summary.json}, {@code probes.csv}, the chart), {@link CapacityResultsReader} reads it
 * back equal. The fields are those of {@code results/SCHEMA.md} ("capacity"); the rules behind the
 * answer are {@code run.CapacitySearch}'s (Note [Rejections fail the target] there).
 *
 * @param config the configuration echo of {@code summary.json}, in file order (plain values, so a
 *     new key needs no new reader)
 * @param targets the targets as written ({@code --slo}, stripped), in the order given
 * @param systems one entry per system (per cell with a grid), in the order searched
 * @param intervals per entry's {@link SystemEntry#label}, its intervals over seeds per answer
 *     field ({@code max_rate_rps}, {@code goodput_rps}); empty for a search of one seed
 */
public record CapacityResults(Map<String, Object> config, List<String> targets, List<SystemEntry> systems,
    Map<String, Map<String, kvsim.metrics.Interval>> intervals) {
  private static final Pattern LATENCY_TARGET =
      Pattern.compile("\\s*([a-z0-9_]+)\\.(mean|p50|p90|p99)\\s*<=\\s*([0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\\s*(s|ms)\\s*");

  public CapacityResults {
    config = Collections.unmodifiableMap(new LinkedHashMap<>(config));
    targets = List.copyOf(targets);
    systems = List.copyOf(systems);
    intervals = Collections.unmodifiableMap(new LinkedHashMap<>(intervals));
  }

  /** The results of a search of one seed: no intervals. */
  public CapacityResults(Map<String, Object> config, List<String> targets, List<SystemEntry> systems) {
    this(config, targets, systems, Map.of());
  }

  /**
   * One probe: a full serving run at a rate.
   *
   * @param rateRps the arrival rate, requests/s
   * @param met whether every target was met
   * @param requests requests that arrived
   * @param finished requests finished
   * @param rejected requests rejected on arrival
   * @param aborted requests aborted after admission
   * @param rejectedFraction the share of requests not finished
   * @param goodputRps the rate times the share finished, requests/s
   * @param valuesSeconds per latency target (as written), the value measured in seconds; null where
   *     undefined (no request finished)
   * @param attainment the share of the requests that finished and met every per-request target;
   *     null in a search without per-request targets
   */
  public record Probe(double rateRps, boolean met, long requests, long finished, long rejected, long aborted, double rejectedFraction,
      double goodputRps, Map<String, Double> valuesSeconds, Double attainment) {
    public Probe {
      valuesSeconds = Collections.unmodifiableMap(new LinkedHashMap<>(valuesSeconds));
    }

    /** A probe of a search without per-request targets. */
    public Probe(double rateRps, boolean met, long requests, long finished, long rejected, long aborted, double rejectedFraction,
        double goodputRps, Map<String, Double> valuesSeconds) {
      this(rateRps, met, requests, finished, rejected, aborted, rejectedFraction, goodputRps, valuesSeconds, null);
    }
  }

  /**
   * One system's answer (in a grid, one cell's).
   *
   * @param system the system's name
   * @param cell the value of each grid key in this cell; empty without a grid
   * @param kvMemoryBytes the cell's KV memory; null without a grid (the configuration echo has it)
   * @param maxRateRps the highest rate probed that met every target; 0 when none did
   * @param atUpperBound whether the highest rate allowed met every target
   * @param goodputRps the goodput at the answer; null when no rate met the targets
   * @param requests requests at the answer (at the lowest rate probed when none met), likewise the
   *     next four
   * @param finished requests finished there
   * @param rejected requests rejected there
   * @param aborted requests aborted there
   * @param rejectedFraction the share not finished there
   * @param unmetAtMinRate the targets the lowest rate missed, when no rate met them; else empty
   * @param probes every probe, in the order run
   */
  public record SystemEntry(String system, Map<String, String> cell, Long kvMemoryBytes, double maxRateRps, boolean atUpperBound,
      Double goodputRps, long requests, long finished, long rejected, long aborted, double rejectedFraction, List<String> unmetAtMinRate,
      List<Probe> probes) {
    public SystemEntry {
      cell = Collections.unmodifiableMap(new LinkedHashMap<>(cell));
      unmetAtMinRate = List.copyOf(unmetAtMinRate);
      probes = List.copyOf(probes);
    }

    /** Returns whether some probed rate met every target. */
    public boolean anyMet() {
      return maxRateRps > 0;
    }

    /** Returns the name of this entry in tables and charts: the system, then {@code KEY=VALUE} of each grid setting. */
    public String label() {
      StringBuilder sb = new StringBuilder(system);
      cell.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
      return sb.toString();
    }

    /** Returns the probe at the answer, or, when no rate met the targets, the first (the lowest rate). */
    public Probe answer() {
      for (Probe p : probes) {
        if (anyMet() && p.met() && p.rateRps() == maxRateRps) {
          return p;
        }
      }
      return probes.get(0);
    }

    /** Returns the entry's name in the capacity chart's legend: its answer, goodput and the share not finished there. */
    public String legend() {
      Probe a = answer();
      String share = String.format(Locale.ROOT, "%.1f %% not finished", 100 * a.rejectedFraction())
          + (a.attainment() == null ? "" : String.format(Locale.ROOT, ", attainment %.1f %%", 100 * a.attainment()));
      if (!anyMet()) {
        return label() + ": no rate meets the targets (" + share + " at " + rate(a.rateRps()) + " req/s)";
      }
      return label() + ": " + (atUpperBound ? ">= " : "") + rate(maxRateRps) + " req/s, goodput " + rate(a.goodputRps()) + ", " + share;
    }
  }

  /** Returns a rate as tables and the chart show it: three significant digits. */
  public static String rate(double r) {
    return String.format(Locale.ROOT, "%.3g", r);
  }

  /** Returns whether a target as written is the rejection target ({@code rejected.fraction<=F}) rather than a latency target. */
  public static boolean isRejectionTarget(String target) {
    return target.strip().startsWith("rejected");
  }

  /** Returns whether a target as written is an aggregate latency target ({@code METRIC.STAT<=VALUE(s|ms)}). */
  public static boolean isLatencyTarget(String target) {
    return LATENCY_TARGET.matcher(target).matches();
  }

  /** Returns the aggregate latency targets ({@code METRIC.STAT<=VALUE}), in the order given: not the per-request, attainment or rejection ones. */
  public List<String> latencyTargets() {
    return targets.stream().filter(CapacityResults::isLatencyTarget).toList();
  }

  /** Returns whether the search had per-request targets: its probes carry their attainment. */
  public boolean hasAttainment() {
    return config.get("attainment_required") instanceof Number;
  }

  /** Returns the share of requests each rate had to meet the per-request targets with, NaN without them. */
  public double attainmentRequired() {
    return config.get("attainment_required") instanceof Number n ? n.doubleValue() : Double.NaN;
  }

  /**
   * Returns the {@code probes.csv} column of a latency target, {@code METRIC_STAT_seconds} ({@code
   * normalized_latency_mean_seconds}).
   */
  public static String column(String latencyTarget) {
    Matcher m = latencyTarget(latencyTarget);
    return m.group(1) + "_" + m.group(2) + "_seconds";
  }

  /** Returns a latency target's limit in seconds, as {@code run.CapacitySearch.Slo#parse} computes it. */
  public static double limitSeconds(String latencyTarget) {
    Matcher m = latencyTarget(latencyTarget);
    return Double.parseDouble(m.group(3)) * (m.group(4).equals("ms") ? 1e-3 : 1.0);
  }

  private static Matcher latencyTarget(String text) {
    Matcher m = LATENCY_TARGET.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("not a latency target: " + text);
    }
    return m;
  }

  /** Returns the columns of {@code probes.csv}: system, the grid's keys, the probe's figures, then each latency target's value. */
  public List<String> probeColumns() {
    List<String> columns = new ArrayList<>(List.of("system"));
    if (!systems.isEmpty()) {
      columns.addAll(systems.get(0).cell().keySet());
    }
    columns.addAll(List.of("rate_rps", "met", "requests", "finished", "rejected", "aborted", "rejected_fraction", "goodput_rps"));
    latencyTargets().forEach(t -> columns.add(column(t)));
    if (hasAttainment()) {
      columns.add("attainment");
    }
    return columns;
  }
}

package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a capacity search's {@code summary.json} (format {@code kvsim-capacity}) back into the
 * {@link CapacityResults} that {@link ResultsWriter#writeCapacity} wrote: every field of
 * {@code results/SCHEMA.md} ("capacity") checked with its type, strictly (Note [Strict reading] on
 * {@link ResultsReader}). Written again, what this returns gives the same bytes, a search over
 * seeds' {@code intervals} included (each checked: median, low, high, n, coverage).
 */
public final class CapacityResultsReader {
  private static final Set<String> SYSTEM_FIELDS = Set.of("system", "cell", "kv_memory_bytes", "max_rate_rps", "at_upper_bound", "goodput_rps",
      "requests", "finished", "rejected", "aborted", "rejected_fraction", "unmet_at_min_rate", "intervals", "probes");
  private static final Set<String> PROBE_FIELDS =
      Set.of("rate_rps", "met", "requests", "finished", "rejected", "aborted", "rejected_fraction", "goodput_rps", "values_seconds", "attainment");

  private static final java.util.regex.Pattern PER_REQUEST_OR_ATTAINMENT =
      java.util.regex.Pattern.compile("\\s*(?:[a-z0-9_]+\\s*<=\\s*[0-9.eE+-]+\\s*(?:s|ms)|attainment\\s*>=\\s*[0-9.eE+-]+)\\s*");

  private CapacityResultsReader() {}

  /** Reads the capacity search's result folder {@code dir}. */
  public static CapacityResults read(Path dir) {
    JsonFile.requireFolder(dir);
    JsonFile s = new JsonFile(dir.resolve(ResultsReader.SUMMARY_FILE));
    JsonNode root = s.readObject();
    s.checkFormat(root, ResultsReader.CAPACITY_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    JsonNode targetsNode = null;
    JsonNode systemsNode = null;
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "targets" -> targetsNode = e.getValue();
        case "systems" -> systemsNode = e.getValue();
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    List<String> targets = new ArrayList<>();
    List<JsonNode> t = s.array(targetsNode, "targets");
    for (int i = 0; i < t.size(); i++) {
      String text = s.text(t.get(i), "targets[" + i + "]");
      if (!CapacityResults.isRejectionTarget(text) && !CapacityResults.isLatencyTarget(text) && !PER_REQUEST_OR_ATTAINMENT.matcher(text).matches()) {
        throw s.error("targets[" + i + "]", "'" + text + "' is none of METRIC.STAT<=VALUE(s|ms), METRIC<=VALUE(s|ms), attainment>=A, rejected.fraction<=F");
      }
      targets.add(text);
    }
    List<String> latency = targets.stream().filter(CapacityResults::isLatencyTarget).toList();
    Object required = config.get("attainment_required");
    if (required != null && !(required instanceof Number n && n.doubleValue() > 0 && n.doubleValue() <= 1)) {
      throw s.error("attainment_required", "expected a number in (0, 1], found " + required);
    }
    boolean attainment = required != null;
    if (latency.isEmpty() && !attainment) {
      throw s.error("targets", "no latency target (METRIC.STAT<=VALUE(s|ms)) and no attainment_required");
    }
    List<CapacityResults.SystemEntry> systems = new ArrayList<>();
    Map<String, Map<String, kvsim.metrics.Interval>> intervals = new LinkedHashMap<>();
    Set<String> seen = new HashSet<>();
    Set<String> cellKeys = null;
    List<JsonNode> list = s.array(systemsNode, "systems");
    for (int i = 0; i < list.size(); i++) {
      String at = "systems[" + i + "]";
      CapacityResults.SystemEntry entry = system(s, s.object(list.get(i), at), at, latency, attainment);
      if (cellKeys == null) {
        cellKeys = entry.cell().keySet();
      } else if (!cellKeys.equals(entry.cell().keySet())) {
        throw s.error(at + ".cell", "keys " + entry.cell().keySet() + ", but " + "systems[0] has " + cellKeys);
      }
      if (!seen.add(entry.label())) {
        throw s.error(at, "'" + entry.label() + "' appears twice");
      }
      systems.add(entry);
      String where = at;
      Map<String, kvsim.metrics.Interval> in = IntervalMarks.read(list.get(i).get("intervals") == null ? null : s.plain(list.get(i).get("intervals")), (field, problem) -> s.error(where + "." + field, problem));
      if (in != null) {
        intervals.put(entry.label(), in);
      }
    }
    return new CapacityResults(config, targets, systems, intervals);
  }

  private static CapacityResults.SystemEntry system(JsonFile s, JsonNode n, String at, List<String> latency, boolean attainment) {
    s.onlyFields(n, at, SYSTEM_FIELDS);
    String system = s.text(n.get("system"), at + ".system");
    Map<String, String> cell = new LinkedHashMap<>();
    Long kvMemoryBytes = null;
    if (n.has("cell")) {
      JsonNode c = s.object(n.get("cell"), at + ".cell");
      for (Map.Entry<String, JsonNode> e : c.properties()) {
        cell.put(e.getKey(), s.text(e.getValue(), at + ".cell." + e.getKey()));
      }
      kvMemoryBytes = s.integer(n.get("kv_memory_bytes"), at + ".kv_memory_bytes", true);
    } else if (n.has("kv_memory_bytes")) {
      throw s.error(at + ".kv_memory_bytes", "only with a cell");
    }
    double maxRate = number(s, n.get("max_rate_rps"), at + ".max_rate_rps");
    boolean atUpper = bool(s, n.get("at_upper_bound"), at + ".at_upper_bound");
    Double goodput = s.numberOrNull(n.get("goodput_rps"), at + ".goodput_rps", false);
    if ((goodput == null) != (maxRate == 0)) {
      throw s.error(at + ".goodput_rps", goodput == null ? "null, but max_rate_rps " + maxRate + " met the targets" : "expected null where no rate met the targets");
    }
    long requests = s.integer(n.get("requests"), at + ".requests", true);
    long finished = s.integer(n.get("finished"), at + ".finished", true);
    long rejected = s.integer(n.get("rejected"), at + ".rejected", true);
    long aborted = s.integer(n.get("aborted"), at + ".aborted", true);
    double rejectedFraction = number(s, n.get("rejected_fraction"), at + ".rejected_fraction");
    List<String> unmet = new ArrayList<>();
    List<JsonNode> u = s.array(n.get("unmet_at_min_rate"), at + ".unmet_at_min_rate");
    for (int k = 0; k < u.size(); k++) {
      unmet.add(s.text(u.get(k), at + ".unmet_at_min_rate[" + k + "]"));
    }
    List<CapacityResults.Probe> probes = new ArrayList<>();
    List<JsonNode> p = s.array(n.get("probes"), at + ".probes");
    if (p.isEmpty()) {
      throw s.error(at + ".probes", "empty; a search probes at least the lowest rate");
    }
    for (int k = 0; k < p.size(); k++) {
      probes.add(probe(s, s.object(p.get(k), at + ".probes[" + k + "]"), at + ".probes[" + k + "]", latency, attainment));
    }
    return new CapacityResults.SystemEntry(system, cell, kvMemoryBytes, maxRate, atUpper, goodput, requests, finished, rejected, aborted,
        rejectedFraction, unmet, probes);
  }

  private static CapacityResults.Probe probe(JsonFile s, JsonNode n, String at, List<String> latency, boolean withAttainment) {
    s.onlyFields(n, at, PROBE_FIELDS);
    double rate = number(s, n.get("rate_rps"), at + ".rate_rps");
    boolean met = bool(s, n.get("met"), at + ".met");
    long requests = s.integer(n.get("requests"), at + ".requests", true);
    long finished = s.integer(n.get("finished"), at + ".finished", true);
    long rejected = s.integer(n.get("rejected"), at + ".rejected", true);
    long aborted = s.integer(n.get("aborted"), at + ".aborted", true);
    double rejectedFraction = number(s, n.get("rejected_fraction"), at + ".rejected_fraction");
    double goodput = number(s, n.get("goodput_rps"), at + ".goodput_rps");
    JsonNode v = s.object(n.get("values_seconds"), at + ".values_seconds");
    s.onlyFields(v, at + ".values_seconds", Set.copyOf(latency));
    Map<String, Double> values = new LinkedHashMap<>();
    for (String t : latency) {
      values.put(t, s.numberOrNull(v.get(t), at + ".values_seconds." + t, false));
    }
    Double attainment = null;
    if (withAttainment) {
      attainment = number(s, n.get("attainment"), at + ".attainment");
      if (attainment > 1) {
        throw s.error(at + ".attainment", "expected a share in [0, 1], found " + attainment);
      }
    } else if (n.has("attainment")) {
      throw s.error(at + ".attainment", "only in a search with per-request targets (attainment_required)");
    }
    return new CapacityResults.Probe(rate, met, requests, finished, rejected, aborted, rejectedFraction, goodput, values, attainment);
  }

  private static double number(JsonFile s, JsonNode n, String field) {
    if (n == null) {
      throw s.error(field, "missing");
    }
    if (!n.isNumber() || !Double.isFinite(n.doubleValue()) || n.doubleValue() < 0) {
      throw s.error(field, "expected a non-negative number, found " + n);
    }
    return n.doubleValue();
  }

  private static boolean bool(JsonFile s, JsonNode n, String field) {
    if (n == null) {
      throw s.error(field, "missing");
    }
    if (!n.isBoolean()) {
      throw s.error(field, "expected true or false, found " + n);
    }
    return n.booleanValue();
  }
}

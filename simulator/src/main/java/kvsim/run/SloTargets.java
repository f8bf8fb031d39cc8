package kvsim.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kvsim.core.InputException;
import kvsim.serving.ServingMetrics;

/**
 * The {@code --slo} targets of {@code kvsim serving} and {@code kvsim capacity}, parsed, and their
 * check against a serving run. Four forms, each written as the user gives it:
 *
 * <ul>
 *   <li>an aggregate latency target {@code METRIC.STAT<=VALUE(s|ms)} ({@code
 *       normalized_latency.mean<=0.2s}): a statistic over the finished requests
 *       ({@link CapacitySearch.Slo});
 *   <li>a per-request target {@code METRIC<=VALUE(s|ms)} ({@code ttft<=1s}, {@code tpot<=100ms},
 *       {@code e2e<=30s}, {@code normalized_latency<=0.2s}): met by each request whose own value is
 *       within the limit ({@link ServingMetrics.RequestTarget}; Note [Per-request targets] in
 *       {@code serving.ServingMetrics} gives vLLM's definition of goodput this follows, and where
 *       kvsim differs);
 *   <li>{@code attainment>=A}, A in (0, 1]: at least that share of the arrived requests finished and
 *       met every per-request target (DistServe's SLO attainment);
 *   <li>{@code rejected.fraction<=F}, F in [0, 1]: at most that share of the arrived requests did
 *       not finish (Note [Rejections fail the target] in {@link CapacitySearch}).
 * </ul>
 *
 * <p>Note [Target combinations]: an attainment target needs a per-request target to count against
 * (the share of finished requests alone is what {@code rejected.fraction} states), so {@code
 * attainment>=A} alone is refused, as is a second target of the same per-request metric, a second
 * attainment or a second rejection target (which would be met or not by the tighter one alone,
 * silently). Per-request targets without an attainment target are reported by {@code serving} as
 * shares; {@code capacity} needs a verdict per rate and takes them as {@code attainment>=1} (every
 * request finishes and meets them), echoed as the default, in the way {@code
 * rejected.fraction<=0} is its default for the finished share.
 *
 * @param written the targets as written, stripped, in the order given
 * @param aggregate the aggregate latency targets, in order
 * @param perRequest the per-request targets, in order
 * @param attainmentAtLeast the attainment target's share, or null without one
 * @param attainmentText the attainment target as written, or null without one
 * @param rejectedFractionAllowed the rejection target's share, or null without one
 * @param rejectedText the rejection target as written, or null without one
 */
public record SloTargets(List<String> written, List<CapacitySearch.Slo> aggregate, List<ServingMetrics.RequestTarget> perRequest,
    Double attainmentAtLeast, String attainmentText, Double rejectedFractionAllowed, String rejectedText) {
  private static final String NUMBER = "([0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)";
  private static final Pattern PER_REQUEST = Pattern.compile("\\s*([a-z0-9_]+)\\s*<=\\s*" + NUMBER + "\\s*(s|ms)\\s*");
  private static final Pattern ATTAINMENT = Pattern.compile("\\s*attainment\\s*>=\\s*" + NUMBER + "\\s*");
  private static final Pattern REJECTED = Pattern.compile("\\s*rejected\\.fraction\\s*<=\\s*" + NUMBER + "\\s*");
  /** What a target may be, for error messages. */
  static final String FORMS = "expected METRIC<=VALUE (per request: METRIC one of ttft, tpot, e2e, normalized_latency, VALUE in s or ms, e.g. ttft<=1s),"
      + " METRIC.STAT<=VALUE (STAT one of mean, p50, p90, p99, e.g. normalized_latency.mean<=0.2s), attainment>=A with A in (0, 1]"
      + " or rejected.fraction<=F with F in [0, 1]";

  public SloTargets {
    written = List.copyOf(written);
    aggregate = List.copyOf(aggregate);
    perRequest = List.copyOf(perRequest);
  }

  /**
   * Parses {@code --slo} texts (Note [Target combinations]); throws InputException with one line
   * naming the text for a bad or repeated target, or an attainment target without a per-request
   * target.
   */
  public static SloTargets parse(List<String> texts) {
    List<CapacitySearch.Slo> aggregate = new ArrayList<>();
    List<ServingMetrics.RequestTarget> perRequest = new ArrayList<>();
    Double attainment = null;
    String attainmentText = null;
    Double rejected = null;
    String rejectedText = null;
    for (String t : texts) {
      String s = t.strip();
      Matcher m;
      if (s.startsWith("rejected")) {
        m = REJECTED.matcher(t);
        double f = m.matches() ? Double.parseDouble(m.group(1)) : Double.NaN;
        if (!(f >= 0 && f <= 1)) {
          throw new InputException("--slo: '" + t + "' is not rejected.fraction<=F with F in [0, 1] (e.g. rejected.fraction<=0.01)");
        }
        if (rejected != null) {
          throw new InputException("--slo: '" + t + "' is a second rejection target after '" + rejectedText + "'; give one");
        }
        rejected = f;
        rejectedText = s;
      } else if (s.startsWith("attainment")) {
        m = ATTAINMENT.matcher(t);
        double a = m.matches() ? Double.parseDouble(m.group(1)) : Double.NaN;
        if (!(a > 0 && a <= 1)) {
          throw new InputException("--slo: '" + t + "' is not attainment>=A with A in (0, 1] (e.g. attainment>=0.9: 90 % of the requests meet every per-request target)");
        }
        if (attainment != null) {
          throw new InputException("--slo: '" + t + "' is a second attainment target after '" + attainmentText + "'; give one");
        }
        attainment = a;
        attainmentText = s;
      } else if ((m = PER_REQUEST.matcher(t)).matches()) {
        String metric = m.group(1);
        if (!ServingMetrics.REQUEST_METRICS.contains(metric)) {
          throw new InputException("--slo: '" + t + "' is not a target: " + m.group(1) + " is no per-request metric; " + FORMS);
        }
        for (ServingMetrics.RequestTarget other : perRequest) {
          if (other.metric().equals(metric)) {
            throw new InputException("--slo: '" + t + "' is a second " + metric + " target after '" + other.text() + "'; give one per metric");
          }
        }
        double limit = Double.parseDouble(m.group(2)) * (m.group(3).equals("ms") ? 1e-3 : 1.0);
        perRequest.add(new ServingMetrics.RequestTarget(metric, limit, s));
      } else if (s.contains(".")) {
        try {
          aggregate.add(CapacitySearch.Slo.parse(t));
        } catch (InputException e) {
          throw new InputException("--slo: '" + t + "' is not a target: " + FORMS);
        }
      } else {
        throw new InputException("--slo: '" + t + "' is not a target: " + FORMS);
      }
    }
    if (attainment != null && perRequest.isEmpty()) {
      throw new InputException("--slo: '" + attainmentText + "' needs a per-request target to count against (e.g. --slo 'ttft<=1s'); "
          + "for the share of requests finished, give rejected.fraction<=F");
    }
    return new SloTargets(texts.stream().map(String::strip).toList(), aggregate, perRequest, attainment, attainmentText, rejected, rejectedText);
  }

  /**
   * Returns the {@code slo} object of a serving run's entry in {@code summary.json}
   * (results/SCHEMA.md): the targets as written, the attainment over every arrived request, the
   * requests meeting and missing the SLO, the goodput over the run's span ({@code span_seconds},
   * first arrival to last finish; null when no time passed), and per target its share met
   * (per-request targets) or its value and whether it was met (aggregate, attainment and rejection
   * targets); {@code met}: whether every target with a verdict was met, null when none has one.
   *
   * @param metrics the run's metrics
   * @param summary the run's entry of {@code summary.json} ({@link ServingMetrics#toMap}), for the
   *     aggregate targets' values
   */
  public Map<String, Object> evaluate(ServingMetrics metrics, Map<String, Object> summary) {
    ServingMetrics.Attainment a = metrics.attainment(perRequest);
    double span = metrics.spanSeconds();
    Map<String, Object> slo = new LinkedHashMap<>();
    slo.put("targets", written);
    slo.put("attainment", a.attainment());
    slo.put("requests_met", a.met());
    slo.put("requests_missed", a.arrived() - a.met());
    slo.put("goodput_rps", span > 0 ? a.met() / span : null);
    slo.put("goodput_tokens_per_second", span > 0 ? a.metOutputTokens() / span : null);
    Map<String, Object> per = new LinkedHashMap<>();
    for (int i = 0; i < perRequest.size(); i++) {
      per.put(perRequest.get(i).text(), Map.of("share_met", a.shareMeeting(i)));
    }
    for (CapacitySearch.Slo s : aggregate) {
      double v = s.valueIn(summary);
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("value_seconds", Double.isNaN(v) ? null : v);
      per.put(s.text(), o);
    }
    if (attainmentAtLeast != null) {
      per.put(attainmentText, value(a.attainment()));
    }
    if (rejectedFractionAllowed != null) {
      per.put(rejectedText, value(a.arrived() == 0 ? 0 : (double) (a.arrived() - metrics.finished()) / a.arrived()));
    }
    slo.put("per_target", per);
    slo.put("met", null);
    judge(slo);
    return slo;
  }

  /**
   * Sets the verdicts ({@code met}) of a seed sweep's merged entry from its medians ({@link #judge});
   * without this, a merged entry would carry its first seed's verdicts beside the medians
   * (run.SeedRuns).
   */
  @SuppressWarnings("unchecked")
  public void judgeMedians(Map<String, Object> entry) {
    Map<String, Object> slo = (Map<String, Object>) entry.get("slo");
    if (slo != null) {
      judge(slo);
    }
  }

  /**
   * Sets the verdicts of an {@code slo} object from the values it holds: each aggregate target's
   * value against its limit, the attainment against the share required, the share not finished
   * against the share allowed, and {@code met} of the whole SLO from those (null without any).
   */
  @SuppressWarnings("unchecked")
  private void judge(Map<String, Object> slo) {
    Map<String, Object> per = (Map<String, Object>) slo.get("per_target");
    Boolean all = null;
    for (CapacitySearch.Slo s : aggregate) {
      Map<String, Object> o = (Map<String, Object>) per.get(s.text());
      boolean met = o.get("value_seconds") instanceof Number n && n.doubleValue() <= s.limitSeconds();
      o.put("met", met);
      all = (all == null || all) && met;
    }
    if (attainmentAtLeast != null) {
      Map<String, Object> o = (Map<String, Object>) per.get(attainmentText);
      boolean met = o.get("value") instanceof Number n && n.doubleValue() >= attainmentAtLeast;
      o.put("met", met);
      all = (all == null || all) && met;
    }
    if (rejectedFractionAllowed != null) {
      Map<String, Object> o = (Map<String, Object>) per.get(rejectedText);
      boolean met = o.get("value") instanceof Number n && n.doubleValue() <= rejectedFractionAllowed;
      o.put("met", met);
      all = (all == null || all) && met;
    }
    slo.put("met", all);
  }

  /**
   * Returns the results of a serving run with each entry's {@code slo} object ({@link #evaluate})
   * added after its other fields; {@code results} are the runs in the entries' order.
   */
  public kvsim.report.ServingResults withSlo(kvsim.report.ServingResults folder, List<ServingRunner.SystemResult> results) {
    if (folder.entries().size() != results.size()) {
      throw new IllegalArgumentException(folder.entries().size() + " entries for " + results.size() + " runs");
    }
    List<Map<String, Object>> systems = new ArrayList<>();
    for (int i = 0; i < results.size(); i++) {
      Map<String, Object> entry = folder.entries().get(i).toMap();
      entry.put("slo", evaluate(results.get(i).metrics(), entry));
      systems.add(entry);
    }
    return kvsim.report.ServingResults.of(folder.config(), folder.grid(), systems, folder.seriesColumns(), folder.series(), folder.quantileColumns(),
        folder.quantiles());
  }

  private static Map<String, Object> value(double value) {
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("value", value);
    return o;
  }
}

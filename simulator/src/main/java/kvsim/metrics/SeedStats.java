package kvsim.metrics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One system's (or grid cell's) results over several workload seeds, merged into one entry of
 * {@code summary.json}: every numeric field holds its median over the seeds and {@code intervals}
 * gives, per field path ({@code ttft_seconds.p50}), the median with its order-statistic interval
 * ({@link Interval}, Note [The seed interval]). The rules are results/SCHEMA.md's ("Seeds").
 *
 * <p>Note [Medians in integer fields]: a field that every seed wrote as an integer (a count such as
 * {@code preemptions}) stays an integer, so every reader of single runs reads the merged entry: it
 * holds the median rounded half up (the mean of the two middle values of an even count can end in
 * .5); {@code intervals} holds the exact median.
 */
public final class SeedStats {
  private SeedStats() {}

  /**
   * Returns the numeric fields of an entry, nested objects flattened with dots ({@code
   * kv_breakdown.idle.mean}), in the entry's order: each a number, or null where undefined. Lists and
   * the top-level fields in {@code skip} (what the entry is, not what it measured) are left out.
   */
  public static Map<String, Number> leaves(Map<String, Object> entry, Set<String> skip) {
    Map<String, Number> out = new LinkedHashMap<>();
    flatten("", entry, skip, out);
    return out;
  }

  @SuppressWarnings("unchecked")
  private static void flatten(String prefix, Map<String, Object> m, Set<String> skip, Map<String, Number> out) {
    for (Map.Entry<String, Object> e : m.entrySet()) {
      if (prefix.isEmpty() && skip.contains(e.getKey())) {
        continue;
      }
      String path = prefix + e.getKey();
      Object v = e.getValue();
      if (v instanceof Map<?, ?> sub) {
        flatten(path + ".", (Map<String, Object>) sub, skip, out);
      } else if (v instanceof Number n) {
        out.put(path, n);
      } else if (v == null) {
        out.put(path, null);
      }
    }
  }

  /**
   * Returns the merged entry of one system's per-seed entries (same order as the seeds): a copy of
   * the first seed's entry with each numeric field's median in place (Note [Medians in integer
   * fields]) and {@code intervals} appended, one object per field that some seed defined. A field
   * that no seed defined stays null.
   *
   * @param perSeed the entry of each seed, each with the same fields
   * @param skip top-level fields that name the entry rather than measure it ({@code system}, {@code parts})
   */
  public static Map<String, Object> merge(List<Map<String, Object>> perSeed, Set<String> skip) {
    Map<String, Object> merged = deepCopy(perSeed.get(0));
    List<Map<String, Number>> leaves = perSeed.stream().map(m -> leaves(m, skip)).toList();
    Map<String, Interval> found = intervalsOf(leaves);
    Map<String, Object> medians = new LinkedHashMap<>();
    Map<String, Object> intervals = new LinkedHashMap<>();
    for (Map.Entry<String, Interval> e : found.entrySet()) {
      Interval in = e.getValue();
      boolean integral = leaves.stream().map(l -> l.get(e.getKey())).allMatch(v -> v == null || v instanceof Integer || v instanceof Long);
      medians.put(e.getKey(), integral ? (Object) Math.round(in.median()) : (Object) in.median());
      intervals.put(e.getKey(), in.toMap());
    }
    putAll("", merged, skip, medians);
    merged.put("intervals", intervals);
    return merged;
  }

  /** Returns, per numeric field path that some seed defined, its median and interval over the seeds that defined it. */
  public static Map<String, Interval> intervals(List<Map<String, Object>> perSeed, Set<String> skip) {
    return intervalsOf(perSeed.stream().map(m -> leaves(m, skip)).toList());
  }

  /** As {@link #intervals}, from each seed's {@link #leaves}. */
  private static Map<String, Interval> intervalsOf(List<Map<String, Number>> leaves) {
    Set<String> paths = new LinkedHashSet<>();
    leaves.forEach(l -> paths.addAll(l.keySet()));
    Map<String, Interval> out = new LinkedHashMap<>();
    for (String path : paths) {
      List<Double> defined = new ArrayList<>();
      for (Map<String, Number> l : leaves) {
        Number v = l.get(path);
        if (v != null && Double.isFinite(v.doubleValue())) {
          defined.add(v.doubleValue());
        }
      }
      if (!defined.isEmpty()) {
        out.put(path, Interval.of(defined.stream().mapToDouble(Double::doubleValue).toArray()));
      }
    }
    return out;
  }

  /**
   * Puts each median in place: walks {@code m} as {@link #flatten} does, so that a field is found by
   * the same path even where a key holds a dot (an SLO target such as {@code ttft.p90<=2s}).
   * (A field the first seed left null gets the median of the seeds that defined it.)
   */
  @SuppressWarnings("unchecked")
  private static void putAll(String prefix, Map<String, Object> m, Set<String> skip, Map<String, Object> medians) {
    for (Map.Entry<String, Object> e : m.entrySet()) {
      if (prefix.isEmpty() && skip.contains(e.getKey())) {
        continue;
      }
      String path = prefix + e.getKey();
      if (e.getValue() instanceof Map<?, ?> sub) {
        putAll(path + ".", (Map<String, Object>) sub, skip, medians);
      } else if (medians.containsKey(path)) {
        e.setValue(medians.get(path));
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> deepCopy(Map<String, Object> m) {
    Map<String, Object> out = new LinkedHashMap<>();
    m.forEach((k, v) -> out.put(k, v instanceof Map<?, ?> sub ? deepCopy((Map<String, Object>) sub) : v));
    return out;
  }
}

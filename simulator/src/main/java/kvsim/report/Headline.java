package kvsim.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import kvsim.core.Bytes;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.SeedSweep;

/**
 * The one-sentence answer at the top of a report, computed from the results it shows (never
 * written in advance): which allocator has the lowest peak external fragmentation and the fewest
 * refusals, which serving system sustains the most throughput, which the highest rate within the
 * targets, and for a sweep the best cell per metric. Also the subject of a report's titles: the
 * workload, model and device, as far as a folder's configuration echo names them.
 *
 * <p>Note [Ties in a headline]: names within a relative 1e-9 of the best share it and are all
 * named ("slab, paged and vattention: 0"), since the sentence would otherwise pick one of equals
 * by its place in the table.
 */
final class Headline {
  private static final double TIE = 1e-9;

  private Headline() {}

  /** Returns "workload W, model M, device D" from a configuration echo, naming only what it holds; null where it holds none. */
  @SuppressWarnings("unchecked")
  static String subject(Map<String, Object> config) {
    List<String> parts = new ArrayList<>();
    Object w = config.get("workload");
    if (w instanceof Map<?, ?> m && m.get("spec") != null) {
      String spec = String.valueOf(m.get("spec"));
      if (m.get("params") instanceof Map<?, ?> params && !params.isEmpty() && !spec.contains(":")) {
        List<String> kv = new ArrayList<>();
        ((Map<String, Object>) params).forEach((k, v) -> kv.add(k + "=" + v));
        spec += ":" + String.join(",", kv);
      }
      parts.add("workload " + spec);
    } else if (w instanceof String s) {
      parts.add("workload " + s);
    }
    for (String key : List.of("model", "device")) {
      Object v = config.get(key);
      if (v instanceof Map<?, ?> m && m.get("name") != null) {
        parts.add(key + " " + m.get("name"));
      } else if (v instanceof String s) {
        parts.add(key + " " + s);
      }
    }
    return parts.isEmpty() ? null : String.join(", ", parts);
  }

  /** One candidate's value. */
  private record Value(String name, double value) {}

  /** Returns the names sharing the best (lowest, or highest with {@code highest}) defined value, joined: "a", "a and b", "a, b and c". */
  private static List<Value> best(List<Value> values, boolean highest) {
    List<Value> out = new ArrayList<>();
    double best = Double.NaN;
    for (Value v : values) {
      if (Double.isNaN(v.value())) {
        continue;
      }
      if (Double.isNaN(best) || (highest ? v.value() > best : v.value() < best)) {
        best = v.value();
      }
    }
    for (Value v : values) {
      if (!Double.isNaN(v.value()) && Math.abs(v.value() - best) <= TIE * Math.max(1, Math.abs(best))) {
        out.add(v);
      }
    }
    return out;
  }

  /** Returns "a", "a and b", "a, b and c". */
  static String names(List<String> names) {
    if (names.size() <= 1) {
      return String.join("", names);
    }
    return String.join(", ", names.subList(0, names.size() - 1)) + " and " + names.get(names.size() - 1);
  }

  private static String who(List<Value> best) {
    return group(best) + (best.size() > 1 ? " share" : " has");
  }

  /** Returns the names of tied values: all named up to three, else the first two "and N others". */
  private static String group(List<Value> best) {
    List<String> n = best.stream().map(Value::name).toList();
    return n.size() <= 3 ? names(n) : n.get(0) + ", " + n.get(1) + " and " + (n.size() - 2) + " others";
  }

  /** Returns the headline of allocator runs: the lowest peak external fragmentation, and the fewest refusals or the least memory reserved at the peak. */
  static String allocators(List<AllocatorResult> results) {
    if (results.isEmpty()) {
      return "No allocator results.";
    }
    List<Value> frag = new ArrayList<>();
    List<Value> ooms = new ArrayList<>();
    List<Value> reserved = new ArrayList<>();
    for (AllocatorResult r : results) {
      Double p = r.summaries().get("external_fragmentation").peak();
      frag.add(new Value(r.allocator(), p == null ? Double.NaN : p));
      ooms.add(new Value(r.allocator(), r.counters().get("oom_count")));
      Double res = r.summaries().get("reserved_bytes").peak();
      reserved.add(new Value(r.allocator(), res == null ? Double.NaN : res));
    }
    StringBuilder sb = new StringBuilder();
    List<Value> f = best(frag, false);
    if (f.isEmpty()) {
      sb.append("No allocator has a defined external fragmentation");
    } else {
      sb.append(who(f)).append(" the lowest peak external fragmentation (").append(ratio(f.get(0).value())).append(')');
    }
    List<Value> o = best(ooms, false);
    boolean anyOom = ooms.stream().anyMatch(v -> v.value() > 0);
    if (anyOom && results.size() > 1) {
      sb.append(", ").append(who(o)).append(" the fewest refusals (").append((long) o.get(0).value()).append(" out-of-memory)");
    } else {
      List<Value> r = best(reserved, false);
      if (!r.isEmpty() && results.size() > 1) {
        sb.append(", and ").append(r.size() == results.size() ? "all reserve the same" : group(r) + (r.size() > 1 ? " reserve" : " reserves"))
            .append(r.size() == results.size() ? " at the peak (" : " the least memory at the peak (").append(Bytes.format((long) r.get(0).value()))
            .append(')');
      }
      if (!anyOom) {
        sb.append("; no allocator refused a request");
      }
    }
    return sb.append('.').toString();
  }

  /** Returns the headline of a seed sweep: the lowest median peak external fragmentation and the fewest median refusals over the seeds. */
  static String seedSweep(SweepResults s) {
    List<Value> frag = new ArrayList<>();
    List<Value> ooms = new ArrayList<>();
    for (SweepResults.Entry e : s.entries()) {
      SeedSweep.Stats f = e.sweep().get("external_fragmentation.peak");
      frag.add(new Value(e.allocator(), f == null ? Double.NaN : f.median()));
      SeedSweep.Stats o = e.sweep().get("oom_count");
      ooms.add(new Value(e.allocator(), o == null ? Double.NaN : o.median()));
    }
    StringBuilder sb = new StringBuilder("Over " + s.seeds().size() + " seeds, ");
    List<Value> f = best(frag, false);
    if (f.isEmpty()) {
      sb.append("no allocator has a defined external fragmentation");
    } else {
      sb.append(who(f)).append(" the lowest median peak external fragmentation (").append(ratio(f.get(0).value())).append(')');
    }
    List<Value> o = best(ooms, false);
    if (!o.isEmpty() && s.entries().size() > 1) {
      sb.append(", and ").append(who(o)).append(" the fewest refusals (median ").append(num(o.get(0).value())).append(')');
    }
    return sb.append('.').toString();
  }

  /** Returns the headline of serving runs: the most throughput, and the lowest median TTFT where another system has it. */
  static String serving(ServingResults r) {
    List<Value> tput = new ArrayList<>();
    List<Value> ttft = new ArrayList<>();
    for (ServingResults.Entry e : r.entries()) {
      Double t = e.number("throughput_tokens_per_second");
      tput.add(new Value(e.label(), t == null ? Double.NaN : t));
      Double l = e.latency("ttft_seconds", "p50");
      ttft.add(new Value(e.label(), l == null ? Double.NaN : l));
    }
    List<Value> t = best(tput, true);
    if (t.isEmpty()) {
      return "No system finished a request.";
    }
    StringBuilder sb = new StringBuilder(group(t))
        .append(t.size() > 1 ? " sustain" : " sustains").append(" the most throughput (").append(num(t.get(0).value())).append(" tokens/s)");
    List<Value> l = best(ttft, false);
    if (!l.isEmpty() && r.entries().size() > 1) {
      boolean same = l.stream().map(Value::name).toList().equals(t.stream().map(Value::name).toList());
      sb.append(same ? " and " : ", and ").append(same ? (t.size() > 1 ? "have" : "has") : who(l)).append(" the lowest median TTFT (")
          .append(num(l.get(0).value())).append(" s)");
    }
    List<Value> worst = best(tput, false);
    if (r.entries().size() > 2 && !worst.isEmpty()) {
      sb.append("; ").append(group(worst)).append(" the least (").append(num(worst.get(0).value()))
          .append(" tokens/s)");
    }
    return sb.append('.').toString();
  }

  /** Returns the headline of a capacity search: the highest rate meeting every target, and who meets them at no rate probed. */
  static String capacity(CapacityResults c) {
    List<Value> rates = new ArrayList<>();
    List<String> none = new ArrayList<>();
    for (CapacityResults.SystemEntry s : c.systems()) {
      if (s.anyMet()) {
        rates.add(new Value(s.label(), s.maxRateRps()));
      } else {
        none.add(s.label());
      }
    }
    StringBuilder sb = new StringBuilder();
    List<Value> b = best(rates, true);
    if (b.isEmpty()) {
      sb.append("No system meets every target (").append(String.join(", ", c.targets())).append(") at any rate probed");
    } else {
      sb.append(group(b)).append(b.size() > 1 ? " sustain" : " sustains").append(" the highest rate meeting every target (")
          .append(CapacityResults.rate(b.get(0).value())).append(" req/s");
      boolean upper = c.systems().stream().anyMatch(s -> s.label().equals(b.get(0).name()) && s.atUpperBound());
      sb.append(upper ? ", the highest rate allowed" : "").append(')');
      List<String> rest = new ArrayList<>();
      for (Value v : rates) {
        if (!b.contains(v)) {
          rest.add(v.name() + " " + CapacityResults.rate(v.value()));
        }
      }
      if (!rest.isEmpty()) {
        sb.append(", then ").append(String.join(", ", rest));
      }
      if (!none.isEmpty()) {
        sb.append("; ").append(names(none)).append(none.size() > 1 ? " meet" : " meets").append(" them at no rate probed");
      }
    }
    return sb.append('.').toString();
  }

  /** Whether a lower value of a sweep table's metric is better (fragmentation, bytes, refusals, latencies), else higher (throughput, finished, goodput). */
  static Boolean lowerIsBetter(String column) {
    String c = column.toLowerCase(Locale.ROOT);
    if (c.contains("throughput") || c.contains("goodput") || c.contains("finished") || c.contains("attainment") || c.contains("hit_rate")
        || c.contains("max_rate")) {
      return false;
    }
    if (c.contains("fragmentation") || c.contains("oom") || c.contains("reserved") || c.contains("seconds") || c.contains("rejected")
        || c.contains("preemption") || c.contains("waste") || c.contains("nanos") || c.contains("aborted")) {
      return true;
    }
    return null;
  }

  /** Returns the headline of a sweep's table: the best cell of each metric whose direction is known, at most {@code max} of them. */
  static String sweepTable(SweepTableResults t, List<String> metrics, Function<SweepTableResults.Row, String> cellName, int max) {
    List<String> parts = new ArrayList<>();
    for (String m : metrics) {
      Boolean lower = lowerIsBetter(m);
      if (lower == null || parts.size() >= max) {
        continue;
      }
      List<Value> vs = new ArrayList<>();
      for (SweepTableResults.Row r : t.rows()) {
        Double v = r.number(m);
        vs.add(new Value(cellName.apply(r), v == null ? Double.NaN : v));
      }
      List<Value> b = best(vs, !lower);
      if (b.isEmpty()) {
        continue;
      }
      String at = b.size() > 3 ? b.size() + " cells tie" : names(b.stream().map(Value::name).toList());
      parts.add((lower ? "lowest " : "highest ") + metricName(m) + " " + humanise(m, b.get(0).value()) + " (" + at + ")");
    }
    if (parts.isEmpty()) {
      return "The sweep's " + t.rows().size() + " cells; no metric with a known better direction to rank them by.";
    }
    return "Best of " + t.rows().size() + " cells: " + String.join("; ", parts) + ".";
  }

  /** Returns a metric's name in sentences: {@code external_fragmentation.peak} as "peak external fragmentation". */
  static String metricName(String m) {
    switch (m) {
      case "oom_count":
        return "refusals (out-of-memory)";
      case "fragmentation_oom_count":
        return "refusals for external fragmentation";
      default:
        break;
    }
    String[] p = m.split("\\.");
    String base = p[0].replace("_bytes", "").replace('_', ' ');
    return p.length > 1 ? p[1] + " " + base : base;
  }

  /** Returns a value humanised by its metric's unit: bytes as GiB/MiB, fractions to four places, else four significant digits. */
  static String humanise(String metric, double v) {
    if (Double.isNaN(v)) {
      return "-";
    }
    if (metric.contains("_bytes")) {
      return Bytes.format((long) v);
    }
    if (metric.contains("fragmentation") && !metric.contains("oom")) {
      return ratio(v);
    }
    return num(v);
  }

  static String ratio(double v) {
    return String.format(Locale.ROOT, "%.4f", v).replaceAll("\\.?0+$", "");
  }

  static String num(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return String.format(Locale.ROOT, "%,d", (long) v);
    }
    if (Math.abs(v) >= 100) {
      return String.format(Locale.ROOT, "%,.0f", v);
    }
    return String.format(Locale.ROOT, "%.3g", v);
  }
}

package kvsim.metrics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.statistics.descriptive.Quantile;

/**
 * Distribution of headline metrics over many seeds of one workload: median, 10th and 90th
 * percentiles (linear interpolation, Hyndman-Fan method 7, as numpy's default) and mean. Seeds for
 * which a metric is undefined (e.g. nothing was ever free) are left out of that metric and counted.
 */
public final class SeedSweep {
  /** The metrics a sweep reports, as {@link AllocatorResult#headline} names. */
  public static final List<String> HEADLINES =
      List.of(
          "external_fragmentation.peak",
          "external_fragmentation.mean",
          "internal_fragmentation.mean",
          "allocated_bytes.peak",
          "reserved_bytes.peak",
          "oom_count",
          "fragmentation_oom_count");

  private final Map<String, List<Double>> values = new LinkedHashMap<>();
  private final List<Row> perSeed = new ArrayList<>();
  private int runs;

  public SeedSweep() {
    for (String h : HEADLINES) {
      values.put(h, new ArrayList<>());
    }
  }

  /** Adds one seed's result; seeds are reported in the order added. */
  public void add(long seed, AllocatorResult r) {
    runs++;
    Map<String, Double> headlines = new LinkedHashMap<>();
    for (String h : HEADLINES) {
      Double v = r.headline(h);
      headlines.put(h, v);
      if (v != null) {
        values.get(h).add(v);
      }
    }
    perSeed.add(new Row(seed, java.util.Collections.unmodifiableMap(headlines)));
  }

  /**
   * One seed's headline metrics.
   *
   * @param seed the generator seed
   * @param headlines per {@link #HEADLINES} name, its value (null where undefined)
   */
  public record Row(long seed, Map<String, Double> headlines) {}

  /** Returns each seed's headline values, in the order added. */
  public List<Row> perSeed() {
    return java.util.Collections.unmodifiableList(perSeed);
  }

  /**
   * One metric's distribution over seeds.
   *
   * @param median the 50th percentile
   * @param p10 the 10th percentile
   * @param p90 the 90th percentile
   * @param mean the arithmetic mean
   * @param defined how many seeds defined the metric
   */
  public record Stats(double median, double p10, double p90, double mean, int defined) {}

  /** Returns the runs added. */
  public int runs() {
    return runs;
  }

  /** Returns the statistics of every headline metric (null where no seed defined it). */
  public Map<String, Stats> stats() {
    Quantile q = Quantile.withDefaults().with(Quantile.EstimationMethod.HF7);
    Map<String, Stats> out = new LinkedHashMap<>();
    for (Map.Entry<String, List<Double>> e : values.entrySet()) {
      double[] v = e.getValue().stream().mapToDouble(Double::doubleValue).toArray();
      if (v.length == 0) {
        out.put(e.getKey(), null);
        continue;
      }
      double[] p = q.evaluate(v, 0.5, 0.1, 0.9);
      double mean = 0;
      for (double x : v) {
        mean += x;
      }
      out.put(e.getKey(), new Stats(p[0], p[1], p[2], mean / v.length, v.length));
    }
    return out;
  }
}

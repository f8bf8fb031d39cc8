package kvsim.report;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.metrics.SeedSweep;

/**
 * The {@code summary.json} of a seed sweep: the first seed's configuration echo, the seeds as given,
 * and per allocator the headline metrics' distribution ({@code sweep}) and each seed's values
 * ({@code per_seed}).
 */
public final class SweepSummary {
  private SweepSummary() {}

  /** Builds the summary tree. */
  public static Map<String, Object> of(Map<String, Object> config, long[] seeds, Map<String, SeedSweep> sweeps) {
    Map<String, Object> summary = new LinkedHashMap<>(config);
    summary.put("seeds", Arrays.stream(seeds).boxed().toList());
    List<Object> allocators = new ArrayList<>();
    for (Map.Entry<String, SeedSweep> e : sweeps.entrySet()) {
      Map<String, Object> a = new LinkedHashMap<>();
      a.put("allocator", e.getKey());
      a.put("sweep", e.getValue().stats());
      a.put("per_seed", e.getValue().perSeed());
      allocators.add(a);
    }
    summary.put("allocators", allocators);
    return summary;
  }
}

package kvsim.run;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongFunction;
import kvsim.metrics.SeedStats;
import kvsim.report.ServingResults;
import kvsim.serving.ServingMetrics;

/**
 * A serving run over several workload seeds ({@code kvsim serving --seeds A..B}): every cell (system,
 * or system × grid setting) runs once per seed of the generator, all runs on all cores, and each
 * cell's results over the seeds merge into one entry of medians with intervals ({@link SeedStats},
 * Note [The seed interval] on {@code metrics.Interval}). The sampled series and latency quantiles of
 * the folder are the first seed's run (a median of time series is no run at all).
 */
public final class SeedRuns {
  /** Fields of an entry that name it rather than measure it: no median, no interval. */
  public static final Set<String> NOT_MEASURED = Set.of("system", "cell", "kv_memory_bytes", "parts", "intervals");

  private SeedRuns() {}

  /**
   * What a serving run over seeds gives.
   *
   * @param seeds the seeds, in the order given
   * @param results the folder's contents: the merged entries, the first seed's series
   * @param timings each run's wall-clock figures, labelled {@code LABEL seed=N}
   * @param perSeed the rows of {@code per_seed.csv}
   */
  public record Serving(List<Long> seeds, ServingResults results, List<ServingResults.Timing> timings, PerSeed perSeed) {}

  /**
   * Every numeric field of every entry for every seed: the file {@code per_seed.csv}.
   *
   * @param columns the field paths ({@code ttft_seconds.p50}), in the first entry's order
   * @param rows one per entry and seed: its label, seed and values (null where undefined)
   */
  public record PerSeed(List<String> columns, List<Row> rows) {
    /** The file's name in the result folder. */
    public static final String FILE = "per_seed.csv";

    /** Returns the file: {@code system} (the entry's label), {@code seed}, then the columns; decimals {@code %.6f}, empty where undefined. */
    public String csv() {
      StringBuilder sb = new StringBuilder("system,seed");
      columns.forEach(c -> sb.append(',').append(c));
      sb.append('\n');
      for (Row r : rows) {
        String label = r.label();
        sb.append(label.contains(",") || label.contains("\"") ? "\"" + label.replace("\"", "\"\"") + "\"" : label).append(',').append(r.seed());
        for (Number v : r.values()) {
          sb.append(',');
          if (v instanceof Integer || v instanceof Long) {
            sb.append(v);
          } else if (v != null && Double.isFinite(v.doubleValue())) {
            sb.append(String.format(java.util.Locale.ROOT, "%.6f", v.doubleValue()));
          }
        }
        sb.append('\n');
      }
      return sb.toString();
    }
  }

  /** One row of {@code per_seed.csv}. */
  public record Row(String label, long seed, List<Number> values) {}

  /** Returns each seed's cells, in the seeds' order: the grid of {@code request(seed)}. */
  private static List<List<ServingGrid.Cell>> cellsPerSeed(LongFunction<kvsim.run.ServingSpec.Request> request, List<ServingGrid.Axis> axes, long[] seeds) {
    List<List<ServingGrid.Cell>> out = new ArrayList<>();
    for (long seed : seeds) {
      out.add(ServingGrid.cells(request.apply(seed), axes));
    }
    return out;
  }

  /**
   * Runs the cells of {@code request(seed)} for every seed and merges them per cell.
   *
   * @param request the request of one seed (the workload with {@code seed=N})
   * @param workload the workload as given, without a seed: the echo's {@code workload}
   * @param axes the grid's axes; empty without {@code --set}
   * @param seeds the seeds, at least one
   * @param slo the SLO targets each seed's run is judged by ({@code --slo}), or null; the merged
   *     entry's verdicts are those of its medians ({@link SloTargets#judgeMedians})
   */
  public static Serving serving(
      LongFunction<kvsim.run.ServingSpec.Request> request, String workload, List<ServingGrid.Axis> axes, long[] seeds, ServingRunner runner,
      ServingRunner.Progress progress, SloTargets slo) throws IOException {
    List<List<ServingGrid.Cell>> cellsPerSeed = cellsPerSeed(request, axes, seeds);
    List<ServingGrid.Cell> all = cellsPerSeed.stream().flatMap(List::stream).toList();
    List<ServingRunner.SystemResult> results = runner.runCells(all, progress);
    int perSeed = cellsPerSeed.get(0).size();
    List<ServingResults> folders = new ArrayList<>();
    List<ServingResults.Timing> timings = new ArrayList<>();
    for (int s = 0; s < seeds.length; s++) {
      List<ServingRunner.SystemResult> mine = results.subList(s * perSeed, (s + 1) * perSeed);
      ServingResults folder = ServingRunner.results(cellsPerSeed.get(s), axes, mine);
      if (slo != null) {
        folder = slo.withSlo(folder, mine);
      }
      folders.add(folder);
      for (ServingResults.Timing t : ServingRunner.timings(cellsPerSeed.get(s), axes, mine)) {
        timings.add(new ServingResults.Timing(t.system() + " seed=" + seeds[s], t.iterations(), t.wallNanos()));
      }
    }
    List<Map<String, Object>> merged = new ArrayList<>();
    List<Row> rows = new ArrayList<>();
    List<String> columns = null;
    for (int i = 0; i < perSeed; i++) {
      List<Map<String, Object>> entries = new ArrayList<>();
      for (ServingResults f : folders) {
        entries.add(f.systems().get(i));
      }
      Map<String, Object> entry = SeedStats.merge(entries, NOT_MEASURED);
      if (slo != null) {
        slo.judgeMedians(entry);
      }
      merged.add(entry);
      for (int s = 0; s < seeds.length; s++) {
        Map<String, Number> leaves = SeedStats.leaves(entries.get(s), NOT_MEASURED);
        if (columns == null) {
          columns = List.copyOf(leaves.keySet());
        }
        List<Number> values = new ArrayList<>();
        for (String c : columns) {
          values.add(leaves.get(c));
        }
        rows.add(new Row(ServingResults.label(entries.get(s)), seeds[s], values));
      }
    }
    ServingResults first = folders.get(0);
    Map<String, Object> config = withSeeds(first.config(), workload, seeds);
    ServingResults out = ServingResults.of(config, first.grid(), merged, ServingMetrics.SERIES_COLUMNS, first.series(), ServingMetrics.QUANTILE_COLUMNS,
        first.quantiles());
    List<Long> seedList = new ArrayList<>();
    for (long s : seeds) {
      seedList.add(s);
    }
    return new Serving(List.copyOf(seedList), out, timings, new PerSeed(columns == null ? List.of() : columns, rows));
  }

  /**
   * What a capacity search over seeds gives.
   *
   * @param results the folder's contents: per cell, the entry of its median seed (Note [The median
   *     seed of a capacity search]), the echo with {@code seeds}
   * @param found per cell, the median seed's answer, in the cells' order (for the printed table)
   * @param cells the first seed's cells (their settings and labels are every seed's)
   * @param intervals per cell's label, per answer field ({@code max_rate_rps}), its interval object
   * @param perSeed the rows of {@code per_seed.csv}
   */
  public record Capacity(
      kvsim.report.CapacityResults results, List<CapacitySearch.Capacity> found, List<ServingGrid.Cell> cells,
      Map<String, Map<String, Object>> intervals, PerSeed perSeed) {}

  /**
   * Searches the cells of {@code request(seed)} for every seed, all searches on all cores, and keeps
   * per cell the median seed's search with every answer field's interval over the seeds.
   *
   * <p>Note [The median seed of a capacity search]: a search's answer is a probed rate with its
   * probe (requests, finished, rejected …, drawn in the chart). So that the folder's answer stays
   * one consistent search, each cell's entry is that of its median seed by {@code max_rate_rps}
   * (for an even number of seeds the lower of the two middle ones; ties broken by the seeds'
   * order); {@code intervals} gives the exact median and its interval of every answer field.
   */
  public static Capacity capacity(
      LongFunction<kvsim.run.ServingSpec.Request> request, String workload, List<ServingGrid.Axis> axes, long[] seeds, CapacitySearch.Targets targets,
      List<String> targetTexts, double lowRate, double highRate, int steps, CapacitySearch.Progress progress) throws IOException {
    List<List<ServingGrid.Cell>> cellsPerSeed = cellsPerSeed(request, axes, seeds);
    List<ServingGrid.Cell> all = cellsPerSeed.stream().flatMap(List::stream).toList();
    List<CapacitySearch.Capacity> found = CapacitySearch.searchCells(all, targets, lowRate, highRate, steps, progress);
    int perSeed = cellsPerSeed.get(0).size();
    List<kvsim.report.CapacityResults> folders = new ArrayList<>();
    for (int s = 0; s < seeds.length; s++) {
      folders.add(CapacitySearch.results(cellsPerSeed.get(s), axes, targets, targetTexts, lowRate, highRate, steps,
          found.subList(s * perSeed, (s + 1) * perSeed)));
    }
    List<kvsim.report.CapacityResults.SystemEntry> entries = new ArrayList<>();
    List<CapacitySearch.Capacity> chosen = new ArrayList<>();
    Map<String, Map<String, Object>> intervals = new LinkedHashMap<>();
    List<Row> rows = new ArrayList<>();
    List<String> columns = null;
    for (int i = 0; i < perSeed; i++) {
      List<Map<String, Object>> answers = new ArrayList<>();
      Integer[] order = new Integer[seeds.length];
      for (int s = 0; s < seeds.length; s++) {
        answers.add(kvsim.report.ResultsWriter.capacityAnswer(folders.get(s).systems().get(i)));
        order[s] = s;
      }
      final int cell = i;
      java.util.Arrays.sort(order, java.util.Comparator.comparingDouble(s -> folders.get(s).systems().get(cell).maxRateRps()));
      int median = order[(seeds.length - 1) / 2];
      kvsim.report.CapacityResults.SystemEntry e = folders.get(median).systems().get(i);
      entries.add(e);
      chosen.add(found.get(median * perSeed + i));
      Map<String, Object> in = new LinkedHashMap<>();
      SeedStats.intervals(answers, Set.of()).forEach((k, v) -> in.put(k, v.toMap()));
      intervals.put(e.label(), in);
      for (int s = 0; s < seeds.length; s++) {
        Map<String, Number> leaves = SeedStats.leaves(answers.get(s), Set.of());
        if (columns == null) {
          columns = List.copyOf(leaves.keySet());
        }
        List<Number> values = new ArrayList<>();
        for (String c : columns) {
          values.add(leaves.get(c));
        }
        rows.add(new Row(e.label(), seeds[s], values));
      }
    }
    kvsim.report.CapacityResults first = folders.get(0);
    kvsim.report.CapacityResults out = new kvsim.report.CapacityResults(withSeeds(first.config(), workload, seeds), first.targets(), entries);
    return new Capacity(out, chosen, cellsPerSeed.get(0), intervals, new PerSeed(columns == null ? List.of() : columns, rows));
  }

  /** Returns the echo with {@code workload} as given (no seed) and {@code seeds} after it. */
  public static Map<String, Object> withSeeds(Map<String, Object> config, String workload, long[] seeds) {
    Map<String, Object> out = new LinkedHashMap<>();
    List<Long> list = new ArrayList<>();
    for (long s : seeds) {
      list.add(s);
    }
    config.forEach((k, v) -> {
      if (k.equals("workload")) {
        out.put(k, workload);
        out.put("seeds", list);
      } else {
        out.put(k, v);
      }
    });
    out.putIfAbsent("seeds", list);
    return out;
  }
}

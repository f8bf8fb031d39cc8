package kvsim.report;

import java.util.List;
import java.util.Map;

/**
 * What a serving run's result folder holds: {@code run.ServingRunner#results} builds it from a
 * run, {@link ResultsWriter#writeServing(ResultFolder.Target, ServingResults, List)} writes it and
 * {@link ServingResultsReader} gives it back: the configuration echo, the grid of a what-if run, one
 * entry per system or grid cell in the order written, and the files of sampled rows. The entries
 * stay the plain objects of {@code summary.json} (their fields depend on the system: {@code
 * results/SCHEMA.md}); {@link Entry} gives typed access to the figures tables and charts use.
 *
 * @param config the configuration echo: every top-level field of {@code summary.json} but the
 *     format marker, {@code grid} and {@code systems}, in file order
 * @param grid each key of a what-if grid with its values, as given; empty without a grid
 * @param systems one object per system (per cell with a grid), as written (results/SCHEMA.md)
 * @param seriesColumns the columns of {@code timeseries.csv} after {@code system}
 * @param series per entry's {@link #label}, in order, its sampled rows
 * @param quantileColumns the columns of {@code latency-quantiles.csv} after {@code system} (empty
 *     without that file)
 * @param quantiles per entry's {@link #label}, the rows of {@code latency-quantiles.csv} (empty for
 *     folders written before that file existed)
 */
public record ServingResults(
    Map<String, Object> config,
    Map<String, List<String>> grid,
    List<Map<String, Object>> systems,
    List<String> seriesColumns,
    Map<String, List<double[]>> series,
    List<String> quantileColumns,
    Map<String, List<double[]>> quantiles) {

  /**
   * One system's results, or one grid cell's.
   *
   * @param system the system's name
   * @param cell the value of each grid key in this cell; empty without a grid
   * @param summary the whole entry as written, as plain values
   */
  public record Entry(String system, Map<String, String> cell, Map<String, Object> summary) {
    /** Returns the entry's name in the folder's CSV files, tables and charts ({@link ServingResults#label}). */
    public String label() {
      return ServingResults.label(summary);
    }

    /** Returns an integer field of the entry ({@code requests_finished}, {@code preemptions}), or throws naming it where absent. */
    public long count(String field) {
      if (summary.get(field) instanceof Number n) {
        return n.longValue();
      }
      throw new IllegalStateException("no integer " + field + " in the entry of " + label());
    }

    /** Returns a numeric field of the entry ({@code throughput_tokens_per_second}), null where undefined or absent. */
    public Double number(String field) {
      return summary.get(field) instanceof Number n ? n.doubleValue() : null;
    }

    /**
     * Returns one statistic of a latency, in seconds ({@code latency("ttft_seconds", "p50")}),
     * null where undefined (no request defined it).
     */
    public Double latency(String metric, String statistic) {
      return summary.get(metric) instanceof Map<?, ?> m && m.get(statistic) instanceof Number n ? n.doubleValue() : null;
    }

    /** Returns the time-weighted mean share of the KV region in {@code category} ({@code token_states}), null where undefined. */
    public Double kvMeanShare(String category) {
      double v = ServingCharts.meanShare(summary, category);
      return Double.isNaN(v) ? null : v;
    }
  }

  /**
   * One entry's wall-clock figures, the entry of {@code timing.json} (not deterministic, so kept
   * out of {@code summary.json}).
   *
   * @param system the entry's label ({@link #label})
   * @param iterations the iterations run
   * @param wallNanos the wall time of the run
   */
  public record Timing(String system, long iterations, long wallNanos) {
    /** Returns the entry of {@code timing.json}: {@code system}, {@code iterations}, {@code wall_seconds}, {@code iterations_per_second}. */
    public Map<String, Object> toMap() {
      Map<String, Object> m = new java.util.LinkedHashMap<>();
      m.put("system", system);
      m.put("iterations", iterations);
      m.put("wall_seconds", wallNanos / 1e9);
      m.put("iterations_per_second", wallNanos > 0 ? Math.round(iterations * 1e9 / wallNanos) : 0);
      return m;
    }
  }

  /** Returns the entries with their system and cell, in the order written. */
  @SuppressWarnings("unchecked")
  public List<Entry> entries() {
    List<Entry> out = new java.util.ArrayList<>();
    for (Map<String, Object> s : systems) {
      Map<String, String> cell = new java.util.LinkedHashMap<>();
      if (s.get("cell") instanceof Map<?, ?> c) {
        ((Map<String, Object>) c).forEach((k, v) -> cell.put(k, String.valueOf(v)));
      }
      out.add(new Entry((String) s.get("system"), java.util.Collections.unmodifiableMap(cell), s));
    }
    return out;
  }

  /**
   * Returns the name of an entry in the folder's CSV files and in charts: its system, followed by
   * {@code KEY=VALUE} of each grid setting of its cell ({@code vllm block-size=32}).
   */
  @SuppressWarnings("unchecked")
  public static String label(Map<String, Object> entry) {
    StringBuilder sb = new StringBuilder((String) entry.get("system"));
    if (entry.get("cell") instanceof Map<?, ?> cell) {
      ((Map<String, Object>) cell).forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
    }
    return sb.toString();
  }

  /** Returns the index of a latency quantile column, or throws naming the file. */
  int quantileColumn(String name) {
    int i = quantileColumns.indexOf(name);
    if (i < 0) {
      throw new kvsim.core.InputException(ResultsReader.QUANTILES_FILE + ": header: no column " + name);
    }
    return i;
  }
}

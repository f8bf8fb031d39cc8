package kvsim.report;

import java.util.List;
import java.util.Map;

/**
 * What a serving run's {@code summary.json} holds ({@code kvsim-serving-summary}), as {@link
 * ResultsReader#readServing} gives it back: the configuration echo, the grid of a what-if run, and
 * one entry per system or grid cell, in the order written.
 *
 * @param config the configuration echo (everything but {@code format}, {@code version}, {@code
 *     grid} and {@code systems})
 * @param grid each key of a what-if grid with its values, as given; empty without a grid
 * @param entries one entry per system (per cell with a grid)
 */
public record ServingResults(Map<String, Object> config, Map<String, List<String>> grid, List<Entry> entries) {

  /**
   * One system's results, or one grid cell's.
   *
   * @param system the system's name
   * @param cell the value of each grid key in this cell; empty without a grid
   * @param summary the whole entry as written ({@code system}, {@code cell}, {@code parts}, the
   *     counters, latencies and KV breakdown of {@code results/SCHEMA.md}), as plain values
   */
  public record Entry(String system, Map<String, String> cell, Map<String, Object> summary) {}
}

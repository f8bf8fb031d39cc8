package kvsim.report;

import java.util.List;
import java.util.Map;

/**
 * What a serving run's result folder holds, as {@link ResultsReader#readServing} gives it back.
 *
 * @param config the configuration echo: every top-level field of {@code summary.json} but the
 *     format marker and {@code systems}, in file order
 * @param systems one object per system, as written (results/SCHEMA.md)
 * @param seriesColumns the columns of {@code timeseries.csv} after {@code system}
 * @param series per system, in order, its sampled rows
 * @param quantileColumns the columns of {@code latency-quantiles.csv} after {@code system} (empty
 *     without that file)
 * @param quantiles per system, the rows of {@code latency-quantiles.csv} (empty for folders written
 *     before that file existed)
 */
public record ServingResults(
    Map<String, Object> config,
    List<Map<String, Object>> systems,
    List<String> seriesColumns,
    Map<String, List<double[]>> series,
    List<String> quantileColumns,
    Map<String, List<double[]>> quantiles) {
  /** Returns the index of a latency quantile column, or throws naming the file. */
  int quantileColumn(String name) {
    int i = quantileColumns.indexOf(name);
    if (i < 0) {
      throw new kvsim.core.InputException(ResultsReader.QUANTILES_FILE + ": header: no column " + name);
    }
    return i;
  }
}

package kvsim.report;

import java.util.List;
import java.util.Map;

/**
 * What a reproduction's {@code reproduction.json} holds: {@code run.Reproductions} (or the torch
 * layer) builds it, {@link ReproductionFolder#write} writes it with the folder's README and runs, and
 * {@link ReproductionFolder#read} gives it back equal (results/SCHEMA.md).
 *
 * @param name the reproduction's name ({@code vllm-fig2})
 * @param title its one-line title
 * @param columns the comparison table's columns
 * @param rows its rows, each one cell per column
 * @param numbers kvsim's numbers, as plain values whose shape each reproduction chooses (what
 *     {@code kvsim reproduce --json} prints)
 */
public record ReproductionResults(String name, String title, List<String> columns, List<List<String>> rows, Map<String, Object> numbers) {
  /** Copies the lists; throws where a row's width is not the columns'. */
  public ReproductionResults {
    columns = List.copyOf(columns);
    rows = rows.stream().map(List::copyOf).toList();
    for (List<String> row : rows) {
      if (row.size() != columns.size()) {
        throw new IllegalArgumentException("a row of " + row.size() + " cells for " + columns.size() + " columns: " + row);
      }
    }
  }
}

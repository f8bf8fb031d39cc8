package kvsim.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a sweep's table ({@code kvsim sweep}: {@code sweep.json} and {@code sweep.csv}) holds:
 * {@link SweepTable#results} builds it from the stored cells, {@link SweepTable#write(java.nio.file.Path,
 * SweepTableResults)} writes both files from it and {@link SweepTable#read} gives it back equal. The
 * columns are the grid's parameters then the summary metrics of the cells' runs, so they are named
 * by the grid, not fixed here (results/SCHEMA.md).
 *
 * @param config the sweep's configuration echo ({@code grid}, {@code cells})
 * @param columns every column, in the order of first appearance over the rows
 * @param rows one per cell, in the grid's order
 */
public record SweepTableResults(Map<String, Object> config, List<String> columns, List<Row> rows) {
  /** Copies the lists; throws where a row has a column not listed. */
  public SweepTableResults {
    config = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(config));
    columns = List.copyOf(columns);
    rows = List.copyOf(rows);
    for (Row r : rows) {
      if (!columns.containsAll(r.values().keySet())) {
        throw new IllegalArgumentException("a row with columns not listed: " + r.values().keySet() + " against " + columns);
      }
    }
  }

  /** Returns the table of these rows, its columns in the order of first appearance. */
  public static SweepTableResults of(Map<String, Object> config, List<Row> rows) {
    Set<String> columns = new LinkedHashSet<>();
    rows.forEach(r -> columns.addAll(r.values().keySet()));
    return new SweepTableResults(config, new ArrayList<>(columns), rows);
  }

  /**
   * One cell's row: the value of each column it has, in order, each a string, a number, a boolean
   * or null (a column the cell does not have is absent, an empty field in the CSV).
   *
   * @param values the row's values by column
   */
  public record Row(Map<String, Object> values) {
    /** Keeps the order and refuses values that are not scalars. */
    public Row {
      for (Map.Entry<String, Object> e : values.entrySet()) {
        Object v = e.getValue();
        if (v != null && !(v instanceof String) && !(v instanceof Number) && !(v instanceof Boolean)) {
          throw new IllegalArgumentException("column " + e.getKey() + ": not a string, number or boolean: " + v);
        }
      }
      values = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }

    /** Returns a numeric column, null where the row has none or it is null. */
    public Double number(String column) {
      return values.get(column) instanceof Number n ? n.doubleValue() : null;
    }

    /** Returns a column as the CSV shows it ({@code ""} where absent or null). */
    public String text(String column) {
      Object v = values.get(column);
      return v == null ? "" : String.valueOf(v);
    }
  }
}

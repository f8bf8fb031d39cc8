package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.InputException;

/**
 * Reads a serving run's result folder ({@code summary.json} of format {@code
 * kvsim-serving-summary}, {@code timeseries.csv}, {@code latency-quantiles.csv}) back into {@link
 * ServingResults}; the files are described in {@code results/SCHEMA.md}.
 */
public final class ServingResultsReader {
  private ServingResultsReader() {}

  /**
   * Reads a serving run's result folder: {@code summary.json} (marker checked; the entries as
   * written), {@code timeseries.csv} and, where present, {@code latency-quantiles.csv}, whose rows
   * are keyed by each entry's {@link ServingResults#label}. Checked are the markers, {@code
   * systems}, each entry's {@code system}, and for a what-if grid that every entry has a {@code
   * cell} with one listed value per grid key (and {@code kv_memory_bytes}), no two entries the
   * same cell; without a grid no entry has a {@code cell}.
   */
  @SuppressWarnings("unchecked")
  public static ServingResults read(Path dir) {
    JsonFile.requireFolder(dir);
    JsonFile s = new JsonFile(dir.resolve(ResultsReader.SUMMARY_FILE));
    JsonNode root = s.readObject();
    s.checkFormat(root, ResultsReader.SERVING_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    Map<String, List<String>> grid = new LinkedHashMap<>();
    JsonNode systems = null;
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "systems" -> systems = e.getValue();
        case "grid" -> {
          JsonNode g = s.object(e.getValue(), "grid");
          for (Map.Entry<String, JsonNode> k : g.properties()) {
            List<String> values = new ArrayList<>();
            List<JsonNode> vs = s.array(k.getValue(), "grid." + k.getKey());
            for (int i = 0; i < vs.size(); i++) {
              values.add(s.text(vs.get(i), "grid." + k.getKey() + "[" + i + "]"));
            }
            grid.put(k.getKey(), List.copyOf(values));
          }
        }
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    List<ServingResults.Entry> entries = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    List<JsonNode> nodes = s.array(systems, "systems");
    for (int i = 0; i < nodes.size(); i++) {
      String at = "systems[" + i + "]";
      JsonNode n = s.object(nodes.get(i), at);
      String system = s.text(n.get("system"), at + ".system");
      Map<String, String> cell = new LinkedHashMap<>();
      if (grid.isEmpty()) {
        if (n.has("cell")) {
          throw s.error(at + ".cell", "a cell without a grid");
        }
      } else {
        JsonNode c = s.object(n.get("cell"), at + ".cell");
        s.onlyFields(c, at + ".cell", grid.keySet());
        for (Map.Entry<String, List<String>> k : grid.entrySet()) {
          String v = s.text(c.get(k.getKey()), at + ".cell." + k.getKey());
          if (!k.getValue().contains(v)) {
            throw s.error(at + ".cell." + k.getKey(), "'" + v + "' is not among the grid's values " + k.getValue());
          }
          cell.put(k.getKey(), v);
        }
        s.integer(n.get("kv_memory_bytes"), at + ".kv_memory_bytes", true);
      }
      if (!seen.add(system + " " + cell)) {
        throw s.error(at, "the system " + system + (cell.isEmpty() ? "" : " with " + cell) + " appears twice");
      }
      entries.add(ServingResults.Entry.of((Map<String, Object>) s.plain(n), (field, problem) -> s.error(at + "." + field, problem)));
    }
    List<String> names = entries.stream().map(ServingResults.Entry::label).toList();
    List<String> columns = new ArrayList<>();
    Map<String, List<double[]>> series = readKeyedCsv(dir.resolve(ResultsReader.TIMESERIES_FILE), "system", names, columns);
    Map<String, List<double[]>> quantiles = new LinkedHashMap<>();
    List<String> quantileColumns = new ArrayList<>();
    if (Files.exists(dir.resolve(ResultsReader.QUANTILES_FILE))) {
      quantiles = readKeyedCsv(dir.resolve(ResultsReader.QUANTILES_FILE), "system", names, quantileColumns);
    }
    return new ServingResults(config, grid, entries, List.copyOf(columns), series, List.copyOf(quantileColumns), quantiles);
  }

  /**
   * Reads a long-format CSV: the key column {@code key}, then numeric columns (empty: NaN); the rows
   * of each key together, keys among {@code names}. Fills {@code columns} with the numeric columns'
   * names and returns the rows per key, in the order of {@code names}.
   */
  private static Map<String, List<double[]>> readKeyedCsv(Path file, String key, List<String> names, List<String> columns) {
    String src = file.toString();
    if (!Files.isRegularFile(file)) {
      throw InputException.at(src, 0, null, "missing");
    }
    Map<String, List<double[]>> out = new LinkedHashMap<>();
    for (String n : names) {
      out.put(n, new ArrayList<>());
    }
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String header = in.readLine();
      if (header == null || !header.startsWith(key + ",")) {
        throw InputException.at(src, 1, "header", "expected a header beginning " + key + ",");
      }
      List<String> cols = List.of(header.split(","));
      columns.addAll(cols.subList(1, cols.size()));
      long lineNo = 1;
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        lineNo++;
        String[] f = line.split(",", -1);
        if (f.length != cols.size()) {
          throw InputException.at(src, lineNo, null, "expected " + cols.size() + " comma-separated fields, found " + f.length);
        }
        List<double[]> rows = out.get(f[0]);
        if (rows == null) {
          throw InputException.at(src, lineNo, key, "'" + f[0] + "' is not among " + names);
        }
        double[] row = new double[f.length - 1];
        for (int i = 1; i < f.length; i++) {
          row[i - 1] = RunResultsReader.fraction(src, lineNo, cols.get(i), f[i]);
        }
        rows.add(row);
      }
    } catch (IOException e) {
      throw InputException.at(src, 0, null, "cannot read: " + e.getMessage());
    }
    return out;
  }
}

package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.metrics.SeedSweep;

/**
 * Reads a seed sweep's result folder (its {@code summary.json}, format {@code
 * kvsim-sweep-summary}) back into the {@link SweepResults} that {@link ResultsWriter#writeSweep}
 * took; the schema is documented on {@link ResultsReader} and in {@code results/SCHEMA.md}.
 */
public final class SweepResultsReader {
  private static final List<String> SWEEP_STATS = List.of("median", "p10", "p90", "mean", "defined");

  private SweepResultsReader() {}

  /** Reads a seed sweep's result folder (its {@code summary.json}). */
  public static SweepResults read(Path dir) {
    JsonFile.requireFolder(dir);
    JsonFile s = new JsonFile(dir.resolve(ResultsReader.SUMMARY_FILE));
    JsonNode root = s.readObject();
    s.checkFormat(root, ResultsReader.SWEEP_FORMAT);
    Map<String, Object> config = new LinkedHashMap<>();
    JsonNode seedsNode = null;
    JsonNode allocs = null;
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      switch (e.getKey()) {
        case "format", "version" -> {}
        case "seeds" -> seedsNode = e.getValue();
        case "allocators" -> allocs = e.getValue();
        default -> config.put(e.getKey(), s.plain(e.getValue()));
      }
    }
    List<Long> seeds = new ArrayList<>();
    List<JsonNode> seedNodes = s.array(seedsNode, "seeds");
    for (int i = 0; i < seedNodes.size(); i++) {
      seeds.add(s.integer(seedNodes.get(i), "seeds[" + i + "]", false));
    }
    List<SweepResults.Entry> out = new ArrayList<>();
    Set<String> names = new HashSet<>();
    List<JsonNode> entries = s.array(allocs, "allocators");
    for (int i = 0; i < entries.size(); i++) {
      String at = "allocators[" + i + "]";
      JsonNode a = s.object(entries.get(i), at);
      s.onlyFields(a, at, Set.of("allocator", "sweep", "per_seed"));
      String name = s.name(a.get("allocator"), at + ".allocator", names);
      JsonNode sweep = s.object(a.get("sweep"), at + ".sweep");
      s.onlyFields(sweep, at + ".sweep", Set.copyOf(SeedSweep.HEADLINES));
      Map<String, SeedSweep.Stats> stats = new LinkedHashMap<>();
      for (String h : SeedSweep.HEADLINES) {
        stats.put(h, sweepStats(s, sweep.get(h), at + ".sweep." + h));
      }
      List<SeedSweep.Row> rows = new ArrayList<>();
      List<JsonNode> perSeed = s.array(a.get("per_seed"), at + ".per_seed");
      for (int k = 0; k < perSeed.size(); k++) {
        String rowAt = at + ".per_seed[" + k + "]";
        JsonNode row = s.object(perSeed.get(k), rowAt);
        Set<String> fields = new LinkedHashSet<>(SeedSweep.HEADLINES);
        fields.add("seed");
        s.onlyFields(row, rowAt, fields);
        long seed = s.integer(row.get("seed"), rowAt + ".seed", false);
        Map<String, Double> headlines = new LinkedHashMap<>();
        for (String h : SeedSweep.HEADLINES) {
          headlines.put(h, s.numberOrNull(row.get(h), rowAt + "." + h, false));
        }
        rows.add(new SeedSweep.Row(seed, headlines));
      }
      out.add(new SweepResults.Entry(name, stats, rows));
    }
    return new SweepResults(config, seeds, out);
  }

  /** A sweep's statistics of one headline, or null. */
  static SeedSweep.Stats sweepStats(JsonFile s, JsonNode n, String at) {
    if (n == null) {
      throw s.error(at, "missing");
    }
    if (n.isNull()) {
      return null;
    }
    JsonNode o = s.object(n, at);
    s.onlyFields(o, at, Set.copyOf(SWEEP_STATS));
    double[] v = new double[4];
    for (int i = 0; i < 4; i++) {
      Double d = s.numberOrNull(o.get(SWEEP_STATS.get(i)), at + "." + SWEEP_STATS.get(i), false);
      if (d == null) {
        throw s.error(at + "." + SWEEP_STATS.get(i), "expected a number, found null");
      }
      v[i] = d;
    }
    long defined = s.integer(o.get("defined"), at + ".defined", true);
    if (defined > Integer.MAX_VALUE) {
      throw s.error(at + ".defined", "too large: " + defined);
    }
    return new SeedSweep.Stats(v[0], v[1], v[2], v[3], (int) defined);
  }
}

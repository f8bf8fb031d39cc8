package kvsim.report;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Loads and initialises what writing and reading back a result folder needs (the result files'
 * Jackson mapper and its serialisers and tree nodes) on a background thread while a run's engine
 * works, by writing a small summary tree to bytes and reading it back; the real files then start
 * warm. The chart side has {@link ChartWarmUp}; this is its counterpart for runs without charts
 * (a seed sweep), where the mapper's first use was about 40 ms of a 0.6 s run on the critical path.
 * It writes no file and changes nothing that a result's bytes depend on.
 */
public final class ResultsWarmUp {
  private ResultsWarmUp() {}

  /** Starts the warm-up on a daemon thread, at a low priority, and returns at once. */
  public static void start() {
    Thread t = new Thread(ResultsWarmUp::writeAndRead, "kvsim-results-warm-up");
    t.setDaemon(true);
    t.setPriority(Thread.MIN_PRIORITY);
    t.start();
  }

  /** Writes a summary-shaped tree (text, integers, fractions, lists, nested maps) and parses it. */
  static void writeAndRead() {
    try {
      Map<String, Object> stats = new LinkedHashMap<>();
      stats.put("median", 0.5);
      stats.put("count", 12_345_678_901L);
      Map<String, Object> root = new LinkedHashMap<>();
      root.put("format", "warm-up");
      root.put("seeds", List.of(1L, 2L));
      root.put("allocators", List.of(Map.of("allocator", "warm-up", "stats", stats)));
      ResultsWriter.json().readTree(ResultsWriter.json().writeValueAsBytes(root));
    } catch (IOException | RuntimeException | LinkageError e) {
      // only a head start: the real files report any failure of their own
    }
  }
}

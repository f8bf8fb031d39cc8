package kvsim.cli;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.registry.WorkloadRegistry;
import kvsim.run.ServingGrid;
import kvsim.run.ServingRunner;
import kvsim.workload.RequestGenerator;

/**
 * Serving runs' progress as {@link Progress} lines: the requests finished in every cell (system)
 * together, of the total where the workload's count is known (the {@code requests} generator:
 * its {@code count}); a recorded trace's length is not read ahead, so its lines give the count
 * and the time elapsed (Note [Progress pacing] on {@link Progress}).
 */
final class ServingProgress {
  private ServingProgress() {}

  /** Returns the callback that feeds {@code lines} from runs of {@code cells}, or null when {@code lines} is. */
  static ServingRunner.Progress of(Progress lines, List<ServingGrid.Cell> cells) {
    if (lines == null) {
      return null;
    }
    long perCell = requestCount(cells.get(0).spec().workload());
    long total = perCell > 0 ? perCell * cells.size() : 0;
    Map<String, long[]> running = new HashMap<>();
    long[] earlier = {0};
    return (system, iterations, finished, wallNanos) -> {
      long done;
      synchronized (running) {
        // Note [Runs told apart]: a run is its system on its thread while its iterations grow.
        long[] run = running.computeIfAbsent(system + "\u0000" + Thread.currentThread().getId(), k -> new long[2]);
        if (iterations <= run[0]) {
          earlier[0] += perCell > 0 ? perCell : run[1];
        }
        run[0] = iterations;
        run[1] = finished;
        done = earlier[0];
        for (long[] r : running.values()) {
          done += r[1];
        }
      }
      lines.update(done, total);
    };
  }

  // Note [Runs told apart]: the callback names the system, not the cell, and a thread runs one
  // cell after another; a run reports every ServingEngine.PROGRESS_EVERY iterations, so its
  // iteration counts grow strictly and the next run on that thread starts below the last one
  // reported. Such a run is over: it counts whole (every request of its workload done, rejected
  // ones included) where the count is known, else with its last count of finished requests.

  /**
   * Tells {@code lines} (when not null) that every run of {@code cells} is over: the last line,
   * once a line was printed and the total is known (a run's last requests finish between two
   * callbacks, so the callbacks alone never reach the total).
   */
  static void finish(Progress lines, List<ServingGrid.Cell> cells) {
    long perCell = requestCount(cells.get(0).spec().workload());
    if (lines != null && perCell > 0) {
      lines.update(perCell * cells.size(), perCell * cells.size());
    }
  }

  /** Returns the workload's request count where it is known before the run, else 0. */
  static long requestCount(WorkloadRegistry.RequestWorkload w) {
    if (!"requests".equals(w.generator())) {
      return 0;
    }
    String count = w.params().get("count");
    try {
      return count == null ? RequestGenerator.DEFAULT_COUNT : Long.parseLong(count.trim());
    } catch (NumberFormatException e) {
      return 0; // the generator itself reports a bad count
    }
  }
}

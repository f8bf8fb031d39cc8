package kvsim.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.run.GridSweep;
import picocli.CommandLine.Option;

/**
 * {@code --engine}, {@code --threads} and {@code --master}: where the cells of a grid run, for the
 * commands that run their cells on the sweep engine ({@code sweep}, {@code tune}).
 */
final class EngineOptions {
  @Option(names = "--engine", paramLabel = "NAME", defaultValue = "local", description = "local (this machine's cores) or spark (default: ${DEFAULT-VALUE}).")
  String engine;

  @Option(names = "--threads", paramLabel = "N", description = "Threads of the local engine (default: all cores).")
  Integer threads;

  @Option(names = "--master", paramLabel = "URL", description = "Spark master for --engine spark (default: local[*], or what spark-submit sets).")
  String master;

  /** Returns the engine these options name; a thread count below 1 is an {@link InputException}. */
  GridSweep.Engine engine() {
    int n = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
    if (n < 1) {
      throw new InputException("--threads: must be at least 1, got " + n);
    }
    Map<String, String> engineOptions = new LinkedHashMap<>();
    if (master != null) {
      engineOptions.put("master", master);
    }
    return GridSweep.engine(engine, n, engineOptions);
  }
}

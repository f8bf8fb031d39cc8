package kvsim.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import kvsim.metrics.RunMetrics;
import kvsim.metrics.SeedSweep;

/**
 * Reads a result folder back into the values {@link ResultsWriter} took, so that charts, tables and
 * later reports are drawn from a result folder alone, without re-running ({@code report} never
 * imports {@code engine} or {@code alloc}: {@code simulator/ARCHITECTURE.md}, "Layers"). The schema
 * below is format version 1; {@code results/SCHEMA.md} says the same with examples.
 *
 * <p>This class holds the files' names and format markers, tells a folder's format ({@link
 * #formatOf}) and hands each format to its own reader: {@link RunResultsReader} (a run: {@code
 * kvsim-summary}, {@code timeseries.csv}, {@code timing.json}), {@link SweepResultsReader} ({@code
 * kvsim-sweep-summary}), {@link ServingResultsReader} ({@code kvsim-serving-summary}) and {@link
 * CapacityResultsReader} ({@code kvsim-capacity}), which share {@link JsonFile}'s strict field
 * access. In each, the configuration echo is read as plain values in file order, so a new echo key
 * needs no reader change.
 *
 * <p><b>{@code summary.json} of a run</b>, one JSON object:
 *
 * <ul>
 *   <li>{@code "format": "kvsim-summary"}, {@code "version": 1}: the first two fields, checked first.
 *   <li>The configuration echo, carried as written: {@code kvsim_version}, {@code workload} ({@code
 *       spec}, then the generator's parameters or the trace header's description), {@code device}
 *       ({@code name}, {@code capacity_bytes}), {@code model} ({@code name}, {@code
 *       kv_bytes_per_token}), {@code plan} ({@code weights_bytes}, {@code tested_region_bytes},
 *       {@code activations_bytes}, {@code activations_allocator} when there is an activations
 *       region), {@code check}. Every top-level field but the marker and {@code allocators} is
 *       part of the echo.
 *   <li>{@code allocators}: one object per allocator, in the order run, with exactly these fields:
 *       {@code allocator} (registry name, unique), {@code options} (in force, defaults included),
 *       the counters {@link RunMetrics#COUNTERS} (non-negative integers), {@code
 *       activation_oom_count} (integer), {@code modelled_allocator_nanos} (integer, ns), {@code
 *       metrics} (for each of {@link RunMetrics#GAUGES}, an object {@code peak}, {@code mean},
 *       {@code final}) and, when the model reports any, {@code extra} (name: integer).
 *   <li>Gauge values: byte gauges ({@code *_bytes}) and {@code live_allocations} have integer
 *       {@code peak} and {@code final} and a floating-point time-weighted {@code mean}; the
 *       fragmentation ratios are floating-point throughout. A value is null where the gauge was
 *       never defined (a ratio while nothing was allocated, or free); never NaN.
 * </ul>
 *
 * <p><b>{@code summary.json} of a seed sweep</b> (the only file of its folder): {@code "format":
 * "kvsim-sweep-summary"}, {@code "version": 1}, the configuration echo of the first seed's run,
 * {@code seeds} (integers, as given), and {@code allocators}: objects with exactly {@code
 * allocator}, {@code sweep} (per {@link SeedSweep#HEADLINES} name, {@code median}, {@code p10},
 * {@code p90}, {@code mean} and {@code defined}, the seeds that defined it; null where none did) and
 * {@code per_seed} (one object per seed: {@code seed} and each headline's value, null where
 * undefined; counters appear as floating-point numbers).
 *
 * <p><b>{@code timeseries.csv}</b>: the header {@code allocator,event,t_ns,} then {@link
 * RunMetrics#SAMPLE_COLUMNS} ({@code reserved_bytes}, {@code allocated_bytes}, {@code
 * requested_bytes}, {@code free_bytes}, {@code largest_free_bytes}, {@code internal_fragmentation},
 * {@code external_fragmentation}, {@code oom_count}), then one row per sample,
 * rows of one allocator together and allocators in the order of {@code summary.json}; {@code event}
 * (1-based, increasing within an allocator), {@code t_ns} (simulated ns, non-decreasing), the byte
 * columns and {@code oom_count} (refusals so far) are integers; the two fragmentation columns are
 * written {@code %.6f}, empty where undefined. The file has no marker of its own (it stays plain
 * CSV): its version is that of {@code summary.json} beside it.
 *
 * <p><b>{@code timing.json}</b>: {@code "format": "kvsim-timing"}, {@code "version": 1}, and {@code
 * runs}: objects with exactly {@code allocator}, {@code events} (integer), {@code wall_seconds}
 * (floating point) and {@code events_per_second} (integer, rounded), same allocators and order as
 * {@code summary.json}. Wall-clock figures are not deterministic; the other files are.
 *
 * <p>Note [What round-trips]: the files' bytes. Writing what was read gives byte-identical {@code
 * summary.json}, {@code timeseries.csv} and {@code timing.json} for any folder kvsim wrote. The
 * values read from {@code summary.json} and {@code timing.json} equal the values written (Jackson
 * writes a double as the shortest decimal that reads back as the same double; whole gauges were
 * whole; {@code wall_seconds * 1e9} rounds back to the nanoseconds below 2^51 ns, about 26 days;
 * {@code events_per_second} is derived again). Samples do not: the CSV holds ratios to 6 decimals,
 * so a sample read back is the written text's value, not the in-memory double. That is why {@link
 * ResultsWriter} draws its chart from what this class reads back: the chart a run writes and the
 * chart {@link FragmentationChart#redraw} draws from the folder later are the same.
 *
 * <p>Note [Strict reading]: the format marker is checked before anything else, then every field
 * the schema names, with its type; a field the schema does not name is refused, so a newer format
 * is never half-read. Any problem is an {@link InputException} naming the file, the line (CSV
 * only; JSON syntax errors too) and the field, such as {@code allocators[1].metrics.free_bytes.peak}.
 */
public final class ResultsReader {
  /** The run summary's file name. */
  public static final String SUMMARY_FILE = "summary.json";
  /** The time series' file name. */
  public static final String TIMESERIES_FILE = "timeseries.csv";
  /** The wall-clock figures' file name. */
  public static final String TIMING_FILE = "timing.json";
  /** The {@code format} of a run's {@code summary.json}. */
  public static final String RUN_FORMAT = "kvsim-summary";
  /** The {@code format} of a seed sweep's {@code summary.json}. */
  public static final String SWEEP_FORMAT = "kvsim-sweep-summary";
  /** The {@code format} of {@code timing.json}. */
  public static final String TIMING_FORMAT = "kvsim-timing";
  /** The {@code format} of a serving run's {@code summary.json}. */
  public static final String SERVING_FORMAT = "kvsim-serving-summary";
  /** The {@code format} of a capacity search's {@code summary.json}. */
  public static final String CAPACITY_FORMAT = "kvsim-capacity";
  /** The format version this kvsim reads and writes. */
  public static final int VERSION = 1;

  /** The columns of {@code timeseries.csv}. */
  public static final List<String> TIMESERIES_COLUMNS = timeseriesColumns();
  /** The header line of {@code timeseries.csv}. */
  public static final String TIMESERIES_HEADER = String.join(",", TIMESERIES_COLUMNS);


  private ResultsReader() {}

  private static List<String> timeseriesColumns() {
    List<String> c = new ArrayList<>(List.of("allocator", "event", "t_ns"));
    c.addAll(RunMetrics.SAMPLE_COLUMNS);
    return List.copyOf(c);
  }

  /** Returns whether a time-series column or gauge holds a ratio (written {@code %.6f}, may be undefined). */
  static boolean isFraction(String column) {
    return column.endsWith("fragmentation");
  }

  /**
   * Reads a run's result folder: {@code summary.json}, {@code timeseries.csv} and {@code
   * timing.json} (no timings where a committed folder holds none).
   */
  public static RunResults read(Path dir) {
    return RunResultsReader.read(dir);
  }

  /** Reads a seed sweep's result folder (its {@code summary.json}); see {@link SweepResultsReader}. */
  public static SweepResults readSweep(Path dir) {
    return SweepResultsReader.read(dir);
  }

  /** The name of a serving run's latency quantiles file. */
  public static final String QUANTILES_FILE = "latency-quantiles.csv";

  /**
   * Returns the {@code format} of the {@code summary.json} in {@code dir} (a run, a sweep, a serving
   * run or a capacity search), so that a report knows which reader to use.
   */
  public static String formatOf(Path dir) {
    JsonFile.requireFolder(dir);
    JsonFile s = new JsonFile(dir.resolve(SUMMARY_FILE));
    JsonNode f = s.readFormat();
    if (f == null || !f.isTextual()) {
      throw s.error("format", "missing; not a kvsim result folder of a known format (run again to rewrite it)");
    }
    List<String> known = List.of(RUN_FORMAT, SWEEP_FORMAT, SERVING_FORMAT, CAPACITY_FORMAT);
    if (!known.contains(f.textValue())) {
      throw s.error("format", "expected one of " + known + ", found " + f);
    }
    return f.textValue();
  }

  /** Reads a serving run's result folder; see {@link ServingResultsReader}. */
  public static ServingResults readServing(Path dir) {
    return ServingResultsReader.read(dir);
  }

  /** Reads a capacity search's result folder; see {@link CapacityResultsReader}. */
  public static CapacityResults readCapacity(Path dir) {
    return CapacityResultsReader.read(dir);
  }
}

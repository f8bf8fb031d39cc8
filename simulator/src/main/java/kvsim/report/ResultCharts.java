package kvsim.report;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Draws the chart files (PNG and SVG) of a result folder again from its data files alone, of
 * whichever format the folder is ({@link ResultsReader#formatOf}): a run's fragmentation chart (and
 * memory map where the folder has one), a serving run's four charts, a capacity search's chart, a
 * sweep's chart per headline metric ({@link SweepChart}). The
 * run commands draw their charts from the same files read back (Note [Charts from files] on {@link
 * ResultsWriter}), so a folder's charts redrawn are byte-identical to those it was written with.
 */
public final class ResultCharts {
  private ResultCharts() {}

  /**
   * Reads every folder first (a bad one is an {@code InputException} before anything is written),
   * then draws each folder's charts again, replacing its PNG and SVG files only; returns how many
   * chart files were written.
   */
  public static int redraw(List<Path> dirs) throws IOException {
    for (Path dir : dirs) {
      check(dir);
    }
    int files = 0;
    for (Path dir : dirs) {
      files += redraw(dir);
    }
    return files;
  }

  /** Reads {@code dir} as its format's reader does, throwing for bad input. */
  private static void check(Path dir) {
    if (SweepChart.isSweepFolder(dir)) {
      SweepTable.read(dir);
      return;
    }
    switch (ResultsReader.formatOf(dir)) {
      case ResultsReader.RUN_FORMAT -> {
        ResultsReader.read(dir);
        if (MemoryMapFile.exists(dir)) {
          MemoryMapFile.read(dir);
        }
      }
      case ResultsReader.SWEEP_FORMAT -> ResultsReader.readSweep(dir);
      case ResultsReader.SERVING_FORMAT -> ResultsReader.readServing(dir);
      default -> ResultsReader.readCapacity(dir);
    }
  }

  /** Draws the charts of one folder again; returns how many files were written (a seed sweep has none). */
  private static int redraw(Path dir) throws IOException {
    if (SweepChart.isSweepFolder(dir)) {
      return SweepChart.write(dir, SweepTable.read(dir));
    }
    switch (ResultsReader.formatOf(dir)) {
      case ResultsReader.RUN_FORMAT -> {
        FragmentationChart.redraw(dir);
        if (MemoryMapFile.exists(dir)) {
          MemoryMapChart.write(dir, MemoryMapFile.read(dir), Headline.subject(ResultsReader.read(dir).config()));
          return 4;
        }
        return 2;
      }
      case ResultsReader.SWEEP_FORMAT -> {
        return 0;
      }
      case ResultsReader.SERVING_FORMAT -> {
        ServingResults r = ResultsReader.readServing(dir);
        ServingCharts.redraw(dir);
        return r.quantiles().isEmpty() ? 6 : 8;
      }
      default -> {
        CapacityChart.redraw(dir);
        return 2;
      }
    }
  }
}

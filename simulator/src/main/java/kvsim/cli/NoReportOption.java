package kvsim.cli;

import picocli.CommandLine.Option;

/**
 * The one {@code --no-report} option of every command that writes a result folder, mixed in with
 * {@code @Mixin} so that its name and help text are the same everywhere (Note [Data files only] on
 * {@code report.ResultFolder}).
 */
final class NoReportOption {
  @Option(
      names = "--no-report",
      description = "Write the data files only (summary.json, the CSVs, timing.json), byte for byte as without this option: no chart files and no"
          + " report.html, for scripted use. `kvsim report DIR` draws the report later (--redraw-charts the charts too).")
  boolean noReport;

  /** Returns whether the folder gets its charts and report. */
  boolean report() {
    return !noReport;
  }
}

package kvsim.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.report.HtmlReport;
import kvsim.report.ResultCharts;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim report}: the HTML report of one or more result folders, drawn from their files. */
@Command(
    name = "report",
    mixinStandardHelpOptions = true,
    description = {
      "Write one self-contained HTML report (inline SVG charts, data tables, no network) of result folders of replay, compare, serving, capacity or sweep.",
      "With two or more folders, a comparison of the runs comes first. Every chart is drawn from the folders' data files (summary.json, timeseries.csv, …), not from their PNG/SVG files;",
      "--redraw-charts also writes those chart files again. With one RUN_DIR and no -o, the report goes into RUN_DIR/report.html."
    },
    footer = {"", "Exit status: 0 success, 2 bad input or usage."})
final class ReportCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(arity = "1..*", paramLabel = "RUN_DIR", description = "Result folders written by kvsim.")
  List<Path> dirs;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE",
      description = "The report file; an existing file is replaced only if it is a kvsim report. Default, with one RUN_DIR: RUN_DIR/report.html"
          + " (the folder's own report, drawn again); with several, -o is required.")
  Path output;

  @Option(names = "--label", split = ",", paramLabel = "NAME",
      description = "Names of the folders' runs in the report's tables and legends, one per RUN_DIR in order (default: each folder's name without"
          + " kvsim's timestamp prefix; equal names get (2), (3), ...).")
  List<String> labels;

  @Option(names = "--force", description = "Replace FILE even if it is not a report that kvsim wrote.")
  boolean force;

  @Option(names = "--redraw-charts", description = "Also draw each folder's chart files (PNG and SVG) again from its data files, replacing them"
      + " (byte-identical SVG to those the run wrote; a deleted chart comes back).")
  boolean redrawCharts;

  @Override
  public Integer call() throws Exception {
    Path output = outputOf(this.output, dirs);
    HtmlReport.write(output, dirs, labels, force);
    if (redrawCharts) {
      int files = ResultCharts.redraw(dirs);
      spec.commandLine().getOut().println("charts: " + files + " files redrawn");
    }
    spec.commandLine().getOut().println("report: " + output);
    spec.commandLine().getOut().flush();
    return KvSim.EXIT_OK;
  }

  /**
   * Returns where the report goes: {@code -o FILE}, else into the one folder named (Note [Report
   * beside its runs]).
   */
  static Path outputOf(Path output, List<Path> dirs) {
    if (output != null) {
      return output;
    }
    if (dirs.size() > 1) {
      throw new InputException("report: " + dirs.size() + " result folders and no -o; name the comparison's file with -o FILE"
          + " (only a single folder's report goes into the folder itself, as " + HtmlReport.FILE + ")");
    }
    return dirs.get(0).resolve(HtmlReport.FILE);
  }

  // Note [Report beside its runs]: a report of one folder belongs in that folder, where its runs
  // are (it replaces the report.html that the run wrote there, a kvsim report, by the same rule as
  // any -o FILE: a file of the user's there is refused without --force). A comparison of several
  // folders belongs to none of them, and the current folder is no better a guess, so -o is asked for.
}

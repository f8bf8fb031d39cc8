package kvsim.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
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
      "--redraw-charts also writes those chart files again."
    },
    footer = {"", "Exit status: 0 success, 2 bad input or usage."})
final class ReportCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(arity = "1..*", paramLabel = "RUN_DIR", description = "Result folders written by kvsim.")
  List<Path> dirs;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "The report file (default: ${DEFAULT-VALUE}); an existing file is replaced only if it is a kvsim report.")
  Path output = Path.of("report.html");

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
    HtmlReport.write(output, dirs, labels, force);
    if (redrawCharts) {
      int files = ResultCharts.redraw(dirs);
      spec.commandLine().getOut().println("charts: " + files + " files redrawn");
    }
    spec.commandLine().getOut().println("report: " + output);
    spec.commandLine().getOut().flush();
    return KvSim.EXIT_OK;
  }
}

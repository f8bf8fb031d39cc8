package kvsim.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.report.HtmlReport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim report}: the HTML report of one or more result folders, drawn from their files. */
@Command(
    name = "report",
    mixinStandardHelpOptions = true,
    description = {
      "Write one self-contained HTML report (inline SVG charts, data tables, no network) of result folders of replay, compare, serving or capacity.",
      "With two or more folders, a comparison of the runs comes first."
    },
    footer = {"", "Exit status: 0 success, 2 bad input or usage."})
final class ReportCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(arity = "1..*", paramLabel = "RUN_DIR", description = "Result folders written by kvsim.")
  List<Path> dirs;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "The report file (default: ${DEFAULT-VALUE}); an existing file is replaced only if it is a kvsim report.")
  Path output = Path.of("report.html");

  @Option(names = "--force", description = "Replace FILE even if it is not a report that kvsim wrote.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    HtmlReport.write(output, dirs, force);
    spec.commandLine().getOut().println("report: " + output);
    spec.commandLine().getOut().flush();
    return KvSim.EXIT_OK;
  }
}

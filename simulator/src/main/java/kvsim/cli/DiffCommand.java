package kvsim.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.core.OutputFile;
import kvsim.report.Diff;
import kvsim.report.DiffPage;
import kvsim.report.DiffText;
import kvsim.report.ResultsWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim diff A B}: what changed between two result folders of one kind, and whether it exceeds the seeds' noise (Note [Diff verdicts] on {@code report.Diff}). */
@Command(
    name = "diff",
    mixinStandardHelpOptions = true,
    description = {
      "Compare two result folders of the same kind (serving, capacity, replay/compare, sweep; single runs or runs over --seeds):",
      "per system (matched by label) and metric, A, B, the change and a verdict: \"exceeds noise\" where the two 95 %% intervals over seeds",
      "do not overlap, \"noise\" where they do, \"no noise estimate\" where a side is a single run. Prints the changed metrics (--all: every one)."
    },
    footer = {"", "Exit status: 0 success (whatever changed), 2 bad input or usage."})
final class DiffCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "A", description = "The first result folder (the baseline).")
  Path a;

  @Parameters(index = "1", paramLabel = "B", description = "The second result folder (the change).")
  Path b;

  @Option(names = "--all", description = "List every metric, not only the changed ones.")
  boolean all;

  @Option(names = "--json", description = "Print the diff as JSON (format kvsim-diff) instead of the table.")
  boolean json;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE.html|DIR", description = "Also write the diff as an HTML page: FILE (e.g. diff.html), or diff.html in an existing folder; as for report -o, only a page kvsim diff wrote is replaced without --force.")
  Path output;

  @Option(names = "--force", description = "Replace an -o file that is not a kvsim diff page.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    OutputFile page = null;
    if (output != null) {
      Path file = Files.isDirectory(output) ? output.resolve(DiffPage.FILE) : output;
      page = OutputFile.of(file, DiffPage.OUTPUT_KIND, force, List.of(a.resolve("summary.json"), b.resolve("summary.json"))).check();
    }
    Diff.Result r = Diff.compare(a, b);
    if (json) {
      out.println(ResultsWriter.json().writeValueAsString(r.toMap(all)));
    } else {
      DiffText.print(out, r, all);
    }
    if (page != null) {
      byte[] bytes = DiffPage.html(r, all).getBytes(StandardCharsets.UTF_8);
      page.write(o -> o.write(bytes));
      if (!json) {
        out.println("page: " + page.path());
      }
    }
    out.flush();
    return KvSim.EXIT_OK;
  }
}

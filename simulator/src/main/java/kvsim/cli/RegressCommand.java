package kvsim.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.regress.Regression;
import kvsim.regress.Reports;
import kvsim.regress.Suite;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim regress}: the CI regression gate of allocator policies. */
@Command(
    name = "regress",
    mixinStandardHelpOptions = true,
    description = {
      "Run a regression suite (workloads/regress/*.yaml) and compare every watched metric with the committed baselines",
      "(DIR/<suite>/<scenario>.json): prints baseline, now, delta and verdict per scenario, allocator or system, and metric.",
      "With --update, records the runs as the new baselines instead (and says what changed)."
    },
    footer = {"", "Exit status: 0 no regression (or baselines recorded), 1 a regression (or a failed run), 2 bad input: a bad suite,",
        "a missing, corrupt or incompatible baseline (record it again with --update), or bad options."})
final class RegressCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "SUITE", description = "The suite file, e.g. workloads/regress/default.yaml.")
  Path suite;

  @Option(names = "--baseline", required = true, paramLabel = "DIR", description = "The baselines' root, e.g. results/baselines; the suite's are in DIR/<suite>/.")
  Path baseline;

  @Option(names = "--update", description = "Record this run as the suite's baselines (the folder DIR/<suite>/ is rewritten whole).")
  boolean update;

  @Option(names = "--junit", paramLabel = "FILE", description = "Also write JUnit XML: one test case per scenario, run and metric; a failure per regression.")
  Path junit;

  @Option(names = "--markdown", paramLabel = "FILE", description = "Also write a Markdown summary for a pull-request comment.")
  Path markdown;

  @Option(names = "--set", paramLabel = "ALLOCATOR.KEY=VALUE",
      description = "A policy change applied to every allocator scenario that runs ALLOCATOR, repeatable (as for replay), e.g. first-fit.alignment=2MiB.")
  List<String> settings = new ArrayList<>();

  @Option(names = "--torch-alloc-conf", paramLabel = "CONF",
      description = "Options of pytorch-caching in PYTORCH_CUDA_ALLOC_CONF syntax, for every scenario that runs it (same as --set pytorch-caching.torch-alloc-conf=CONF).")
  String torchAllocConf;

  @Option(names = "--force", description = "Replace a --junit or --markdown file that is not kvsim's report of that kind.")
  boolean force;

  @Option(names = "--scenario", paramLabel = "NAME", description = "Run only this scenario, repeatable (not with --update).")
  List<String> scenarios = new ArrayList<>();

  @CommandLine.Mixin QuietOption quiet;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    List<Path> inputs = List.of(suite);
    OutputFile junitFile = junit == null ? null : OutputFile.of(junit, Reports.JUNIT_KIND, force, inputs).check();
    OutputFile markdownFile = markdown == null ? null : OutputFile.of(markdown, Reports.MARKDOWN_KIND, force, inputs).check();
    if (junit != null && markdown != null && OutputFile.sameFile(junit, markdown)) {
      throw new InputException(junit + ": named by both --junit and --markdown; give each its own file");
    }
    List<String> changes = new ArrayList<>(settings);
    if (torchAllocConf != null) {
      changes.add("pytorch-caching.torch-alloc-conf=" + torchAllocConf);
    }
    Suite s = Suite.read(suite);
    Progress lines = Progress.of(quiet.quiet, err, "regress", "runs");
    Regression.Progress progress = lines == null ? null : lines::update;
    Regression.Outcome o = Regression.run(s, new Regression.Options(baseline, update, changes, scenarios, Runtime.getRuntime().availableProcessors()),
        KvSim.Version.version(), progress);
    if (junitFile != null) {
      Reports.junit(junitFile, o);
    }
    if (markdownFile != null) {
      Reports.markdown(markdownFile, o);
    }
    if (!o.settings().isEmpty()) {
      out.println("policy change: " + String.join(", ", o.settings()));
    }
    Reports.table(out, o);
    if (o.written() != null) {
      out.println();
      for (String note : o.notes()) {
        out.println("baseline " + note);
      }
      out.println("baselines: " + o.written());
    }
    out.flush();
    return o.failed() ? KvSim.EXIT_FAILED : KvSim.EXIT_OK;
  }
}

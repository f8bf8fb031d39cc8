package kvsim.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.report.ReproductionFolder;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.report.TextTable;
import kvsim.run.Reproductions;
import kvsim.torch.SnapshotReproduction;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim reproduce}: runs a published experiment and writes kvsim's numbers beside the published ones. */
@Command(
    name = "reproduce",
    mixinStandardHelpOptions = true,
    description = {
      "Run a published experiment and write results/reproductions/NAME/ (README.md and report.html with kvsim's numbers beside the published ones, and every run's result folder).",
      "NAME: seed000-churn (the slab-allocator article's first-fit churn table), vllm-fig2 (the vLLM paper's KV breakdown), vllm-fig12 (its sustainable request rates),",
      "vllm-fig13 (its mean batch sizes), vllm-table1 (its model setups: OPT-66B on 4xA100, OPT-175B on 8xA100-80GB),",
      "torch-snapshots (every shared PyTorch snapshot: replay agreement on pytorch-caching and fragmentation)."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class ReproduceCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "NAME", description = "seed000-churn, vllm-fig2, vllm-fig12, vllm-fig13, vllm-table1 or torch-snapshots.")
  String name;

  @Option(names = "--json", description = "Print kvsim's numbers as JSON instead of the table.")
  boolean json;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default: results/reproductions/NAME).")
  Path output;

  @Option(
      names = "--snapshots",
      paramLabel = "DIR",
      description = "(torch-snapshots) the folder of PyTorch snapshots (default: shared/data/torch-snapshots beside the repository).")
  Path snapshots;

  @Option(names = "--force", description = "Replace the result folder even if it holds files kvsim did not write.")
  boolean force;

  @CommandLine.Mixin QuietOption quiet;

  private static final String TORCH_SNAPSHOTS = "torch-snapshots";

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = quiet.quiet ? warningsOnly(spec.commandLine().getErr()) : spec.commandLine().getErr();
    if (!Reproductions.NAMES.contains(name) && !name.equals(TORCH_SNAPSHOTS)) {
      throw new InputException(
          "reproduce: unknown reproduction '" + name + "' (known: " + String.join(", ", Reproductions.NAMES) + ", " + TORCH_SNAPSHOTS + ")");
    }
    Path dir = output != null ? output : Path.of("results", "reproductions", name);
    // Reproductions are kept in version control: written as committed folders (Note [Committed folders]).
    ResultFolder.Target target = ResultFolder.Target.at(dir, ResultFolder.Kind.REPRODUCTION, force).asCommitted()
        .reading(snapshots != null ? List.of(snapshots) : List.of()).check();
    long start = System.nanoTime();
    Reproductions.Reproduction r = name.equals(TORCH_SNAPSHOTS) ? torchSnapshots() : Reproductions.run(name, KvSim.Version.version(), err);
    Path written = ReproductionFolder.write(target, r.results(), r.notes(), r.parts());
    if (json) {
      out.println(ResultsWriter.json().writeValueAsString(r.numbers()));
    } else {
      out.println(r.title());
      TextTable.table(out, r.header(), r.rows());
      out.println();
      out.printf(Locale.ROOT, "results: %s (%.1f s)%n", written, (System.nanoTime() - start) / 1e9);
    }
    out.flush();
    return KvSim.EXIT_OK;
  }

  /** Under {@code -q}: the reproductions' progress lines dropped, their warnings passed on. */
  private static PrintWriter warningsOnly(PrintWriter err) {
    return new PrintWriter(java.io.Writer.nullWriter()) {
      @Override
      public void println(String line) {
        if (!line.startsWith("kvsim: ") || line.startsWith("kvsim: warning")) {
          err.println(line);
          err.flush();
        }
      }
    };
  }

  /** The snapshots reproduction: the torch layer runs it; nothing to write but the table. */
  private Reproductions.Reproduction torchSnapshots() throws IOException {
    Path folder = snapshots != null ? snapshots : sharedSnapshots();
    SnapshotReproduction.Outcome o = SnapshotReproduction.run(folder);
    String notes = """
        Every PyTorch memory snapshot in %s, replayed on pytorch-caching from the state at the start
        of its recording (kvsim torch-replay: recorded allocator settings, address tie-break, going on
        after a divergence): the share of allocation addresses and segment decisions that match the
        recording, and whether the final state matches the file's segments and blocks. Snapshots
        without an allocation history are state only. The last three columns are the fragmentation
        picture of the file's final state (kvsim torch-inspect, all devices and pools).""".formatted(folder.getFileName());
    return new Reproductions.Reproduction(TORCH_SNAPSHOTS, "PyTorch memory snapshots: replay agreement and fragmentation", notes, o.header(),
        o.rows(), o.numbers(), List.of(), List.of());
  }

  /** {@code shared/data/torch-snapshots} beside the repository holding the working folder. */
  private static Path sharedSnapshots() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("pom.xml")) && Files.isDirectory(p.resolve("simulator"))) {
        return p.resolveSibling("shared").resolve("data").resolve("torch-snapshots");
      }
    }
    throw new InputException("reproduce torch-snapshots: not inside a kvsim checkout; give the snapshots' folder with --snapshots DIR");
  }
}

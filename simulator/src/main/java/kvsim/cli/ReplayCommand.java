package kvsim.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.config.WorkloadSpec;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code kvsim replay}: runs one workload on one or more allocators and writes a result folder. */
@Command(
    name = "replay",
    mixinStandardHelpOptions = true,
    description = {
      "Replay a workload on allocators and write results (summary.json, timeseries.csv, timing.json, fragmentation.png/.svg).",
      "WORKLOAD is an L1 trace (.jsonl), a workload spec (.yaml), or a generator spec such as churn:ops=1000,seed=2 or kv:preset=azure-conv."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class ReplayCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "WORKLOAD", description = "Trace file, workload spec file, or generator spec.")
  String workload;

  @Mixin RunOptions options;

  @CommandLine.Option(
      names = "--torch-snapshot",
      paramLabel = "FILE",
      description = "Also write the run as a PyTorch memory snapshot pickle that memory_viz opens (with several allocators, one file each: FILE-NAME.pickle).")
  Path torchSnapshot;

  @Mixin OomSnapshotFiles.Flag snapshotAtOom;

  @Override
  public Integer call() throws Exception {
    return run(spec.commandLine().getOut(), spec.commandLine().getErr());
  }

  /** Runs the replay with these options, printing to {@code out} and {@code err}; returns the exit status. */
  private int run(PrintWriter out, PrintWriter err) throws Exception {
    // Note [Output rule] on core.OutputFile: every output is checked before the run; the folder in Runs.execute.
    WorkloadSpec yaml = Runs.yamlOf(workload);
    Path dir = yaml == null ? null : Path.of(workload).toAbsolutePath().getParent();
    Map<String, kvsim.torch.SnapshotRecorder> recorders = TorchSnapshotFiles.recorders(torchSnapshot, options.allocators);
    TorchSnapshotFiles.check(torchSnapshot, recorders.keySet(), options.force, Inputs.of(workload));
    OomSnapshotFiles oom = OomSnapshotFiles.of(snapshotAtOom.value, options.allocators, options.seeds, options.force, Inputs.of(workload));
    OomSnapshotFiles.requireApart(torchSnapshot, oom);
    int status = Runs.execute(out, err, "replay", workload, yaml, dir, options, OomSnapshotFiles.listeners(recorders, oom), oom);
    TorchSnapshotFiles.write(out, torchSnapshot, recorders, options.force, Inputs.of(workload));
    return status;
  }

  /**
   * Runs {@code kvsim replay} for {@code args} ({@code args[0]} is {@code replay}) when they are of
   * the plain forms (Note [Plain arguments]: one WORKLOAD and any of {@code -a}/{@code --allocator
   * NAMES}, {@code --seeds A..B}, {@code -o}/{@code --output DIR}, {@code --device DEVICE}, {@code
   * --model MODEL}, {@code -q}/{@code --quiet}, {@code --force}, {@code --no-report}), printing to
   * {@code stdout} and {@code stderr} (the process's streams, in main), and returns the exit
   * status; returns null, having done nothing, for picocli to run them.
   */
  static Integer runPlain(String[] args, PrintStream stdout, PrintStream stderr) {
    ReplayCommand c = plain(args);
    return c == null ? null : PlainArguments.run(c::run, stdout, stderr);
  }

  /** The command with {@code args} read into it as picocli would, or null where they are not of the plain forms. */
  static ReplayCommand plain(String[] args) {
    PlainArguments p = PlainArguments.read(args,
        List.of(List.of("--allocator", "-a"), List.of("--seeds"), List.of("--output", "-o"), List.of("--device"), List.of("--model")),
        List.of(List.of("--quiet", "-q"), List.of("--force"), List.of("--no-report")));
    List<String> allocators = p == null ? null : p.list("--allocator");
    if (allocators == null) {
      return null;
    }
    ReplayCommand c = new ReplayCommand();
    c.workload = p.positional();
    c.snapshotAtOom = new OomSnapshotFiles.Flag();
    RunOptions o = new RunOptions();
    c.options = o;
    o.allocators.addAll(allocators);
    o.seeds = p.value("--seeds");
    o.device = p.value("--device");
    o.model = p.value("--model");
    o.force = p.flag("--force");
    o.quiet = new QuietOption();
    o.quiet.quiet = p.flag("--quiet");
    o.report = new NoReportOption();
    o.report.noReport = p.flag("--no-report");
    try {
      o.output = p.value("--output") == null ? null : Path.of(p.value("--output"));
    } catch (InvalidPathException e) {
      return null;
    }
    return c;
  }
}

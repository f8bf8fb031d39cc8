package kvsim.cli;

import java.nio.file.Path;
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
    // Note [Output rule] on core.OutputFile: every output is checked before the run; the folder in Runs.execute.
    WorkloadSpec yaml = Runs.yamlOf(workload);
    Path dir = yaml == null ? null : Path.of(workload).toAbsolutePath().getParent();
    Map<String, kvsim.torch.SnapshotRecorder> recorders = TorchSnapshotFiles.recorders(torchSnapshot, options.allocators);
    TorchSnapshotFiles.check(torchSnapshot, recorders.keySet(), options.force, Inputs.of(workload));
    OomSnapshotFiles oom = OomSnapshotFiles.of(snapshotAtOom.value, options.allocators, options.seeds, options.force, Inputs.of(workload));
    OomSnapshotFiles.requireApart(torchSnapshot, oom);
    int status = Runs.execute(spec.commandLine().getOut(), spec.commandLine().getErr(), "replay", workload, yaml, dir, options,
        OomSnapshotFiles.listeners(recorders, oom), oom);
    TorchSnapshotFiles.write(spec.commandLine().getOut(), torchSnapshot, recorders, options.force, Inputs.of(workload));
    return status;
  }
}

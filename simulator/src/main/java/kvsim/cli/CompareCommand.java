package kvsim.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.config.WorkloadSpec;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code kvsim compare}: every registered allocator on one workload, as a table and a chart. */
@Command(
    name = "compare",
    mixinStandardHelpOptions = true,
    description = {
      "Compare every registered allocator (or --allocator ones) on a workload and print a table; results are written as by replay.",
      "With no WORKLOAD, runs the embedded default workload (the churn workload of the slab literature, 5,000 operations, on an 80 GiB H100)."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class CompareCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", arity = "0..1", paramLabel = "WORKLOAD", description = "Trace file, workload spec file, or generator spec.")
  String workload;

  @Mixin RunOptions options;

  @Mixin OomSnapshotFiles.Flag snapshotAtOom;

  @Override
  public Integer call() throws Exception {
    WorkloadSpec yaml;
    Path dir = null;
    String label = workload;
    if (workload == null) {
      yaml = Runs.defaultWorkload();
      label = "default-workload.yaml";
    } else {
      yaml = Runs.yamlOf(workload);
      if (yaml != null) {
        dir = Path.of(workload).toAbsolutePath().getParent();
      }
    }
    if (yaml != null && options.allocators.isEmpty()) {
      // compare runs every registered allocator unless told otherwise, whatever the spec lists
      options.allocators.addAll(kvsim.registry.AllocatorRegistry.names());
    }
    OomSnapshotFiles oom = OomSnapshotFiles.of(snapshotAtOom.value, options.allocators, options.seeds, options.force, workload == null ? List.of() : Inputs.of(workload));
    return Runs.execute(spec.commandLine().getOut(), spec.commandLine().getErr(), "compare", label, yaml, dir, options, OomSnapshotFiles.listeners(Map.of(), oom), oom);
  }
}

package kvsim.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code kvsim gpu}: the GPU-validation commands (README, "GPU validation"); it only lists them. */
@Command(
    name = "gpu",
    mixinStandardHelpOptions = true,
    description = "GPU validation: replay workloads on a real GPU's memory (exit status 3 where there is no GPU).",
    subcommands = {GpuReplayCommand.class})
final class GpuCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}

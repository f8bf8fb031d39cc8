package kvsim.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code kvsim gpu}: the GPU-validation commands (README, "GPU validation"), the only ones that
 * touch a GPU, the NVIDIA driver or JCuda. Without a usable GPU each prints one line saying what
 * is missing and exits 3 ({@link KvSim#EXIT_NO_GPU}).
 */
@Command(
    name = "gpu",
    mixinStandardHelpOptions = true,
    description = "GPU validation on real CUDA memory (exit status 3 where no GPU can be used).",
    subcommands = {
      GpuInfoCommand.class,
      GpuCalibrateCommand.class,
      GpuReplayCommand.class,
    })
final class GpuCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}

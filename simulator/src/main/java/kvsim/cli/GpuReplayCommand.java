package kvsim.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import kvsim.core.InputException;
import kvsim.gpu.device.GpuDevice;
import kvsim.gpu.replay.GpuReplay;
import kvsim.registry.AllocatorRegistry;
import kvsim.report.ResultFolder;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kvsim gpu replay}: replays an L1 workload on a real GPU, raw or in one arena under a
 * model's decisions, and writes a replay result folder with the measured figures beside the
 * modelled ones (README, "gpu replay"; {@link GpuReplay}).
 */
@Command(
    name = "replay",
    mixinStandardHelpOptions = true,
    description = {
      "Replay an L1 workload on the GPU's own memory and write a result folder with measured and modelled figures side by side",
      "(summary.json and charts as `kvsim replay` writes them, plus plan.jsonl, gpu-replay.json, gpu-comparison.csv, gpu-calls.csv, gpu-probes.csv).",
      "--mode raw: one cuMemAlloc per allocation, one cuMemFree per free. --mode arena: one real arena with ALLOCATOR's decisions applied inside it."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage, 3 no GPU here."})
final class GpuReplayCommand implements Callable<Integer> {
  /** Exit status when no GPU can be used. */

  /**
   * Opens the GPU for {@code kvsim gpu replay}: device 0 through CUDA's driver API ({@link
   * kvsim.gpu.device.CudaDevices#open}), or one line saying what is missing. Tests put an in-memory
   * device here.
   */
  static Supplier<GpuDevice> devices = () -> kvsim.gpu.device.CudaDevices.open(0);

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "WORKLOAD", description = "Trace file (.jsonl), workload spec (.yaml), PyTorch snapshot, or generator spec such as churn:ops=100.")
  String workload;

  @Option(names = "--mode", paramLabel = "MODE", description = "raw (default) or arena.")
  String mode = "raw";

  @Option(names = {"-a", "--allocator"}, paramLabel = "NAME", description = "The model: arena mode applies its decisions; both modes simulate it for the modelled columns. Default: first-fit.")
  String allocator = "first-fit";

  @Option(names = "--device", paramLabel = "DEVICE", description = "Device preset or size for the model's region (see `kvsim list`). Default: h100-80.")
  String device;

  @Option(names = "--model", paramLabel = "MODEL", description = "Model preset for KV bytes per token. Default: llama-2-7b.")
  String model;

  @Option(names = "--set", paramLabel = "ALLOCATOR.KEY=VALUE", description = "An allocator option, e.g. vattention.page-size=2MiB (repeatable).")
  List<String> settings = List.of();

  @Option(names = "--torch-alloc-conf", paramLabel = "CONF", description = "Options of pytorch-caching, e.g. 'expandable_segments:True'.")
  String torchAllocConf;

  @Option(names = "--probe-every", paramLabel = "N", description = "Events between fragmentation probes (and one after the last event). Default: ${DEFAULT-VALUE}.")
  long probeEvery = 100;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default: a new folder under results/runs).")
  Path output;

  @Option(names = "--force", description = "Also replace a kvsim result folder that holds files kvsim did not write.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!mode.equals("raw") && !mode.equals("arena")) {
      throw new InputException("--mode " + mode + ": expected raw or arena");
    }
    if (probeEvery <= 0) {
      throw new InputException("--probe-every " + probeEvery + ": expected a positive number of events");
    }
    if (allocator.contains(",")) {
      throw new InputException("--allocator " + allocator + ": gpu replay models one allocator");
    }
    AllocatorRegistry.get(allocator);
    RunRequest request = RunRequest.of(workload).withAllocators(List.of(allocator)).withDevice(device).withModel(model)
        .withSettings(settings).withTorchAllocConf(torchAllocConf);
    kvsim.config.WorkloadSpec yaml = Runs.yamlOf(workload);
    if (yaml != null) {
      request = request.withSpec(yaml, Path.of(workload).toAbsolutePath().getParent());
    }
    RunSpec runSpec = RunSpec.resolve(request, err);
    GpuReplay.Setting setting = new GpuReplay.Setting(runSpec, mode.equals("arena"), probeEvery);
    ResultFolder.Target target = (output != null
        ? ResultFolder.Target.at(output, ResultFolder.Kind.REPLAY, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), "gpu-" + mode, ResultFolder.Kind.REPLAY))
        .reading(Inputs.of(workload, runSpec.workload().file())).check();
    try (GpuDevice gpu = devices.get()) {
      Path dir = GpuReplay.run(setting, gpu, target, KvSim.Version.version());
      out.printf(Locale.ROOT, "gpu replay (%s, %s) of %s on %s%n", setting.mode(), allocator, runSpec.workload().spec(), gpu.info().name());
      out.println("results: " + dir);
      out.flush();
      return KvSim.EXIT_OK;
    }
  }
}

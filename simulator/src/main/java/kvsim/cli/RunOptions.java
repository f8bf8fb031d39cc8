package kvsim.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import kvsim.config.WorkloadSpec;
import kvsim.run.RunRequest;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Options shared by {@code replay} and {@code compare}: what to run the workload on, and where results go. */
final class RunOptions {
  @Option(
      names = {"-a", "--allocator"},
      split = ",",
      paramLabel = "NAME",
      description = "Allocators to run, comma-separated (see `kvsim list`). Default: every registered allocator.")
  List<String> allocators = new ArrayList<>();

  @Option(names = "--device", paramLabel = "DEVICE", description = "Device preset (h100-80, a100-40, ...) or size (80GiB, 40GB). Default: h100-80.")
  String device;

  @Option(names = "--model", paramLabel = "MODEL", description = "Model preset for KV bytes per token (see `kvsim list`). Default: llama-2-7b.")
  String model;

  @Option(names = "--weights", paramLabel = "SIZE", description = "Memory plan: bytes set aside for weights at the bottom of the device. Default: 0.")
  String weights;

  @Option(
      names = "--activations",
      paramLabel = "SIZE",
      description = "Memory plan: an activations region of this size at the top of the device, under first-fit; unsplittable requests go there. Default: none.")
  String activations;

  @Option(names = "--set", paramLabel = "ALLOCATOR.KEY=VALUE", description = "An allocator option, e.g. slab.block-size=4MiB (repeatable).")
  List<String> settings = new ArrayList<>();

  @Option(
      names = "--torch-alloc-conf",
      paramLabel = "CONF",
      description = "Options of pytorch-caching in PYTORCH_CUDA_ALLOC_CONF syntax, e.g. 'expandable_segments:True,max_split_size_mb:512'.")
  String torchAllocConf;

  @Option(
      names = "--calibration",
      paramLabel = "FILE",
      description = "A calibration file (results/calibration/<gpu>.json) whose measured latencies replace the models' defaults.")
  String calibration;

  @Option(names = "--check", description = "Run every allocator's invariant checker after every event (slow).")
  boolean check;

  @Option(names = "--sample-every", paramLabel = "N", description = "Time-series stride in events; 0 (default) keeps at most 2048 evenly spaced rows.")
  long sampleEvery;

  @Option(names = "--seeds", paramLabel = "A..B", description = "Sweep a generator over seeds A..B (or a comma list) and print median, p10 and p90 of the headline metrics.")
  String seeds;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "DIR",
      description = "Result folder: a new or empty folder, or an earlier kvsim result folder, which is replaced. Default: results/runs/<time>-<workload>.")
  Path output;

  @Option(names = "--force", description = "Also replace a kvsim result folder that holds files kvsim did not write (never any other folder).")
  boolean force;

  @Mixin QuietOption quiet;

  @Mixin NoReportOption report;

  /** Returns the run request these options and the workload argument make. */
  RunRequest request(String workload, WorkloadSpec spec, Path specDir) {
    return RunRequest.of(workload).withSpec(spec, specDir).withAllocators(allocators).withDevice(device).withModel(model).withPlan(weights, activations)
        .withSettings(settings).withTorchAllocConf(torchAllocConf).withCalibration(calibration).withCheck(check).withSampleEvery(sampleEvery);
  }
}

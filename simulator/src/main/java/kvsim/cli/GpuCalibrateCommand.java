package kvsim.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.devicemodel.DeviceSpec;
import kvsim.gpu.calibrate.CalibrationFit;
import kvsim.gpu.calibrate.CalibrationWriter;
import kvsim.gpu.calibrate.Measurement;
import kvsim.gpu.calibrate.SampleFile;
import kvsim.gpu.calibrate.Samples;
import kvsim.gpu.device.CudaDevices;
import kvsim.gpu.device.GpuDevice;
import kvsim.run.CalibrationFile;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code kvsim gpu calibrate -o FILE [--quick] [--device PRESET] [--gpu N]} (README, "GPU
 * validation"): measures allocation, page-mapping, copy and GEMM times on a real GPU ({@link
 * Measurement}), fits kvsim's costs on them ({@link CalibrationFit}) and writes a version 3
 * calibration file holding the fitted fields and the raw samples ({@link CalibrationWriter}).
 * {@code --samples FILE} refits the samples a calibration file recorded, without a GPU.
 */
@Command(
    name = "calibrate",
    mixinStandardHelpOptions = true,
    description = "Measure allocation/free latency, page map/unmap, copy bandwidth and GEMM throughput on a real GPU, fit kvsim's costs on them"
        + " and write a calibration file (version 3, with the raw samples) for --calibration (exit status 3 where no GPU can be used).")
final class GpuCalibrateCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(names = {"-o", "--output"}, required = true, paramLabel = "FILE", description = "Write the calibration file here.")
  Path output;

  @Option(names = "--quick", description = "A run of a few seconds: fewer sizes, shapes and repetitions.")
  boolean quick;

  @Option(names = "--device", paramLabel = "PRESET", description = "The device preset whose peaks the efficiencies are shares of (default: the one the GPU's name names).")
  String device;

  @Option(names = "--gpu", paramLabel = "N", defaultValue = "0", description = "The device's ordinal (default: ${DEFAULT-VALUE}).")
  int ordinal;

  @Option(names = "--samples", paramLabel = "FILE", description = "Refit the raw samples of this calibration file instead of measuring (no GPU needed).")
  Path samplesFile;

  @Option(names = "--force", description = "Replace a file at FILE that is not a kvsim calibration file.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    if (ordinal < 0) {
      throw new InputException("--gpu: a device ordinal is 0 or more, got " + ordinal);
    }
    DeviceSpec preset = null;
    if (device != null) {
      preset = DeviceSpec.presets().get(device.trim().toLowerCase(Locale.ROOT));
      if (preset == null) {
        throw new InputException("--device: '" + device + "' is not a device preset (one of " + DeviceSpec.presets().keySet() + ")");
      }
    }
    if (samplesFile != null && quick) {
      throw new InputException("--quick: measures on a GPU; --samples refits recorded samples, so give one or the other");
    }
    OutputFile target = OutputFile.of(output, CalibrateCommand.OUTPUT_KIND, force, samplesFile == null ? List.of() : List.of(samplesFile)).check();
    PrintWriter out = spec.commandLine().getOut();
    Samples samples;
    if (samplesFile != null) {
      samples = SampleFile.read(samplesFile);
    } else {
      try (GpuDevice gpu = CudaDevices.open(ordinal)) {
        out.printf("measuring on %s (driver CUDA %s, bindings CUDA %s)%s%n", gpu.info().name(), gpu.info().driverVersion(), gpu.info().cudaVersion(),
            quick ? ", quick" : "");
        out.flush();
        Measurement m = new Measurement(gpu, b -> CudaDevices.openMatrixMultiplier(b[2], b[1], b[0]), line -> {
          out.println("  " + line);
          out.flush();
        });
        samples = m.run(quick ? Measurement.Plan.quick() : Measurement.Plan.full(), java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString());
      }
    }
    if (preset == null) {
      preset = CalibrationFit.presetFor(samples.device(), samples.totalBytes());
    }
    out.print(kvsim.gpu.calibrate.SummaryTable.of(samples));
    CalibrationFit.Result fit = CalibrationFit.fit(samples, preset);
    out.printf("fitted against %s:%n", preset == null ? "no device preset" : preset.name());
    fit.latency().forEach((k, v) -> out.printf("  latency.%s: %s%n", k, v));
    fit.copies().forEach((k, v) -> out.printf("  copies.%s: %s%n", k, v));
    fit.forward().forEach((k, v) -> out.printf("  forward.%s: %s%n", k, v));
    for (String note : fit.notes()) {
      out.println("  note: " + note);
    }
    String text = CalibrationWriter.write(samples, fit);
    target.write(o -> o.write(text.getBytes(StandardCharsets.UTF_8)));
    CalibrationFile.read(output);
    out.println("wrote " + output);
    out.flush();
    return KvSim.EXIT_OK;
  }
}

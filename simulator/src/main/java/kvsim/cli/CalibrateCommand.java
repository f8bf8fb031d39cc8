package kvsim.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OutputFile;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.EngineTerms;
import kvsim.devicemodel.ProfileFit;
import kvsim.devicemodel.ProfileReader;
import kvsim.devicemodel.ProfileTable;
import kvsim.run.CalibrationFile;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kvsim calibrate PROFILE --model M --device D [-o FILE]} (README, "Cost models"): reads a
 * per-operation GPU profile in Vidur's format ({@link ProfileReader}), fits the device's
 * efficiencies on it ({@link ProfileFit}), prints the predictors' errors on held-out profile rows
 * (Note [Held-out split] on {@link ProfileFit#heldOut}) and writes a version 3 calibration file
 * holding the table, the efficiencies and the two engine terms ({@link EngineTerms}: the cited
 * defaults, which a profile without attention kernels cannot measure).
 */
@Command(
    name = "calibrate",
    mixinStandardHelpOptions = true,
    description = "Fit kvsim's forward-time predictor on a per-operation GPU profile (Vidur's mlp.csv format): print its error on held-out"
        + " profile rows and write a calibration file (version 3) that times serving runs with it (--calibration FILE).")
final class CalibrateCommand implements Callable<Integer> {
  /** A calibration file is recognised by its format field. */
  static final OutputFile.Kind OUTPUT_KIND = OutputFile.Kind.startingWith("kvsim calibration file", "{\"format\": \"kvsim-calibration\"");

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "PROFILE", description = "An mlp.csv in Vidur's format, or a folder holding one.")
  Path profile;

  @Option(names = "--model", required = true, paramLabel = "MODEL", description = "The model preset the profile measured (its shape is checked).")
  String model;

  @Option(names = "--device", required = true, paramLabel = "DEVICE", description = "The device preset it was measured on.")
  String device;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write the calibration file here (default: print the errors only).")
  Path output;

  @Option(names = "--force", description = "Replace a file at FILE that is not a kvsim calibration file.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    ModelPreset m;
    try {
      m = ModelPreset.parse(model);
    } catch (IllegalArgumentException e) {
      throw new InputException("--model: " + e.getMessage());
    }
    DeviceSpec d = DeviceSpec.presets().get(device.trim().toLowerCase(java.util.Locale.ROOT));
    if (d == null) {
      throw new InputException("--device: '" + device + "' is not a device preset (a profile is measured on a GPU: one of " + DeviceSpec.presets().keySet() + ")");
    }
    OutputFile target = output == null ? null : OutputFile.of(output, OUTPUT_KIND, force, List.of(profile)).check();
    Path file = java.nio.file.Files.isDirectory(profile) ? profile.resolve("mlp.csv") : profile;
    ProfileReader.Result read = ProfileReader.read(profile, m, d, "profile " + file.getFileName() + " of " + m.name() + " on " + d.name());
    ProfileTable table = read.table();
    ProfileFit.Efficiencies fit;
    try {
      fit = ProfileFit.efficiencies(table, d);
    } catch (IllegalArgumentException e) {
      throw new InputException(file + ": " + e.getMessage());
    }
    if (fit.compute() > 1 || fit.memory() > 1) {
      throw new InputException(file + ": the profile runs faster than " + d.name() + "'s peak (compute " + fit.compute() + ", bandwidth " + fit.memory()
          + " of peak): is it a profile of another device?");
    }
    PrintWriter out = spec.commandLine().getOut();
    out.printf("profile: %s, %d token counts at tensor-parallel degree 1 (%d to %d); %d repeated rows merged, %d rows at other degrees not used%n",
        file, table.tokens().length, table.tokens()[0], table.tokens()[table.tokens().length - 1], read.repeatedRows(), read.otherDegreeRows());
    out.printf("fitted on %s: compute efficiency %.3f (rows of >= %d tokens), memory efficiency %.3f (rows of <= %d tokens)%n", d.name(), fit.compute(),
        ProfileFit.PREFILL_TOKENS, fit.memory(), ProfileFit.DECODE_FIT_TOKENS);
    out.printf("held-out error (fit on every other token count and the largest, predict the rest; prefill iteration: >= %d tokens,"
        + " decode: <= %d; an iteration is every layer and the embedding, attention excluded):%n", ProfileFit.PREFILL_ITERATION_TOKENS,
        ProfileFit.DECODE_ITERATION_TOKENS);
    out.print(ProfileFit.table(ProfileFit.heldOut(table, m, d)));
    if (target != null) {
      String text = CalibrationFile.write(table, fit, EngineTerms.MEASURED, d.name());
      target.write(o -> o.write(text.getBytes(StandardCharsets.UTF_8)));
      out.println("wrote " + output);
    }
    out.flush();
    return KvSim.EXIT_OK;
  }
}

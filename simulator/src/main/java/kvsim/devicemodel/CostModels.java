package kvsim.devicemodel;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;

/**
 * The forward-time predictors kvsim has and which one times a run (README, "Cost models"): the
 * built-in profile tables (kvsim's reductions of published per-operation profiles, in {@code
 * src/main/resources/kvsim/devicemodel/profiles}), the efficiencies fitted on them per GPU, and the
 * choice of the {@code cost-model} setting (Note [Which predictor times a run]).
 *
 * <p>Note [Which predictor times a run]: {@code cost-model} is one of
 *
 * <ul>
 *   <li>{@code profile}: {@link ProfileForwardTime} over the built-in table of the run's model on
 *       its device; an error where there is none.
 *   <li>{@code measured-roofline}: {@link MeasuredRoofline}, the roofline with the efficiencies
 *       fitted on every built-in table of the device's GPU, plus the two terms of {@link
 *       EngineTerms}; an error where the GPU has no table.
 *   <li>{@code roofline}: the plain {@link Roofline} with its default efficiencies and no terms.
 *   <li>{@code auto} (the default): {@code profile} where the model has a table on the device,
 *       else {@code measured-roofline} where the device's GPU has tables of other models, else
 *       {@code roofline}.
 * </ul>
 *
 * A GPU's tables serve every preset of that GPU: the A100's serve {@code a100-80}, where they were
 * measured, and {@code a100-40}, whose SMs are the same and whose lower HBM bandwidth the roofline
 * takes from the preset (the efficiencies are shares of peak). So the vLLM paper's reproductions,
 * OPT-13B on an A100-40GB, run on A100 efficiencies measured on Llama layers of the same kind
 * (linear layers dominate both) rather than on guessed ones: a measured roofline is the better
 * guess for a model without a profile. The H200 has no table: its HBM differs from the H100's, and
 * kvsim does not carry one GPU's shares to another memory system silently; it keeps the roofline.
 * A calibration file's forward section replaces the choice (it is a measurement of the run's own
 * setup), and giving both is an error rather than a silent precedence.
 */
public final class CostModels {
  /** The choice that picks by what is measured. */
  public static final String AUTO = "auto";
  /** The plain roofline. */
  public static final String ROOFLINE = "roofline";
  /** The roofline with fitted efficiencies and the two terms. */
  public static final String MEASURED_ROOFLINE = "measured-roofline";
  /** The profile predictor. */
  public static final String PROFILE = "profile";
  /** The choices, in the setting's order. */
  public static final List<String> CHOICES = List.of(AUTO, ROOFLINE, MEASURED_ROOFLINE, PROFILE);

  /** The built-in tables' resources, {@code <device>-<model>.csv}. */
  private static final List<String> RESOURCES = List.of("a100-80-llama-2-7b", "a100-80-llama-3-8b", "h100-80-llama-2-7b", "a40-llama-2-7b");

  private CostModels() {}

  private static final class BuiltIn {
    static final List<ProfileTable> TABLES = load();
    static final Map<String, ProfileFit.Efficiencies> FITS = new java.util.concurrent.ConcurrentHashMap<>();

    private static List<ProfileTable> load() {
      List<ProfileTable> out = new ArrayList<>();
      for (String r : RESOURCES) {
        String path = "profiles/" + r + ".csv";
        try (InputStream in = CostModels.class.getResourceAsStream(path)) {
          if (in == null) {
            throw new IllegalStateException("built-in profile table " + path + " is missing from the jar");
          }
          out.add(ProfileTable.readText(in, path));
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
      return List.copyOf(out);
    }
  }

  /** Returns the built-in profile tables. */
  public static List<ProfileTable> builtInTables() {
    return BuiltIn.TABLES;
  }

  /** Returns the GPU a device preset is ({@code a100} for {@code a100-40} and {@code a100-80}), or null for a bare size. */
  public static String gpu(DeviceSpec device) {
    return device.name().equals("custom") ? null : device.name().split("-")[0];
  }

  /** Returns the built-in table of {@code model} on {@code device}, or null. */
  public static ProfileTable table(ModelPreset model, DeviceSpec device) {
    if (!device.equals(DeviceSpec.presets().get(device.name()))) {
      return null;
    }
    for (ProfileTable t : BuiltIn.TABLES) {
      if (t.model().equals(model.name()) && t.device().equals(device.name())) {
        return t;
      }
    }
    return null;
  }

  /** Returns the built-in tables of {@code device}'s GPU (on any of its presets). */
  public static List<ProfileTable> tablesOfGpu(DeviceSpec device) {
    String gpu = gpu(device);
    if (gpu == null || !device.equals(DeviceSpec.presets().get(device.name()))) {
      return List.of();
    }
    return BuiltIn.TABLES.stream().filter(t -> t.device().split("-")[0].equals(gpu)).toList();
  }

  /**
   * Returns the efficiencies fitted on the built-in tables of {@code device}'s GPU (each table on
   * the preset it was measured on: shares of that preset's peaks), or null where it has none.
   */
  public static ProfileFit.Efficiencies gpuEfficiencies(DeviceSpec device) {
    List<ProfileTable> tables = tablesOfGpu(device);
    if (tables.isEmpty()) {
      return null;
    }
    return BuiltIn.FITS.computeIfAbsent(gpu(device), g -> {
      List<Double> compute = new ArrayList<>();
      List<Double> memory = new ArrayList<>();
      for (ProfileTable t : tables) {
        ProfileFit.Efficiencies e = ProfileFit.efficiencies(t, DeviceSpec.presets().get(t.device()));
        compute.add(e.compute());
        memory.add(e.memory());
      }
      return new ProfileFit.Efficiencies(ProfileFit.median(compute), ProfileFit.median(memory));
    });
  }

  /** Returns how a summary names a built-in table. */
  public static String describe(ProfileTable t) {
    return "built-in: " + t.model() + " on " + t.device() + " (" + t.source() + ")";
  }

  /**
   * Returns the predictor that times a run of {@code model} on {@code device} (Note [Which
   * predictor times a run]): {@code choice} (null: auto) among the built-ins, or the forward
   * section of {@code calibration} where it gives one; {@code calibrationName} names the file.
   */
  public static ForwardTimeModel choose(String choice, ModelPreset model, DeviceSpec device, CostCalibration calibration, String calibrationName) {
    String c = choice == null ? AUTO : choice;
    if (!CHOICES.contains(c)) {
      throw new InputException("cost-model: unknown predictor '" + c + "' (known: " + String.join(", ", CHOICES) + ")");
    }
    if (calibration != null && calibration.hasForward()) {
      if (choice != null) {
        throw new InputException("cost-model " + choice + ": the calibration " + calibrationName
            + " gives a forward section, which chooses the predictor; give one of them");
      }
      return calibration.forwardTime(model, device, calibrationName);
    }
    ProfileTable table = table(model, device);
    ProfileFit.Efficiencies gpu = gpuEfficiencies(device);
    switch (c) {
      case ROOFLINE:
        return Roofline.of(model, device);
      case PROFILE:
        if (table == null) {
          throw new InputException("cost-model profile: no built-in profile table of " + model.name() + " on " + device.name() + " (tables: "
              + String.join(", ", BuiltIn.TABLES.stream().map(t -> t.model() + " on " + t.device()).toList()) + "; see kvsim list)");
        }
        return profile(table, model, device);
      case MEASURED_ROOFLINE:
        if (gpu == null) {
          throw new InputException("cost-model measured-roofline: no built-in profile of any model on "
              + (gpu(device) == null ? "a device given by its size" : device.name() + "'s GPU") + " (see kvsim list)");
        }
        return measuredRoofline(model, device, gpu);
      default:
        return table != null ? profile(table, model, device) : gpu != null ? measuredRoofline(model, device, gpu) : Roofline.of(model, device);
    }
  }

  /**
   * Returns the predictor that times a run of {@code model} split over {@code gpus} GPUs of {@code
   * device} by tensor parallelism (Note [Which predictor times a split model]); {@link #choose} for
   * one GPU.
   *
   * <p>Note [Which predictor times a split model]: one GPU's share ({@link ModelPreset#perGpu}) is
   * timed by the roofline or the measured roofline, whose efficiencies are shares of one GPU's peaks
   * and so hold for a share of the model, plus the all-reduces ({@link TensorParallelForwardTime});
   * {@code auto} takes the measured roofline where the GPU has tables. The built-in profile tables
   * were measured at tensor-parallel degree 1 on whole layers, and a calibration file's forward
   * section on one GPU's whole model: neither times a share, so {@code profile} and a calibration's
   * forward section are refused for N &gt; 1 rather than applied to the wrong layer.
   */
  public static ForwardTimeModel choose(String choice, ModelPreset model, DeviceSpec device, int gpus, CostCalibration calibration, String calibrationName) {
    if (gpus == 1) {
      return choose(choice, model, device, calibration, calibrationName);
    }
    String c = choice == null ? AUTO : choice;
    if (!CHOICES.contains(c)) {
      throw new InputException("cost-model: unknown predictor '" + c + "' (known: " + String.join(", ", CHOICES) + ")");
    }
    if (calibration != null && calibration.hasForward()) {
      throw new InputException("calibration " + calibrationName + ": its forward section times one GPU's whole model, not a share of it over "
          + gpus + " GPUs (tensor-parallel); give a calibration without one, or tensor-parallel 1");
    }
    ModelPreset share = model.perGpu(gpus);
    ProfileFit.Efficiencies gpu = gpuEfficiencies(device);
    ForwardTimeModel inner = switch (c) {
      case ROOFLINE -> Roofline.of(share, device);
      case PROFILE -> throw new InputException("cost-model profile: the built-in profile tables were measured at tensor-parallel degree 1; a run on "
          + gpus + " GPUs takes measured-roofline or roofline (README, \"Several GPUs\")");
      case MEASURED_ROOFLINE -> {
        if (gpu == null) {
          throw new InputException("cost-model measured-roofline: no built-in profile of any model on "
              + (gpu(device) == null ? "a device given by its size" : device.name() + "'s GPU") + " (see kvsim list)");
        }
        yield measuredRoofline(share, device, gpu);
      }
      default -> gpu != null ? measuredRoofline(share, device, gpu) : Roofline.of(share, device);
    };
    return new TensorParallelForwardTime(inner, model, device, gpus);
  }

  private static ProfileForwardTime profile(ProfileTable table, ModelPreset model, DeviceSpec device) {
    return new ProfileForwardTime(table, model, device, ProfileFit.efficiencies(table, device), EngineTerms.MEASURED, describe(table));
  }

  private static MeasuredRoofline measuredRoofline(ModelPreset model, DeviceSpec device, ProfileFit.Efficiencies e) {
    String from = String.join(", ", tablesOfGpu(device).stream().map(t -> t.model() + " on " + t.device()).toList());
    return new MeasuredRoofline(new Roofline(model, device, e.compute(), e.memory()), EngineTerms.MEASURED,
        "efficiencies fitted on the built-in " + gpu(device) + " profiles (" + from + ")");
  }

  /** Returns the built-in tables as {@code kvsim list} shows them: per table, its model, device, token counts and source. */
  public static Map<String, String> listing() {
    Map<String, String> m = new LinkedHashMap<>();
    for (ProfileTable t : BuiltIn.TABLES) {
      m.put(t.model() + " on " + t.device(), t.tokens().length + " token counts, " + t.tokens()[0] + " to " + t.tokens()[t.tokens().length - 1] + "; " + t.source());
    }
    return m;
  }
}

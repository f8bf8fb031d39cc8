package kvsim.alloc;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import kvsim.devicemodel.CostCalibration;
import kvsim.devicemodel.DeviceSpec;

/**
 * A calibration file's contents: costs measured on a real GPU that replace kvsim's defaults
 * (README, "Calibration files"). Its latencies replace allocator and driver latencies: per
 * allocator name, the fields of its {@link LatencyModel} that were measured. A model asks its
 * {@link AllocatorContext} for {@link AllocatorContext#latency}, which applies the calibration over
 * the model's defaults, so every model takes a calibration the same way and a calibration file has
 * one place to go. Its device costs ({@link CostCalibration}) replace the efficiencies of a serving
 * run's forward-time and copy-cost models.
 *
 * @param source where the calibration came from (a file name), for the run's summary
 * @param device the GPU it was measured on, as its driver names it
 * @param driver the driver version
 * @param date the date of the measurement (ISO 8601)
 * @param latency per allocator name, measured fields by name ({@link #FIELDS}), in nanoseconds
 * @param cost the forward-time and copy efficiencies measured ({@link CostCalibration#NONE} for none)
 */
public record Calibration(String source, String device, String driver, String date, Map<String, Map<String, Long>> latency, CostCalibration cost) {
  /** No calibration: every model keeps its defaults. */
  public static final Calibration NONE = new Calibration(null, null, null, null, Map.of());

  /** A calibration of latencies only. */
  public Calibration(String source, String device, String driver, String date, Map<String, Map<String, Long>> latency) {
    this(source, device, driver, date, latency, CostCalibration.NONE);
  }

  /** The names of a {@link LatencyModel}'s fields in calibration files. */
  public static final Set<String> FIELDS =
      Set.of("alloc_base_ns", "alloc_per_step_ns", "free_base_ns", "free_per_step_ns", "device_alloc_ns", "device_free_ns");

  public Calibration {
    Map<String, Map<String, Long>> copy = new TreeMap<>();
    latency.forEach((name, fields) -> {
      for (Map.Entry<String, Long> f : fields.entrySet()) {
        if (!FIELDS.contains(f.getKey())) {
          throw new IllegalArgumentException("unknown latency field '" + f.getKey() + "' (known: " + new java.util.TreeSet<>(FIELDS) + ")");
        }
        if (f.getValue() == null || f.getValue() < 0) {
          throw new IllegalArgumentException(f.getKey() + " must be a non-negative number of nanoseconds");
        }
      }
      copy.put(name, Map.copyOf(fields));
    });
    latency = java.util.Collections.unmodifiableMap(copy);
    cost = cost == null ? CostCalibration.NONE : cost;
  }

  /** Returns {@code defaults} with this calibration's measured fields for {@code allocator} in place. */
  public LatencyModel apply(String allocator, LatencyModel defaults) {
    Map<String, Long> m = latency.get(allocator);
    if (m == null) {
      return defaults;
    }
    return new LatencyModel(
        m.getOrDefault("alloc_base_ns", defaults.allocBaseNanos()),
        m.getOrDefault("alloc_per_step_ns", defaults.allocPerStepNanos()),
        m.getOrDefault("free_base_ns", defaults.freeBaseNanos()),
        m.getOrDefault("free_per_step_ns", defaults.freePerStepNanos()),
        m.getOrDefault("device_alloc_ns", defaults.deviceAllocNanos()),
        m.getOrDefault("device_free_ns", defaults.deviceFreeNanos()));
  }

  /**
   * Returns what a result's configuration echoes of this calibration: the file's name, the device,
   * driver and date it names, its latencies, and its forward and copies sections where it gives
   * them (so that the echo of a latency-only file is as it always was).
   */
  public Map<String, Object> echo() {
    Map<String, Object> cal = new java.util.LinkedHashMap<>();
    cal.put("file", source);
    cal.put("device", device);
    cal.put("driver", driver);
    cal.put("date", date);
    cal.put("latency", latency);
    if (!cost.forwardSection().isEmpty() || !cost.forwardSection3().isEmpty()) {
      Map<String, Object> forward = new java.util.LinkedHashMap<>(cost.forwardSection());
      forward.putAll(cost.forwardSection3());
      cal.put("forward", forward);
    }
    if (!cost.copiesSection().isEmpty()) {
      cal.put("copies", cost.copiesSection());
    }
    return cal;
  }

  /** Returns whether this is {@link #NONE}. */
  public boolean isNone() {
    return source == null && latency.isEmpty() && cost.isNone();
  }

  /**
   * Returns a one-line warning when this calibration names the GPU it was measured on and that GPU
   * does not look like {@code device}, or null (Note [A calibration from another device]).
   *
   * <p>Note [A calibration from another device]: a calibration file names its GPU as the driver
   * does ({@code NVIDIA H100 80GB HBM3}); kvsim's devices are presets ({@code h100-80}) or a bare
   * size, which keeps the H100's bandwidths and compute. They match when the preset's GPU
   * ({@code h100}, the part before the dash) appears in the calibration's device name, letters and
   * digits only, case ignored. A mismatch is warned about on stderr rather than refused: matching a
   * driver's name to a preset is a heuristic that should not stop a run, and applying one GPU's
   * measured efficiencies to another is a legitimate what-if; every result that used a calibration
   * echoes its device, so the mismatch stays visible in the result files. A calibration that names
   * no device is not checked.
   */
  public String deviceWarning(DeviceSpec device) {
    if (isNone() || this.device == null || this.device.isBlank()) {
      return null;
    }
    String preset = device.name().equals("custom") ? DeviceSpec.DEFAULT_NAME : device.name();
    String gpu = preset.split("-")[0].toLowerCase(java.util.Locale.ROOT);
    String measured = this.device.toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9]", "");
    if (measured.contains(gpu)) {
      return null;
    }
    return "calibration " + source + " was measured on '" + this.device + "', not on the run's device " + device.name()
        + (device.name().equals("custom") ? " (a size, with " + DeviceSpec.DEFAULT_NAME + "'s bandwidths)" : "") + "; its costs are applied as given";
  }
}

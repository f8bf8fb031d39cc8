package kvsim.alloc;

import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;

/**
 * What a model is built from: the region it manages, the device and model it serves, and its
 * options as kebab-case strings ({@code block-size=4MiB}). Typed getters record which options were
 * read; {@link #requireAllUsed()} then rejects any option the model does not know, so a misspelt
 * option is an error instead of a silent default. {@link #effectiveOptions()} echoes every option
 * with the value in force, defaults included, for the run's summary. {@link #latency} applies a
 * calibration measured on a real GPU over the model's default latencies.
 */
public final class AllocatorContext {
  private final String allocatorName;
  private final Region region;
  private final DeviceSpec device;
  private final ModelPreset model;
  private final OptionMap options;
  private final Calibration calibration;

  /** A context without calibration: the model keeps its default latencies. */
  public AllocatorContext(
      String allocatorName, Region region, DeviceSpec device, ModelPreset model, Map<String, String> options) {
    this(allocatorName, region, device, model, options, Calibration.NONE);
  }

  /** A context whose calibration replaces the model's default latencies where it measured them. */
  public AllocatorContext(
      String allocatorName, Region region, DeviceSpec device, ModelPreset model, Map<String, String> options, Calibration calibration) {
    this.allocatorName = allocatorName;
    this.region = region;
    this.device = device;
    this.model = model;
    this.options = new OptionMap("allocator " + allocatorName, options);
    this.calibration = calibration;
  }

  /**
   * Returns the model's latency model: its {@code defaults} (written once, in the model's class),
   * with the fields a calibration measured for this allocator in their place.
   */
  public LatencyModel latency(LatencyModel defaults) {
    return calibration.apply(allocatorName, defaults);
  }

  public String allocatorName() {
    return allocatorName;
  }

  public Region region() {
    return region;
  }

  public DeviceSpec device() {
    return device;
  }

  public ModelPreset model() {
    return model;
  }

  /** Returns the raw value of an option, or the default, and records it as used. */
  public String string(String key, String defaultValue) {
    return options.string(key, defaultValue);
  }

  /** Returns a positive size option ({@code 2MiB}, {@code 4096}). */
  public long bytes(String key, long defaultValue) {
    return options.bytes(key, defaultValue);
  }

  /** Returns a non-negative integer option. */
  public long integer(String key, long defaultValue) {
    return options.integer(key, defaultValue, 0, Long.MAX_VALUE);
  }

  /** Returns a boolean option ({@code true}/{@code false}). */
  public boolean bool(String key, boolean defaultValue) {
    return options.bool(key, defaultValue);
  }

  /** Returns the option as given by the user, or null, and records it as used. */
  public String optional(String key) {
    return options.optional(key);
  }

  /** Returns an error naming this allocator, the option and the bad value. */
  public InputException bad(String key, String value, String problem) {
    return options.bad(key, value, problem);
  }

  /** Throws if an option was given that the model never read. */
  public void requireAllUsed() {
    options.requireAllUsed();
  }

  /** Returns every option the model read, with the value in force. */
  public Map<String, Object> effectiveOptions() {
    return options.effective();
  }
}

package kvsim.alloc;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.gpu.DeviceSpec;
import kvsim.gpu.Region;

/**
 * What a model is built from: the region it manages, the device and model it serves, and its
 * options as kebab-case strings ({@code block-size=4MiB}). Typed getters record which options were
 * read; {@link #requireAllUsed()} then rejects any option the model does not know, so a misspelt
 * option is an error instead of a silent default. {@link #effectiveOptions()} echoes every option
 * with the value in force, defaults included, for the run's summary.
 */
public final class AllocatorContext {
  private final String allocatorName;
  private final Region region;
  private final DeviceSpec device;
  private final ModelPreset model;
  private final Map<String, String> options;
  private final Set<String> used = new TreeSet<>();
  private final Map<String, String> effective = new LinkedHashMap<>();

  public AllocatorContext(
      String allocatorName, Region region, DeviceSpec device, ModelPreset model, Map<String, String> options) {
    this.allocatorName = allocatorName;
    this.region = region;
    this.device = device;
    this.model = model;
    this.options = Map.copyOf(options);
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
    used.add(key);
    String value = options.getOrDefault(key, defaultValue);
    effective.put(key, value);
    return value;
  }

  /** Returns a size option ({@code 2MiB}, {@code 4096}). */
  public long bytes(String key, long defaultValue) {
    String raw = string(key, null);
    if (raw == null) {
      effective.put(key, Long.toString(defaultValue));
      return defaultValue;
    }
    try {
      long v = Bytes.parse(raw);
      if (v <= 0) {
        throw new IllegalArgumentException("must be positive");
      }
      effective.put(key, Long.toString(v));
      return v;
    } catch (IllegalArgumentException e) {
      throw bad(key, raw, e.getMessage());
    }
  }

  /** Returns a non-negative integer option. */
  public long integer(String key, long defaultValue) {
    String raw = string(key, null);
    if (raw == null) {
      effective.put(key, Long.toString(defaultValue));
      return defaultValue;
    }
    try {
      long v = Long.parseLong(raw.trim());
      if (v < 0) {
        throw bad(key, raw, "must not be negative");
      }
      effective.put(key, Long.toString(v));
      return v;
    } catch (NumberFormatException e) {
      throw bad(key, raw, "not an integer");
    }
  }

  /** Returns a boolean option ({@code true}/{@code false}). */
  public boolean bool(String key, boolean defaultValue) {
    String raw = string(key, null);
    if (raw == null) {
      effective.put(key, Boolean.toString(defaultValue));
      return defaultValue;
    }
    String v = raw.trim().toLowerCase(java.util.Locale.ROOT);
    if (!v.equals("true") && !v.equals("false")) {
      throw bad(key, raw, "expected true or false");
    }
    effective.put(key, v);
    return v.equals("true");
  }

  /** Returns the option as given by the user, or null, and records it as used. */
  public String optional(String key) {
    used.add(key);
    String value = options.get(key);
    if (value != null) {
      effective.put(key, value);
    }
    return value;
  }

  /** Returns an error naming this allocator, the option and the bad value. */
  public InputException bad(String key, String value, String problem) {
    return new InputException(
        "allocator " + allocatorName + ": option " + key + "='" + value + "': " + problem);
  }

  /** Throws if an option was given that the model never read. */
  public void requireAllUsed() {
    for (String key : options.keySet()) {
      if (!used.contains(key)) {
        throw new InputException(
            "allocator " + allocatorName + ": unknown option '" + key + "' (known: " + used + ")");
      }
    }
  }

  /** Returns every option the model read, with the value in force. */
  public Map<String, String> effectiveOptions() {
    return Collections.unmodifiableMap(effective);
  }
}

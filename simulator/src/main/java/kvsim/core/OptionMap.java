package kvsim.core;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Kebab-case options given as strings ({@code block-size=4MiB}, {@code ops=1000}) with typed
 * getters. Every getter records the key as known and the value in force, defaults included, so
 * {@link #requireAllUsed()} can reject a misspelt option instead of silently running with a
 * default, and {@link #effective()} can echo the full configuration into a run's summary.
 */
public final class OptionMap {
  private final String owner;
  private final Map<String, String> given;
  private final Set<String> known = new TreeSet<>();
  private final Map<String, Object> effective = new LinkedHashMap<>();

  /** Options for {@code owner} (named in error messages, e.g. {@code allocator slab}). */
  public OptionMap(String owner, Map<String, String> given) {
    this.owner = owner;
    this.given = Map.copyOf(given);
  }

  /**
   * Parses {@code key=value,key=value} (the part after the colon of {@code churn:ops=1000,seed=2}).
   */
  public static Map<String, String> parsePairs(String owner, String text) {
    Map<String, String> out = new LinkedHashMap<>();
    if (text == null || text.isBlank()) {
      return out;
    }
    for (String pair : text.split(",")) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new InputException(owner + ": expected key=value, got '" + pair + "'");
      }
      String key = pair.substring(0, eq).trim();
      if (out.put(key, pair.substring(eq + 1).trim()) != null) {
        throw new InputException(owner + ": option '" + key + "' given twice");
      }
    }
    return out;
  }

  /** Returns the raw value or the default, and records the key. */
  public String string(String key, String defaultValue) {
    known.add(key);
    String v = given.getOrDefault(key, defaultValue);
    if (v != null) {
      effective.put(key, v);
    }
    return v;
  }

  /** Returns the value as given, or null; records the key. */
  public String optional(String key) {
    return string(key, null);
  }

  /** Returns a positive size ({@code 2MiB}, {@code 4096}). */
  public long bytes(String key, long defaultValue) {
    String raw = raw(key);
    if (raw == null) {
      effective.put(key, defaultValue);
      return defaultValue;
    }
    long v;
    try {
      v = Bytes.parse(raw);
    } catch (IllegalArgumentException e) {
      throw bad(key, raw, e.getMessage());
    }
    if (v <= 0) {
      throw bad(key, raw, "must be positive");
    }
    effective.put(key, v);
    return v;
  }

  /** Returns an integer within [min, max]. */
  public long integer(String key, long defaultValue, long min, long max) {
    String raw = raw(key);
    long v;
    if (raw == null) {
      v = defaultValue;
    } else {
      try {
        v = Long.parseLong(raw.trim());
      } catch (NumberFormatException e) {
        throw bad(key, raw, "not an integer");
      }
      if (v < min || v > max) {
        throw bad(key, raw, "must be between " + min + " and " + max);
      }
    }
    effective.put(key, v);
    return v;
  }

  /** Returns a finite number within [min, max]. */
  public double number(String key, double defaultValue, double min, double max) {
    String raw = raw(key);
    double v;
    if (raw == null) {
      v = defaultValue;
    } else {
      try {
        v = Double.parseDouble(raw.trim());
      } catch (NumberFormatException e) {
        throw bad(key, raw, "not a number");
      }
      if (!(v >= min && v <= max)) {
        throw bad(key, raw, "must be between " + min + " and " + max);
      }
    }
    effective.put(key, v);
    return v;
  }

  /** Returns a boolean ({@code true} / {@code false}). */
  public boolean bool(String key, boolean defaultValue) {
    String raw = raw(key);
    boolean v = defaultValue;
    if (raw != null) {
      String s = raw.trim().toLowerCase(Locale.ROOT);
      if (!s.equals("true") && !s.equals("false")) {
        throw bad(key, raw, "expected true or false");
      }
      v = s.equals("true");
    }
    effective.put(key, v);
    return v;
  }

  private String raw(String key) {
    known.add(key);
    return given.get(key);
  }

  /** Returns an error naming the owner, the option and the bad value. */
  public OptionException bad(String key, String value, String problem) {
    return new OptionException(key, owner + ": option " + key + "='" + value + "': " + problem);
  }

  /** Bad input about one option; {@link #key()} lets a caller say where the option was written. */
  public static final class OptionException extends InputException {
    private static final long serialVersionUID = 1L;
    private final String key;

    public OptionException(String key, String message) {
      super(message);
      this.key = key;
    }

    /** Returns the option's key. */
    public String key() {
      return key;
    }
  }

  /** Throws if an option was given that no getter asked for. */
  public void requireAllUsed() {
    for (String key : given.keySet()) {
      if (!known.contains(key)) {
        throw new OptionException(key, owner + ": unknown option '" + key + "' (known: " + String.join(", ", known) + ")");
      }
    }
  }

  /** Returns every option read, with the value in force, in the order first read. */
  public Map<String, Object> effective() {
    return Collections.unmodifiableMap(effective);
  }
}

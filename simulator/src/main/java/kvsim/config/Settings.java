package kvsim.config;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The settings a user gave for a serving run, each a typed value with its origin ({@link Origin}):
 * what {@code run.ServingSpec} resolves, in place of a long record of fields. A setting absent here
 * takes its default. Immutable: {@link #with} returns a copy, as a grid's cells override the command
 * line's values.
 */
public final class Settings {
  /**
   * One given value.
   *
   * @param setting the setting
   * @param text the value as written
   * @param value the parsed value ({@link Setting#parse})
   * @param origin where it was given
   */
  public record Value(Setting setting, String text, Object value, Origin origin) {
    /** Returns an error at this value's origin. */
    public SettingException error(String problem) {
      return origin.error(problem);
    }
  }

  private static final Settings NONE = new Settings(new LinkedHashMap<>());

  private final Map<Setting, Value> values;

  private Settings(Map<Setting, Value> values) {
    this.values = values;
  }

  /** Returns no settings: every one at its default. */
  public static Settings none() {
    return NONE;
  }

  /**
   * Returns these settings and {@code setting} parsed from {@code text}, given at {@code origin};
   * an InputException at {@code origin} for a bad value, or for a setting already given (by its
   * name or an alias), naming where.
   */
  public Settings and(Setting setting, String text, Origin origin) {
    Value old = values.get(setting);
    if (old != null) {
      throw origin.error(setting.key() + " is given twice (also at " + old.origin() + ")");
    }
    return with(setting, text, origin);
  }

  /** Returns {@link #and} at the origin of its command-line option ({@code --kv-memory}), for values given in code. */
  public Settings and(Setting setting, String text) {
    return and(setting, text, Origin.option("--" + setting.key()));
  }

  /** Returns these settings with {@code setting} parsed from {@code text}, replacing any value it had. */
  public Settings with(Setting setting, String text, Origin origin) {
    Map<Setting, Value> m = new LinkedHashMap<>(values);
    m.put(setting, new Value(setting, text, setting.parse(text, origin), origin));
    return new Settings(m);
  }

  /** Returns these settings without {@code setting}. */
  public Settings without(Setting setting) {
    if (!values.containsKey(setting)) {
      return this;
    }
    Map<Setting, Value> m = new LinkedHashMap<>(values);
    m.remove(setting);
    return new Settings(m);
  }

  /** Returns the given value of {@code setting}, or null when it takes its default. */
  public Value value(Setting setting) {
    return values.get(setting);
  }

  /** Returns whether {@code setting} was given. */
  public boolean has(Setting setting) {
    return values.containsKey(setting);
  }

  /** Returns the parsed value of {@code setting}, or {@code fallback} when it was not given. */
  @SuppressWarnings("unchecked")
  public <T> T get(Setting setting, T fallback) {
    Value v = values.get(setting);
    return v == null ? fallback : (T) v.value();
  }

  /** Returns the given values, in the order given. */
  public Collection<Value> values() {
    return values.values();
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    values.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : " ").append(k.key()).append('=').append(v.text()));
    return sb.toString();
  }
}

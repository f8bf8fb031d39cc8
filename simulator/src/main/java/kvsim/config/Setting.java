package kvsim.config;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import kvsim.core.Bytes;

/**
 * One setting of a serving run, declared once in {@link ServingSettings}: its key, the type of its
 * values (which decides its one parse and check, {@link #parse}), unit, default, description, the
 * old spellings that still name it, the levels that accept it (Note [Setting levels]), and where a
 * result file echoes it.
 *
 * <p>Note [Setting levels]: a serving setting can be given as an option of {@code kvsim serving}
 * and {@code kvsim capacity} ({@code --max-num-seqs 64}), as a what-if axis of those commands
 * ({@code --set max-num-seqs=32,64}), as a key of a sweep grid's {@code set:} mapping (or, for the
 * model and device, a top-level field of the grid, each value a column), and as a field of a
 * regression suite's serving scenario. A level that does not accept a setting refuses it, naming
 * the setting and where it was given.
 *
 * @param key the setting's name (kebab-case, with its unit where the name alone is ambiguous)
 * @param type the type of its values
 * @param unit the unit of its values ("tokens", "bytes", "share of the device"), or "" for none
 * @param defaultText the default, as the table in README says it
 * @param description what it sets, one sentence
 * @param aliases other names that also name it, each accepted wherever the key is
 * @param levels where it may be given
 * @param echo where a serving summary echoes it ({@code config.kv_memory_bytes}), or "" where it does not
 * @param readsKey the key {@code ServingSystems.reads} knows it by (which systems read it), or "" where every system reads it
 * @param choices the values of a {@link Type#CHOICE} setting, else empty
 */
public record Setting(
    String key, Type type, String unit, String defaultText, String description, List<String> aliases, Set<Level> levels, String echo, String readsKey,
    List<String> choices) {

  /** Where a setting may be given (Note [Setting levels]). */
  public enum Level {
    /** An option of {@code kvsim serving} and {@code kvsim capacity}: {@code --KEY VALUE}. */
    OPTION("option"),
    /** A what-if axis of those commands: {@code --set KEY=V1,V2}. */
    SET("--set"),
    /** A key of a sweep grid's {@code set:} mapping. */
    GRID_SET("grid set:"),
    /** A top-level field of a sweep grid (a list of values, each a column). */
    GRID_FIELD("grid field"),
    /** A field of a regression suite's serving scenario. */
    SUITE("suite scenario");

    private final String label;

    Level(String label) {
      this.label = label;
    }

    /** Returns how README's table heads this level. */
    public String label() {
      return label;
    }
  }

  /** The types of setting values; each has one parse and check. */
  public enum Type {
    /** A size such as {@code 12GiB}, in bytes ({@link Bytes#parse}); a Long. */
    SIZE,
    /** A positive whole number that fits an int; an Integer. */
    COUNT,
    /** A whole number that fits a long; a Long. */
    WHOLE,
    /** A share in (0, 1]; a Double. */
    SHARE,
    /** A share in [0, 1); a Double. */
    SHARE_BELOW_ONE,
    /** One of {@link Setting#choices}; a String. */
    CHOICE,
    /** Any text; checked by whatever reads it (a model or device name). */
    TEXT
  }

  public Setting {
    aliases = List.copyOf(aliases);
    levels = Set.copyOf(levels);
    choices = List.copyOf(choices);
  }

  /** Declares a setting read by every system under its own key, with no aliases, accepted at {@code levels}. */
  static Setting of(String key, Type type, String unit, String defaultText, String description, Level... levels) {
    return new Setting(key, type, unit, defaultText, description, List.of(), levels.length == 0 ? Set.of() : EnumSet.of(levels[0], levels), "", key,
        List.of());
  }

  /** Returns this setting with these other names. */
  Setting aliases(String... names) {
    return new Setting(key, type, unit, defaultText, description, List.of(names), levels, echo, readsKey, choices);
  }

  /** Returns this setting echoed at {@code where}. */
  Setting echo(String where) {
    return new Setting(key, type, unit, defaultText, description, aliases, levels, where, readsKey, choices);
  }

  /** Returns this setting known to {@code ServingSystems.reads} as {@code key}. */
  Setting readsKey(String systemKey) {
    return new Setting(key, type, unit, defaultText, description, aliases, levels, echo, systemKey, choices);
  }

  /** Returns this setting with these values as its only ones. */
  Setting choices(String... values) {
    return new Setting(key, type, unit, defaultText, description, aliases, levels, echo, readsKey, List.of(values));
  }

  /** Returns whether {@code name} is this setting's key or one of its aliases. */
  public boolean named(String name) {
    return key.equals(name) || aliases.contains(name);
  }

  /** Returns whether the setting may be given at {@code level}. */
  public boolean accepts(Level level) {
    return levels.contains(level);
  }

  /**
   * Parses and checks a value of this setting; a problem is an InputException at {@code origin}
   * ({@code --max-num-seqs: must be positive, got 0}). This is the one parse of the setting, at
   * every level.
   */
  public Object parse(String text, Origin origin) {
    String t = text.strip();
    switch (type) {
      case SIZE -> {
        try {
          return Bytes.parse(text);
        } catch (IllegalArgumentException e) {
          throw origin.error(e.getMessage());
        }
      }
      case COUNT -> {
        int n;
        try {
          n = Integer.parseInt(t);
        } catch (NumberFormatException e) {
          throw origin.error("'" + t + "' is not a whole number");
        }
        if (n < 1) {
          throw origin.error("must be positive, got " + n);
        }
        return n;
      }
      case WHOLE -> {
        try {
          return Long.parseLong(t);
        } catch (NumberFormatException e) {
          throw origin.error("'" + t + "' is not a whole number");
        }
      }
      case SHARE, SHARE_BELOW_ONE -> {
        double d;
        try {
          d = Double.parseDouble(t);
        } catch (NumberFormatException e) {
          throw origin.error("'" + t + "' is not a number");
        }
        boolean in = type == Type.SHARE ? d > 0 && d <= 1 : d >= 0 && d < 1;
        if (!in) {
          throw origin.error("must be in " + (type == Type.SHARE ? "(0, 1]" : "[0, 1)") + ", got " + d);
        }
        return d;
      }
      case CHOICE -> {
        if (!choices.contains(t)) {
          throw origin.error("unknown " + key + " '" + t + "' (known: " + String.join(", ", choices) + ")");
        }
        return t;
      }
      default -> {
        if (t.isEmpty()) {
          throw origin.error("an empty value");
        }
        return t;
      }
    }
  }

  /** Returns the type as README's table names it. */
  public String typeName() {
    return switch (type) {
      case SIZE -> "size";
      case COUNT -> "count";
      case WHOLE -> "integer";
      case SHARE -> "share (0, 1]";
      case SHARE_BELOW_ONE -> "share [0, 1)";
      case CHOICE -> String.join(" \\| ", choices);
      case TEXT -> "text";
    };
  }

  @Override
  public String toString() {
    return key;
  }
}

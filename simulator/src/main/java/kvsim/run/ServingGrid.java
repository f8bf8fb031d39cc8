package kvsim.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.config.Origin;
import kvsim.config.ServingSettings;
import kvsim.config.Setting;
import kvsim.config.Settings;
import kvsim.core.InputException;
import kvsim.serving.ServingSystems;

/**
 * A what-if grid over one workload: {@code --set KEY=V1,V2,…} lists (repeatable) and the {@code
 * --system} list expand to cells, the cross product of every list, each cell one serving run (or
 * one capacity search) of one system with one value per key. Cells are ordered with the first
 * {@code --set} varying slowest and the system fastest, so results never depend on threads.
 *
 * <p>KEY is a serving setting that {@code --set} accepts ({@link ServingSettings}: {@code
 * block-tokens}, {@code max-num-seqs}, {@code max-num-batched-tokens}, {@code kv-memory}, {@code
 * gpu-memory-utilization}, {@code max-model-len}, {@code watermark}, {@code swap-space}, {@code
 * plan}, or an alias such as {@code block-size}) or an allocator option {@code ALLOCATOR.KEY} of the
 * allocator under test of a contiguous system ({@code buddy.min-block=2MiB,4MiB}), checked as {@code
 * kvsim replay --set} checks it. A value set in the grid replaces the command line's for that key;
 * {@code kv-memory} and {@code gpu-memory-utilization} replace each other. A key that a system of
 * the grid does not read (the watermark of {@code vllm}, which has none; {@code block-size} for
 * the Orca systems; {@code buddy.…} for {@code vllm}) is an error naming that system, found before
 * anything runs (ServingSystems' Note [Settings each system reads]).
 */
public final class ServingGrid {
  /**
   * One key and its values, as given.
   *
   * @param key the key
   * @param values the values in the order given
   */
  public record Axis(String key, List<String> values) {
    /** Returns the serving setting the key names, or null for an allocator option {@code ALLOCATOR.KEY}. */
    public Setting setting() {
      return ServingSettings.find(key);
    }
  }

  /**
   * One cell: a system and one value per key.
   *
   * @param settings the value of each key, in the order the keys were given (empty without a grid)
   * @param system the system
   * @param spec the resolved spec of this cell, with this system only
   */
  public record Cell(Map<String, String> settings, String system, ServingSpec spec) {
    /** Returns a label naming the system and the settings, e.g. {@code vllm block-size=8}. */
    public String label() {
      StringBuilder sb = new StringBuilder(system);
      settings.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
      return sb.toString();
    }
  }

  private ServingGrid() {}

  /**
   * Parses {@code KEY=V1,V2,…} settings; throws InputException for a key that is neither a serving
   * setting {@code --set} accepts ({@link ServingSettings}, by its name or an alias) nor {@code
   * ALLOCATOR.KEY}, for a bad value (each parsed by its setting, at {@code --set KEY=VALUE}), an
   * empty or repeated value, and a setting given twice (under one name or two).
   */
  public static List<Axis> parse(List<String> settings) {
    List<Axis> axes = new ArrayList<>();
    for (String s : settings) {
      int eq = s.indexOf('=');
      if (eq <= 0 || eq == s.length() - 1) {
        throw new InputException("--set: expected KEY=V1,V2,…, got '" + s + "'");
      }
      String key = s.substring(0, eq).strip();
      int dot = key.indexOf('.');
      Origin origin = Origin.option("--set " + s);
      Setting setting = ServingSettings.find(key);
      if (setting == null && (dot <= 0 || dot == key.length() - 1)) {
        throw origin.error("'" + key + "' is not a serving setting (" + ServingSettings.keys(Setting.Level.SET) + ") or an allocator option ALLOCATOR.KEY");
      }
      if (setting != null) {
        ServingSettings.require(key, Setting.Level.SET, origin);
      }
      for (Axis a : axes) {
        if (a.key().equals(key) || (setting != null && setting == a.setting())) {
          throw origin.error(key + " is given twice" + (a.key().equals(key) ? "" : " (also as " + a.key() + ")") + "; list its values in one --set");
        }
      }
      List<String> values = new ArrayList<>();
      for (String v : s.substring(eq + 1).split(",", -1)) {
        if (v.isBlank()) {
          throw origin.error("an empty value");
        }
        if (values.contains(v.strip())) {
          throw origin.error("the value " + v.strip() + " is given twice");
        }
        if (setting != null) {
          setting.parse(v.strip(), Origin.option("--set " + key + "=" + v.strip()));
        }
        values.add(v.strip());
      }
      axes.add(new Axis(key, List.copyOf(values)));
    }
    return axes;
  }

  /** Returns the keys that vary, in order. */
  public static List<String> keys(List<Axis> axes) {
    return axes.stream().map(Axis::key).toList();
  }

  /**
   * Expands {@code base} (its systems, default {@code vllm}) and {@code axes} to cells, each
   * resolved, so any bad value fails before anything runs.
   */
  public static List<Cell> cells(ServingSpec.Request base, List<Axis> axes) {
    List<Map<String, String>> combinations = new ArrayList<>();
    combinations.add(new LinkedHashMap<>());
    for (Axis a : axes) {
      List<Map<String, String>> next = new ArrayList<>();
      for (Map<String, String> c : combinations) {
        for (String v : a.values()) {
          Map<String, String> m = new LinkedHashMap<>(c);
          m.put(a.key(), v);
          next.add(m);
        }
      }
      combinations = next;
    }
    List<String> systems = base.systems().isEmpty() ? List.of("vllm") : base.systems();
    checkRead(axes, systems);
    // The workload is resolved (and a recorded one measured) once, shared by every cell.
    ServingSpec first = null;
    List<Cell> cells = new ArrayList<>();
    for (Map<String, String> combination : combinations) {
      ServingSpec spec = ServingSpec.resolve(apply(base, combination), first);
      first = first == null ? spec : first;
      for (String system : systems) {
        cells.add(new Cell(java.util.Collections.unmodifiableMap(combination), system, spec.withSystems(List.of(system))));
      }
    }
    // The cells share one workload: its prefix-hash block is read once.
    int hashBlockTokens = hashBlockTokens(first);
    for (Cell c : cells) {
      try {
        checkBuilds(c.spec(), hashBlockTokens);
      } catch (InputException e) {
        throw axes.isEmpty() ? e : new InputException("the cell " + c.label() + ": " + e.getMessage(), e);
      }
    }
    return cells;
  }

  /**
   * Builds each system of {@code spec} once, as its run will, and drops it, so that what only a
   * build finds (too few KV blocks, a contiguous system whose one sequence cannot reach
   * max_model_len, a request trace's prefix hashes that do not split into the blocks) fails before
   * any run: an InputException naming the system.
   */
  public static void checkBuilds(ServingSpec spec) {
    checkBuilds(spec, hashBlockTokens(spec));
  }

  private static void checkBuilds(ServingSpec spec, int hashBlockTokens) {
    for (String system : spec.systems()) {
      try {
        ServingSystems.build(system, spec.build(hashBlockTokens));
      } catch (IllegalArgumentException e) {
        throw new InputException(system + ": " + e.getMessage());
      }
    }
  }

  /** Returns the tokens per prefix hash of the spec's request source (0 for none), from opening it. */
  private static int hashBlockTokens(ServingSpec spec) {
    try (kvsim.trace.RequestSource source = spec.workload().open()) {
      return source.hashBlockTokens();
    } catch (java.io.IOException e) {
      throw new InputException(spec.workload().spec() + ": cannot read: " + e.getMessage());
    }
  }

  /**
   * Every key must be read by every system of the grid (ServingSystems' Note [Settings each system
   * reads]): a system that ignores a key would repeat one run under several labels. An allocator
   * key that no system of the grid uses is left to the spec's own check, which names the
   * allocators under test.
   */
  private static void checkRead(List<Axis> axes, List<String> systems) {
    for (Axis a : axes) {
      boolean allocatorKey = a.setting() == null;
      if (allocatorKey && systems.stream().noneMatch(s -> ServingSystems.reads(s, a.key()))) {
        continue;
      }
      String readsKey = allocatorKey ? a.key() : a.setting().readsKey();
      for (String system : systems) {
        ServingSystems.get(system);
        String problem = readsKey.isEmpty() ? null : ServingSystems.notRead(system, readsKey);
        if (problem != null) {
          throw new InputException("--set " + a.key() + "=" + String.join(",", a.values()) + ": " + problem
              + "; its cells would repeat one run, so give it only to the systems that read it");
        }
      }
    }
  }

  /**
   * Returns a cell's entry of {@code summary.json}: the system's entry with {@code cell} (the
   * value of each key, as given) and the cell's {@code kv_memory_bytes} after {@code system}.
   */
  public static Map<String, Object> withCell(Map<String, Object> systemSummary, Cell cell) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("system", systemSummary.get("system"));
    m.put("cell", new LinkedHashMap<>(cell.settings()));
    m.put("kv_memory_bytes", cell.spec().kvMemoryBytes());
    systemSummary.forEach(m::putIfAbsent);
    return m;
  }

  /**
   * Returns the configuration echo of a grid run: the first cell's, with {@code grid} (each key
   * with its values, as given) when there are axes, and without {@code kv_memory_bytes} when the
   * cells differ in it (each cell has its own).
   */
  public static Map<String, Object> configEcho(List<Cell> cells, List<Axis> axes) {
    Map<String, Object> config = new LinkedHashMap<>(cells.get(0).spec().configEcho());
    if (!axes.isEmpty()) {
      if (!sameKvMemory(cells)) {
        config.remove("kv_memory_bytes");
      }
      Map<String, Object> grid = new LinkedHashMap<>();
      axes.forEach(a -> grid.put(a.key(), a.values()));
      config.put("grid", grid);
    }
    return config;
  }

  /** Returns whether every cell has the same KV memory. */
  public static boolean sameKvMemory(List<Cell> cells) {
    return cells.stream().mapToLong(c -> c.spec().kvMemoryBytes()).distinct().count() == 1;
  }

  /**
   * Returns {@code base} with each setting of {@code combination} in place of the command line's,
   * each at its origin {@code --set KEY=VALUE}; a {@code kv-memory} replaces a {@code
   * gpu-memory-utilization} and the other way round ({@link ServingSettings#replaces}).
   */
  static ServingSpec.Request apply(ServingSpec.Request base, Map<String, String> combination) {
    Settings settings = base.settings();
    Map<String, Map<String, String>> allocatorOptions = new LinkedHashMap<>();
    base.allocatorOptions().forEach((k, v) -> allocatorOptions.put(k, new LinkedHashMap<>(v)));
    for (Map.Entry<String, String> e : combination.entrySet()) {
      String key = e.getKey();
      String v = e.getValue();
      Setting setting = ServingSettings.find(key);
      if (setting != null) {
        Setting replaced = ServingSettings.replaces(setting);
        settings = (replaced == null ? settings : settings.without(replaced)).with(setting, v, Origin.option("--set " + key + "=" + v));
      } else {
        int dot = key.indexOf('.');
        allocatorOptions.computeIfAbsent(key.substring(0, dot), k -> new LinkedHashMap<>()).put(key.substring(dot + 1), v);
      }
    }
    return new ServingSpec.Request(base.workload(), base.systems(), settings, base.check(), allocatorOptions);
  }
}

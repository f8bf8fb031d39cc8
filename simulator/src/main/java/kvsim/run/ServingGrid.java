package kvsim.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.serving.ServingSystems;

/**
 * A what-if grid over one workload: {@code --set KEY=V1,V2,…} lists (repeatable) and the {@code
 * --system} list expand to cells, the cross product of every list, each cell one serving run (or
 * one capacity search) of one system with one value per key. Cells are ordered with the first
 * {@code --set} varying slowest and the system fastest, so results never depend on threads.
 *
 * <p>KEY is a serving option without its dashes ({@link #SERVING_KEYS}: {@code block-size}, {@code
 * max-num-seqs}, {@code max-num-batched-tokens}, {@code kv-memory}, {@code gpu-memory-utilization},
 * {@code max-model-len}, {@code watermark}) or an allocator option {@code ALLOCATOR.KEY} of the
 * allocator under test of a contiguous system ({@code buddy.min-block=2MiB,4MiB}), checked as {@code
 * kvsim replay --set} checks it. A value set in the grid replaces the command line's for that key;
 * {@code kv-memory} and {@code gpu-memory-utilization} replace each other. A key that a system of
 * the grid does not read (the watermark of {@code vllm}, which has none; {@code block-size} for
 * the Orca systems; {@code buddy.…} for {@code vllm}) is an error naming that system, found before
 * anything runs (ServingSystems' Note [Settings each system reads]).
 */
public final class ServingGrid {
  /** The serving options a grid may vary. */
  public static final List<String> SERVING_KEYS =
      List.of("block-size", "max-num-seqs", "max-num-batched-tokens", "kv-memory", "gpu-memory-utilization", "max-model-len", "watermark");

  /**
   * One key and its values, as given.
   *
   * @param key the key
   * @param values the values in the order given
   */
  public record Axis(String key, List<String> values) {}

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

  /** Parses {@code KEY=V1,V2,…} settings; throws InputException for a bad key, value list or a key given twice. */
  public static List<Axis> parse(List<String> settings) {
    List<Axis> axes = new ArrayList<>();
    for (String s : settings) {
      int eq = s.indexOf('=');
      if (eq <= 0 || eq == s.length() - 1) {
        throw new InputException("--set: expected KEY=V1,V2,…, got '" + s + "'");
      }
      String key = s.substring(0, eq).strip();
      int dot = key.indexOf('.');
      if (!SERVING_KEYS.contains(key) && (dot <= 0 || dot == key.length() - 1)) {
        throw new InputException("--set " + s + ": '" + key + "' is not a serving option (" + String.join(", ", SERVING_KEYS)
            + ") or an allocator option ALLOCATOR.KEY");
      }
      if (axes.stream().anyMatch(a -> a.key().equals(key))) {
        throw new InputException("--set " + s + ": " + key + " is given twice; list its values in one --set");
      }
      List<String> values = new ArrayList<>();
      for (String v : s.substring(eq + 1).split(",", -1)) {
        if (v.isBlank()) {
          throw new InputException("--set " + s + ": an empty value");
        }
        if (values.contains(v.strip())) {
          throw new InputException("--set " + s + ": the value " + v.strip() + " is given twice");
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
    List<String> systems = base.systems() == null || base.systems().isEmpty() ? List.of("vllm") : base.systems();
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
      boolean allocatorKey = a.key().indexOf('.') > 0;
      if (allocatorKey && systems.stream().noneMatch(s -> ServingSystems.reads(s, a.key()))) {
        continue;
      }
      for (String system : systems) {
        ServingSystems.get(system);
        String problem = ServingSystems.notRead(system, a.key());
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

  /** Returns {@code base} with each setting of {@code combination} in place of the command line's. */
  static ServingSpec.Request apply(ServingSpec.Request base, Map<String, String> combination) {
    ServingSpec.Request r = base;
    Map<String, Map<String, String>> allocatorOptions = new LinkedHashMap<>();
    base.allocatorOptions().forEach((k, v) -> allocatorOptions.put(k, new LinkedHashMap<>(v)));
    for (Map.Entry<String, String> e : combination.entrySet()) {
      String key = e.getKey();
      String v = e.getValue();
      r = switch (key) {
        case "block-size" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), r.kvMemory(), r.gpuMemoryUtilization(),
            r.maxModelLen(), r.maxNumSeqs(), r.maxNumBatchedTokens(), integer(key, v), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), r.allocatorOptions());
        case "max-num-seqs" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), r.kvMemory(), r.gpuMemoryUtilization(),
            r.maxModelLen(), integer(key, v), r.maxNumBatchedTokens(), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), r.allocatorOptions());
        case "max-num-batched-tokens" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), r.kvMemory(),
            r.gpuMemoryUtilization(), r.maxModelLen(), r.maxNumSeqs(), integer(key, v), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), r.allocatorOptions());
        case "max-model-len" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), r.kvMemory(), r.gpuMemoryUtilization(),
            integer(key, v), r.maxNumSeqs(), r.maxNumBatchedTokens(), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), r.allocatorOptions());
        case "kv-memory" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), v, null, r.maxModelLen(), r.maxNumSeqs(),
            r.maxNumBatchedTokens(), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), r.allocatorOptions());
        case "gpu-memory-utilization" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), null, number(key, v),
            r.maxModelLen(), r.maxNumSeqs(), r.maxNumBatchedTokens(), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), r.allocatorOptions());
        case "watermark" -> new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), r.kvMemory(), r.gpuMemoryUtilization(),
            r.maxModelLen(), r.maxNumSeqs(), r.maxNumBatchedTokens(), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), number(key, v), r.allocatorOptions());
        default -> {
          int dot = key.indexOf('.');
          allocatorOptions.computeIfAbsent(key.substring(0, dot), k -> new LinkedHashMap<>()).put(key.substring(dot + 1), v);
          yield r;
        }
      };
    }
    return new ServingSpec.Request(r.workload(), r.systems(), r.model(), r.device(), r.kvMemory(), r.gpuMemoryUtilization(), r.maxModelLen(),
        r.maxNumSeqs(), r.maxNumBatchedTokens(), r.blockTokens(), r.swapSpace(), r.seed(), r.plan(), r.check(), r.watermark(), allocatorOptions,
        base.calibration());
  }

  private static int integer(String key, String v) {
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new InputException("--set " + key + "=" + v + ": not an integer");
    }
  }

  private static double number(String key, String v) {
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new InputException("--set " + key + "=" + v + ": not a number");
    }
  }
}

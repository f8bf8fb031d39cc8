package kvsim.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;

/**
 * A sweep grid file ({@code kvsim sweep GRID.yaml}): lists of workloads, allocators or serving
 * systems, options and seeds whose cross product is the set of cells to run. Every list may also
 * be written as a single value. Example:
 *
 * <pre>
 * workloads: ["churn:ops=1000", "churn:ops=5000"]   # generator specs, or trace paths relative to this file
 * allocators: [first-fit, best-fit, buddy]          # L1 cells; or systems: [vllm, orca-oracle] for serving cells
 * set:                                              # options, each a list; the lists are crossed
 *   first-fit.alignment: [512, 2MiB]                #   L1: ALLOCATOR.KEY as in `replay --set`
 * seeds: 1..200                                     # or a list; generators only
 * device: h100-80                                   # or a list
 * model: llama-2-7b                                 # or a list
 * plan: {weights: 0, activations: 0}                # L1 only
 * calibration: ../results/calibration/h100.json     # one calibration file for every cell, relative to this file
 * </pre>
 *
 * <p>Serving grids name {@code systems} instead of {@code allocators}; their {@code set} keys are
 * the serving settings a grid's {@code set:} accepts ({@link ServingSettings}: {@code block-tokens},
 * {@code kv-memory}, {@code max-num-seqs}, {@code max-num-batched-tokens}, {@code max-model-len},
 * {@code gpu-memory-utilization}, {@code swap-space}, {@code plan}, {@code watermark}, or an alias
 * such as {@code block-size}), each value parsed by its setting at its line, and
 * {@code seeds} apply to request generators ({@code requests:…}).
 *
 * @param workloads workload specs as written (trace paths relative to {@link #dir})
 * @param allocators allocators of L1 cells (empty for a serving grid)
 * @param systems serving systems (empty for an L1 grid)
 * @param seeds seeds, or empty for each workload's own
 * @param devices devices (empty: the default)
 * @param models models (empty: the default)
 * @param sets option name to its values, in file order
 * @param plan memory plan sizes ({@code weights}, {@code activations}) of L1 cells
 * @param dir the folder relative trace paths are resolved against
 * @param origin the file, for errors after parsing
 * @param lines the line of each node of the file, by JSON pointer ({@code /set/first-fit.alignment/1}), for {@link #error}
 * @param calibration a calibration file for every cell as written (relative to {@link #dir}), or null
 */
public record GridSpec(
    List<String> workloads,
    List<String> allocators,
    List<String> systems,
    List<Long> seeds,
    List<String> devices,
    List<String> models,
    Map<String, List<String>> sets,
    Map<String, String> plan,
    Path dir,
    WorkloadSpec.Origin origin,
    Map<String, Integer> lines,
    String calibration) {

  /** A grid without a calibration. */
  public GridSpec(List<String> workloads, List<String> allocators, List<String> systems, List<Long> seeds, List<String> devices, List<String> models,
      Map<String, List<String>> sets, Map<String, String> plan, Path dir, WorkloadSpec.Origin origin, Map<String, Integer> lines) {
    this(workloads, allocators, systems, seeds, devices, models, sets, plan, dir, origin, lines, null);
  }

  private static final List<String> FIELDS =
      List.of("workloads", "allocators", "systems", "seeds", "device", "model", "set", "plan", "calibration");
  /** A key given twice and a second YAML document are errors, not silently the last or ignored. */
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory())
      .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /**
   * Returns an error at a value of the file: {@code grid.yaml:7: set.first-fit.alignment: problem},
   * at the line of the {@code index}th value of {@code field} (a top-level field, or {@code
   * set.KEY}, {@code plan.KEY}), or of the field itself where {@code index} is negative or the field
   * holds one value.
   *
   * <p>Note [Lines of grid values]: as a suite's nodes (regress.YamlNode's Note [Lines of YAML
   * nodes]), the line of every node is read once from the YAML token stream by its JSON pointer,
   * since a key such as {@code first-fit.alignment} cannot be found by searching the text for its
   * last dotted part, and a list written one value a line has a line per value.
   */
  public InputException error(String field, int index, String problem) {
    return error(origin.source(), lines, field, index, problem);
  }

  private static InputException error(String source, Map<String, Integer> lines, String field, int index, String problem) {
    return at(source, lines, field, index).error(problem);
  }

  /**
   * Returns the origin of the {@code index}th value of {@code field} (a top-level field or {@code
   * set.KEY}; the field itself where {@code index} is negative or the field holds one value), for
   * a setting given there ({@link Settings}).
   */
  public Origin at(String field, int index) {
    return at(origin.source(), lines, field, index);
  }

  private static Origin at(String source, Map<String, Integer> lines, String field, int index) {
    String pointer = pointer(field);
    Integer line = index >= 0 ? lines.get(pointer + "/" + index) : null;
    if (line == null) {
      line = lines.get(pointer);
    }
    return Origin.at(source, line == null ? 0 : line, field);
  }

  /** Where parsing reports its problems: the file and the line of each node. */
  private record At(String source, Map<String, Integer> lines) {
    InputException error(String field, String problem) {
      return GridSpec.error(source, lines, field, -1, problem);
    }

    InputException error(String field, int index, String problem) {
      return GridSpec.error(source, lines, field, index, problem);
    }

    Origin origin(String field, int index) {
      return GridSpec.at(source, lines, field, index);
    }
  }

  /** Returns the JSON pointer of a field path: {@code set.first-fit.alignment} is {@code /set/first-fit.alignment}. */
  private static String pointer(String field) {
    int dot = field.indexOf('.');
    String head = dot < 0 ? field : field.substring(0, dot);
    String rest = dot < 0 ? null : field.substring(dot + 1);
    return "/" + escape(head) + (rest == null ? "" : "/" + escape(rest));
  }

  private static String escape(String key) {
    return key.replace("~", "~0").replace("/", "~1");
  }

  /** Returns whether the cells are serving runs (else L1 allocator runs). */
  public boolean serving() {
    return !systems.isEmpty();
  }

  /** Parses a grid's text; {@code source} names it in messages, {@code dir} resolves its paths. */
  public static GridSpec parse(String source, String text, Path dir) {
    WorkloadSpec.Origin origin = new WorkloadSpec.Origin(source, text);
    JsonNode root;
    Map<String, Integer> lines = new HashMap<>();
    try {
      root = YAML.readTree(text);
      try (JsonParser p = YAML.getFactory().createParser(text)) {
        for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
          lines.putIfAbsent(p.getParsingContext().pathAsPointer().toString(), p.currentTokenLocation().getLineNr());
        }
      }
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      String problem = e.getOriginalMessage().startsWith("Trailing token")
          ? "a second YAML document; a grid file is one document"
          : "bad YAML: " + e.getOriginalMessage().lines().findFirst().orElse("");
      throw InputException.at(source, line, null, problem);
    } catch (IOException e) {
      throw new InputException(source + ": cannot read: " + e.getMessage());
    }
    At at = new At(source, lines);
    if (root == null || root.isMissingNode() || !root.isObject()) {
      throw InputException.at(source, 1, null, "a grid file is a YAML mapping with the fields " + String.join(", ", FIELDS));
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String name = it.next();
      if (!FIELDS.contains(name)) {
        throw at.error(name, "unknown field (known: " + String.join(", ", FIELDS) + ")");
      }
    }
    List<String> workloads = strings(at, root, "workloads");
    if (workloads.isEmpty()) {
      throw at.error("workloads", "a grid needs at least one workload");
    }
    if (workloads.stream().anyMatch(w -> w.indexOf('\0') >= 0 || !java.nio.charset.StandardCharsets.UTF_8.newEncoder().canEncode(w))) {
      throw at.error("workloads", "cannot be a file name: it holds a NUL or a lone UTF-16 surrogate");
    }
    List<String> allocators = strings(at, root, "allocators");
    List<String> systems = strings(at, root, "systems");
    if (allocators.isEmpty() == systems.isEmpty()) {
      throw at.error(systems.isEmpty() ? "allocators" : "systems",
          "give either allocators (L1 cells) or systems (serving cells), not " + (systems.isEmpty() ? "neither" : "both"));
    }
    Map<String, List<String>> sets = new LinkedHashMap<>();
    JsonNode set = root.get("set");
    if (set != null && !set.isNull()) {
      if (!set.isObject()) {
        throw at.error("set", "must be a mapping of option names to values or lists of values");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = set.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        String key = e.getKey();
        String field = "set." + key;
        if (systems.isEmpty() && !key.matches("[^.\\s]+\\.[^.\\s]+")) {
          throw at.error(field, "an L1 option is written ALLOCATOR.KEY, as in replay --set");
        }
        Setting setting = systems.isEmpty() ? null : ServingSettings.require(key, Setting.Level.GRID_SET, at.origin(field, -1));
        for (String other : sets.keySet()) {
          if (setting != null && setting.named(other)) {
            throw at.error(field, setting.key() + " is given twice (also as set." + other + ")");
          }
        }
        List<String> values = values(at, field, e.getValue());
        if (values.isEmpty()) {
          throw at.error(field, "needs at least one value");
        }
        for (int i = 0; setting != null && i < values.size(); i++) {
          setting.parse(values.get(i), at.origin(field, e.getValue().isArray() ? i : -1));
        }
        sets.put(key, values);
      }
    }
    Map<String, String> plan = new LinkedHashMap<>();
    JsonNode p = root.get("plan");
    if (p != null && !p.isNull()) {
      if (!systems.isEmpty()) {
        throw at.error("plan", "applies to L1 cells only (serving systems size their own memory)");
      }
      if (!p.isObject()) {
        throw at.error("plan", "must be a mapping {weights: SIZE, activations: SIZE}");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = p.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getKey().equals("weights") && !e.getKey().equals("activations")) {
          throw at.error("plan." + e.getKey(), "unknown field (known: weights, activations)");
        }
        plan.put(e.getKey(), scalar(at, "plan." + e.getKey(), -1, e.getValue()));
      }
    }
    JsonNode cal = root.get("calibration");
    String calibration = null;
    if (cal != null && !cal.isNull()) {
      if (!cal.isTextual()) {
        throw at.error("calibration", "one calibration file for every cell, got " + cal);
      }
      calibration = cal.asText();
    }
    return new GridSpec(
        workloads, allocators, systems, seeds(at, root.get("seeds")), strings(at, root, "device"), strings(at, root, "model"),
        sets, plan, dir, origin, Map.copyOf(lines), calibration);
  }

  /** Returns a field that is one value or a list of values, as strings; empty when absent. */
  private static List<String> strings(At at, JsonNode root, String field) {
    JsonNode n = root.get(field);
    return n == null || n.isNull() ? List.of() : values(at, field, n);
  }

  /** A value given twice would make two cells of one key, which the sweep's folder stores as one. */
  private static List<String> values(At at, String field, JsonNode n) {
    List<String> out = new ArrayList<>();
    if (n.isArray()) {
      for (int i = 0; i < n.size(); i++) {
        String v = scalar(at, field, i, n.get(i));
        if (out.contains(v)) {
          throw at.error(field, i, "'" + v + "' given twice");
        }
        out.add(v);
      }
    } else {
      out.add(scalar(at, field, -1, n));
    }
    return List.copyOf(out);
  }

  private static String scalar(At at, String field, int index, JsonNode n) {
    if (!n.isValueNode() || n.isNull()) {
      throw at.error(field, index, "expected a value or a list of values, got " + n);
    }
    return n.asText();
  }

  /** Seeds as {@code A..B}, one number, or a list of numbers. */
  private static List<Long> seeds(At at, JsonNode n) {
    if (n == null || n.isNull()) {
      return List.of();
    }
    List<Long> out = new ArrayList<>();
    if (n.isTextual() && n.asText().contains("..")) {
      String[] ab = n.asText().split("\\.\\.", -1);
      long a = seed(at, ab[0]);
      long b = seed(at, ab.length == 2 ? ab[1] : "");
      if (b < a) {
        throw at.error("seeds", "the range " + n.asText() + " is empty (write A..B with A <= B)");
      }
      // b - a overflows for a range wider than 2^63; the loop counts, since s++ would wrap past Long.MAX_VALUE.
      if (b - a >= 10_000_000 || b - a < 0) {
        throw at.error("seeds", "the range " + n.asText() + " holds more than 10,000,000 seeds");
      }
      for (long i = 0; i <= b - a; i++) {
        out.add(a + i);
      }
      return List.copyOf(out);
    }
    List<String> texts = values(at, "seeds", n);
    for (int i = 0; i < texts.size(); i++) {
      long seed = seed(at, texts.get(i));
      if (out.contains(seed)) {
        throw at.error("seeds", n.isArray() ? i : -1, "the seed " + seed + " given twice");
      }
      out.add(seed);
    }
    return List.copyOf(out);
  }

  private static long seed(At at, String text) {
    try {
      return Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      throw at.error("seeds", "'" + text + "' is not a whole number (write seeds as A..B, a number or a list of numbers)");
    }
  }
}

package kvsim.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * </pre>
 *
 * <p>Serving grids name {@code systems} instead of {@code allocators}; their {@code set} keys are
 * the serving options ({@code block-size}, {@code kv-memory}, {@code max-num-seqs},
 * {@code max-num-batched-tokens}, {@code max-model-len}, {@code gpu-memory-utilization}, {@code swap-space},
 * {@code plan}, {@code watermark}), and
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
    WorkloadSpec.Origin origin) {

  /** Keys of {@code set} that a serving grid accepts. */
  public static final Set<String> SERVING_SET_KEYS =
      Set.of("block-size", "kv-memory", "max-num-seqs", "max-num-batched-tokens", "max-model-len", "gpu-memory-utilization", "swap-space", "plan", "watermark");

  private static final List<String> FIELDS =
      List.of("workloads", "allocators", "systems", "seeds", "device", "model", "set", "plan");
  /** A key given twice and a second YAML document are errors, not silently the last or ignored. */
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory())
      .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /** Returns whether the cells are serving runs (else L1 allocator runs). */
  public boolean serving() {
    return !systems.isEmpty();
  }

  /** Parses a grid's text; {@code source} names it in messages, {@code dir} resolves its paths. */
  public static GridSpec parse(String source, String text, Path dir) {
    WorkloadSpec.Origin origin = new WorkloadSpec.Origin(source, text);
    JsonNode root;
    try {
      root = YAML.readTree(text);
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      String problem = e.getOriginalMessage().startsWith("Trailing token")
          ? "a second YAML document; a grid file is one document"
          : "bad YAML: " + e.getOriginalMessage().lines().findFirst().orElse("");
      throw InputException.at(source, line, null, problem);
    }
    if (root == null || root.isMissingNode() || !root.isObject()) {
      throw InputException.at(source, 1, null, "a grid file is a YAML mapping with the fields " + String.join(", ", FIELDS));
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String name = it.next();
      if (!FIELDS.contains(name)) {
        throw origin.error(name, "unknown field (known: " + String.join(", ", FIELDS) + ")");
      }
    }
    List<String> workloads = strings(origin, root, "workloads");
    if (workloads.isEmpty()) {
      throw origin.error("workloads", "a grid needs at least one workload");
    }
    if (workloads.stream().anyMatch(w -> w.indexOf('\0') >= 0 || !java.nio.charset.StandardCharsets.UTF_8.newEncoder().canEncode(w))) {
      throw origin.error("workloads", "cannot be a file name: it holds a NUL or a lone UTF-16 surrogate");
    }
    List<String> allocators = strings(origin, root, "allocators");
    List<String> systems = strings(origin, root, "systems");
    if (allocators.isEmpty() == systems.isEmpty()) {
      throw origin.error(systems.isEmpty() ? "allocators" : "systems",
          "give either allocators (L1 cells) or systems (serving cells), not " + (systems.isEmpty() ? "neither" : "both"));
    }
    Map<String, List<String>> sets = new LinkedHashMap<>();
    JsonNode set = root.get("set");
    if (set != null && !set.isNull()) {
      if (!set.isObject()) {
        throw origin.error("set", "must be a mapping of option names to values or lists of values");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = set.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        String key = e.getKey();
        if (systems.isEmpty() ? !key.matches("[^.\\s]+\\.[^.\\s]+") : !SERVING_SET_KEYS.contains(key)) {
          throw origin.error("set." + key, systems.isEmpty()
              ? "an L1 option is written ALLOCATOR.KEY, as in replay --set"
              : "unknown serving option (known: " + String.join(", ", SERVING_SET_KEYS.stream().sorted().toList()) + ")");
        }
        List<String> values = values(origin, "set." + key, e.getValue());
        if (values.isEmpty()) {
          throw origin.error("set." + key, "needs at least one value");
        }
        sets.put(key, values);
      }
    }
    Map<String, String> plan = new LinkedHashMap<>();
    JsonNode p = root.get("plan");
    if (p != null && !p.isNull()) {
      if (!systems.isEmpty()) {
        throw origin.error("plan", "applies to L1 cells only (serving systems size their own memory)");
      }
      if (!p.isObject()) {
        throw origin.error("plan", "must be a mapping {weights: SIZE, activations: SIZE}");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = p.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getKey().equals("weights") && !e.getKey().equals("activations")) {
          throw origin.error("plan." + e.getKey(), "unknown field (known: weights, activations)");
        }
        plan.put(e.getKey(), scalar(origin, "plan." + e.getKey(), e.getValue()));
      }
    }
    return new GridSpec(
        workloads, allocators, systems, seeds(origin, root.get("seeds")), strings(origin, root, "device"), strings(origin, root, "model"),
        sets, plan, dir, origin);
  }

  /** Returns a field that is one value or a list of values, as strings; empty when absent. */
  private static List<String> strings(WorkloadSpec.Origin origin, JsonNode root, String field) {
    JsonNode n = root.get(field);
    return n == null || n.isNull() ? List.of() : values(origin, field, n);
  }

  private static List<String> values(WorkloadSpec.Origin origin, String field, JsonNode n) {
    List<String> out = new ArrayList<>();
    if (n.isArray()) {
      for (JsonNode e : n) {
        out.add(scalar(origin, field, e));
      }
    } else {
      out.add(scalar(origin, field, n));
    }
    return List.copyOf(out);
  }

  private static String scalar(WorkloadSpec.Origin origin, String field, JsonNode n) {
    if (!n.isValueNode() || n.isNull()) {
      throw origin.error(field, "expected a value or a list of values, got " + n);
    }
    return n.asText();
  }

  /** Seeds as {@code A..B}, one number, or a list of numbers. */
  private static List<Long> seeds(WorkloadSpec.Origin origin, JsonNode n) {
    if (n == null || n.isNull()) {
      return List.of();
    }
    List<Long> out = new ArrayList<>();
    if (n.isTextual() && n.asText().contains("..")) {
      String[] ab = n.asText().split("\\.\\.", -1);
      long a = seed(origin, ab[0]);
      long b = seed(origin, ab.length == 2 ? ab[1] : "");
      if (b < a) {
        throw origin.error("seeds", "the range " + n.asText() + " is empty (write A..B with A <= B)");
      }
      // b - a overflows for a range wider than 2^63; the loop counts, since s++ would wrap past Long.MAX_VALUE.
      if (b - a >= 10_000_000 || b - a < 0) {
        throw origin.error("seeds", "the range " + n.asText() + " holds more than 10,000,000 seeds");
      }
      for (long i = 0; i <= b - a; i++) {
        out.add(a + i);
      }
      return List.copyOf(out);
    }
    for (String v : values(origin, "seeds", n)) {
      out.add(seed(origin, v));
    }
    return List.copyOf(out);
  }

  private static long seed(WorkloadSpec.Origin origin, String text) {
    try {
      return Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      throw origin.error("seeds", "'" + text + "' is not a whole number (write seeds as A..B, a number or a list of numbers)");
    }
  }
}

package kvsim.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;

/**
 * A workload spec file ({@code workloads/*.yaml}, README "Workload spec files"): what to run and on
 * what. Every field is optional; command-line options override the file. Example:
 *
 * <pre>
 * workload: churn                 # a generator name, or an L1 trace path relative to this file
 * params: {ops: 5000, free-probability: 0.4}
 * seed: 1
 * device: h100-80
 * model: llama-2-7b
 * plan: {weights: 0, activations: 0}
 * allocators: [first-fit, slab, multi-slab, paged]
 * options: {slab: {block-size: 2MiB}}
 * torch-alloc-conf: "expandable_segments:True"
 * calibration: ../results/calibration/h100.json   # relative to this file
 * </pre>
 *
 * @param workload generator name or trace path
 * @param params generator parameters
 * @param seed generator seed
 * @param device device preset or size
 * @param model model preset
 * @param plan memory plan sizes ({@code weights}, {@code activations})
 * @param allocators allocators to run
 * @param options per-allocator options
 * @param torchAllocConf options of the PyTorch caching model in PYTORCH_CUDA_ALLOC_CONF syntax
 * @param calibration a calibration file, relative to the spec file
 * @param origin where the spec was read from, to name its file and line in errors
 */
public record WorkloadSpec(
    String workload,
    Map<String, Object> params,
    Long seed,
    String device,
    String model,
    Map<String, Object> plan,
    List<String> allocators,
    Map<String, Map<String, Object>> options,
    String torchAllocConf,
    String calibration,
    Origin origin) {

  private static final ObjectMapper YAML =
      new ObjectMapper(new YAMLFactory())
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          // a key given twice and a second YAML document are errors, not silently the last or ignored
          .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /** The fields as they stand in the file. */
  private record Fields(
      String workload,
      Map<String, Object> params,
      Long seed,
      String device,
      String model,
      Map<String, Object> plan,
      List<String> allocators,
      Map<String, Map<String, Object>> options,
      @JsonProperty("torch-alloc-conf") String torchAllocConf,
      String calibration) {}

  /**
   * The spec file's name and text, so that a problem found after parsing (an unknown generator
   * parameter, an unknown device, a missing trace) can still name the file and the line.
   *
   * @param source the file as the user named it
   * @param text the file's content
   */
  public record Origin(String source, String text) {
    /**
     * Returns an error at the line of {@code field} (a key of the file, e.g. {@code device}, or a
     * key under another, e.g. {@code params.opps}); the line is left out when it cannot be found.
     */
    public InputException error(String field, String problem) {
      String key = field.substring(field.lastIndexOf('.') + 1);
      return InputException.at(source, lineOfKey(text, key, 0), field, problem);
    }
  }

  /** Reads a spec file; any problem is an InputException naming the file, line and field. */
  public static WorkloadSpec read(Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      return read(file.toString(), in);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    } catch (IOException e) {
      throw new InputException(file + ": cannot read: " + e.getMessage());
    }
  }

  /** Reads a spec from a stream; {@code source} names it in messages. */
  public static WorkloadSpec read(String source, InputStream in) throws IOException {
    String text;
    try {
      // Strict: bytes that are not UTF-8 would otherwise become U+FFFD in names and values.
      text = java.nio.charset.StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(in.readAllBytes())).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new InputException(source + ": not UTF-8 text");
    }
    try {
      Fields f = YAML.readValue(text, Fields.class);
      if (f == null) {
        throw InputException.at(source, 1, null, "empty workload spec");
      }
      // Both may name files, and a file name cannot hold a NUL or a lone surrogate (Path.of would throw).
      for (String[] field : new String[][] {{"workload", f.workload()}, {"calibration", f.calibration()}}) {
        if (field[1] != null && (field[1].indexOf('\0') >= 0 || !java.nio.charset.StandardCharsets.UTF_8.newEncoder().canEncode(field[1]))) {
          throw new Origin(source, text).error(field[0], "cannot be a file name: it holds a NUL or a lone UTF-16 surrogate");
        }
      }
      if (f.allocators() != null && f.allocators().contains(null)) {
        throw new Origin(source, text).error("allocators", "an allocator name is missing (null or an empty entry)");
      }
      return new WorkloadSpec(
          f.workload(), f.params(), f.seed(), f.device(), f.model(), f.plan(), f.allocators(), f.options(), f.torchAllocConf(), f.calibration(),
          new Origin(source, text));
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      if (e instanceof com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException u) {
        // The YAML parser reads ahead, so its location is past the key; find the key's own line.
        line = lineOfKey(text, u.getPropertyName(), line);
      }
      String field = null;
      if (e instanceof JsonMappingException m && !m.getPath().isEmpty()) {
        StringBuilder sb = new StringBuilder();
        for (JsonMappingException.Reference r : m.getPath()) {
          if (r.getFieldName() != null) {
            sb.append(sb.length() == 0 ? "" : ".").append(r.getFieldName());
          } else if (r.getIndex() >= 0) {
            sb.append('[').append(r.getIndex()).append(']');
          }
        }
        field = sb.toString();
      }
      String msg = kvsim.core.JsonProblem.javaTypes(plainMessage(e.getOriginalMessage()));
      if (msg.startsWith("Trailing token")) {
        msg = "a second YAML document; a workload spec is one document";
      } else if (msg.startsWith("Unrecognized field")) {
        msg = "unknown field (known: workload, params, seed, device, model, plan, allocators, options, torch-alloc-conf, calibration)";
      }
      throw InputException.at(source, line, field, "bad YAML: " + msg);
    }
  }

  /**
   * The YAML parser's message without its quoted source lines and carets: "while parsing a flow
   * mapping; expected ',' or '}', but got <stream end>" rather than only its first line.
   */
  private static String plainMessage(String message) {
    StringBuilder sb = new StringBuilder();
    for (String line : message.split("\n")) {
      if (line.isBlank() || Character.isWhitespace(line.charAt(0)) || line.startsWith(" at [Source")) {
        continue;
      }
      sb.append(sb.length() == 0 ? "" : "; ").append(line.trim());
    }
    return sb.length() == 0 ? message.trim() : sb.toString();
  }

  private static long lineOfKey(String text, String key, long fallback) {
    java.util.regex.Pattern p = java.util.regex.Pattern.compile("(^|[\\s{,-])[\"']?" + java.util.regex.Pattern.quote(key) + "[\"']?\\s*:");
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      if (p.matcher(lines[i]).find()) {
        return i + 1;
      }
    }
    return fallback;
  }

  /** Returns the generator parameters as strings, for an OptionMap. */
  public Map<String, String> paramStrings() {
    return stringify(params);
  }

  /** Returns one allocator's options as strings. */
  public Map<String, String> optionStrings(String allocator) {
    return options == null ? Map.of() : stringify(options.get(allocator));
  }

  /** Returns the plan's sizes as strings ({@code weights}, {@code activations}). */
  public Map<String, String> planStrings() {
    return stringify(plan);
  }

  private static Map<String, String> stringify(Map<String, Object> m) {
    Map<String, String> out = new LinkedHashMap<>();
    if (m != null) {
      m.forEach((k, v) -> out.put(k, String.valueOf(v)));
    }
    return out;
  }
}

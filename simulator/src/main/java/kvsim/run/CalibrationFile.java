package kvsim.run;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import kvsim.alloc.Calibration;
import kvsim.core.InputException;
import kvsim.registry.AllocatorRegistry;

/**
 * Reads a calibration file ({@code results/calibration/<gpu>.json}): latencies measured on a real
 * GPU that replace the models' defaults. Example:
 *
 * <pre>
 * {"format": "kvsim-calibration", "version": 1,
 *  "device": "NVIDIA H100 80GB HBM3", "driver": "580.65.06", "date": "2026-11-23",
 *  "latency": {"pytorch-caching": {"device_alloc_ns": 41000, "device_free_ns": 33000},
 *              "slab": {"alloc_base_ns": 25}}}
 * </pre>
 *
 * A model's fields that the file does not give keep their defaults; {@code fragmentation} (the
 * measured fragmentation comparisons) is carried by the file for people and ignored here. Unknown
 * fields, unknown allocators and negative latencies are errors naming the file, line and field.
 */
public final class CalibrationFile {
  /** The value of the {@code format} field. */
  public static final String FORMAT = "kvsim-calibration";
  /** The version this reader reads. */
  public static final int VERSION = 1;

  private static final Set<String> TOP_FIELDS = Set.of("format", "version", "device", "driver", "date", "latency", "fragmentation");
  /** A second JSON value and a key given twice are errors, not silently ignored or the last value. */
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private CalibrationFile() {}

  /** Reads and checks a calibration file. */
  public static Calibration read(Path file) {
    String source = file.toString();
    String text;
    try {
      if (Files.isDirectory(file)) {
        throw new InputException(source + ": is a folder, not a calibration file");
      }
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new InputException(source + ": no such calibration file");
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new InputException(source + ": not UTF-8 text");
    } catch (IOException e) {
      throw new InputException(source + ": cannot read: " + e.getMessage());
    }
    JsonNode root;
    try {
      root = JSON.readTree(text);
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      String problem = e.getOriginalMessage().startsWith("Trailing token")
          ? "more than one JSON value: the file is one object"
          : "malformed JSON: " + e.getOriginalMessage().split("\n")[0];
      throw InputException.at(source, line, null, problem);
    }
    if (root == null || !root.isObject()) {
      throw InputException.at(source, 1, null, "expected a JSON object");
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!TOP_FIELDS.contains(f)) {
        throw error(source, text, f, "unknown field (known: " + new TreeSet<>(TOP_FIELDS) + ")");
      }
    }
    if (!FORMAT.equals(root.path("format").asText(null))) {
      throw error(source, text, "format", "expected \"" + FORMAT + "\" (is this a kvsim calibration file?)");
    }
    if (!root.path("version").isInt() || root.get("version").asInt() != VERSION) {
      throw error(source, text, "version", "this kvsim reads version " + VERSION);
    }
    Map<String, Map<String, Long>> latency = new LinkedHashMap<>();
    JsonNode lat = root.path("latency");
    if (!lat.isMissingNode() && !lat.isObject()) {
      throw error(source, text, "latency", "expected an object of allocator names");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = lat.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      try {
        AllocatorRegistry.get(e.getKey());
      } catch (InputException unknown) {
        throw error(source, text, "latency." + e.getKey(), unknown.getMessage());
      }
      if (!e.getValue().isObject()) {
        throw error(source, text, "latency." + e.getKey(), "expected an object of latency fields, got " + e.getValue());
      }
      Map<String, Long> fields = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> f = e.getValue().fields(); f.hasNext(); ) {
        Map.Entry<String, JsonNode> field = f.next();
        String where = "latency." + e.getKey() + "." + field.getKey();
        if (!Calibration.FIELDS.contains(field.getKey())) {
          throw error(source, text, where, "unknown latency field (known: " + new TreeSet<>(Calibration.FIELDS) + ")");
        }
        if (!field.getValue().canConvertToExactIntegral() || field.getValue().asLong() < 0) {
          throw error(source, text, where, "must be a non-negative whole number of nanoseconds, got " + field.getValue());
        }
        fields.put(field.getKey(), field.getValue().asLong());
      }
      latency.put(e.getKey(), fields);
    }
    return new Calibration(
        file.getFileName().toString(), root.path("device").asText(null), root.path("driver").asText(null), root.path("date").asText(null),
        latency);
  }

  /** An error at the line where {@code field}'s last key is written. */
  private static InputException error(String source, String text, String field, String problem) {
    String key = "\"" + field.substring(field.lastIndexOf('.') + 1) + "\"";
    int at = text.indexOf(key);
    long line = at < 0 ? 0 : 1 + text.substring(0, at).chars().filter(c -> c == '\n').count();
    return InputException.at(source, line, field, problem);
  }
}

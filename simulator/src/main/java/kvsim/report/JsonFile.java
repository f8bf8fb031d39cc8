package kvsim.report;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import kvsim.core.InputException;

/**
 * Typed access to one JSON result file's fields, shared by the readers of every result format
 * ({@link RunResultsReader}, {@link SweepResultsReader}, {@link ServingResultsReader}, {@link
 * CapacityResultsReader}): every problem is an {@link InputException} naming the file and the field
 * (Note [Strict reading] on {@link ResultsReader}).
 */
record JsonFile(Path file) {
  private static final int VERSION = ResultsReader.VERSION;

  /** Throws unless {@code dir} is a folder. */
  static void requireFolder(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new InputException(dir + ": " + (Files.exists(dir) ? "not a folder" : "no such folder") + "; expected a kvsim result folder");
    }
  }

  /** Throws unless {@code file} is a regular file. */
  static void requireFile(Path file) {
    if (!Files.isRegularFile(file)) {
      throw InputException.at(
          file.toString(), 0, null, "missing; a kvsim result folder holds " + ResultsReader.SUMMARY_FILE + ", " + ResultsReader.TIMESERIES_FILE
              + " and " + ResultsReader.TIMING_FILE);
    }
  }

  InputException error(String field, String problem) {
    return InputException.at(file.toString(), 0, field, problem);
  }

  JsonNode readObject() {
    requireFile(file);
    JsonNode root;
    try (InputStream in = Files.newInputStream(file)) {
      root = JsonTrees.read(in); // as ResultsWriter.json().readTree(in)
    } catch (IOException e) {
      throw unreadable(e);
    }
    if (root == null || !root.isObject()) {
      throw error(null, "expected a JSON object");
    }
    return root;
  }

  /**
   * Returns the top-level {@code format} value, or null where the object has none, reading only
   * up to it: the writers put it first, and a report reads the whole file once more anyway.
   */
  JsonNode readFormat() {
    requireFile(file);
    try (InputStream in = Files.newInputStream(file); JsonParser p = JsonTrees.parser(in)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw error(null, "expected a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        if (name.equals("format")) {
          return JsonTrees.node(p);
        }
        p.skipChildren();
      }
      return null;
    } catch (IOException e) {
      throw unreadable(e);
    }
  }

  private InputException unreadable(IOException e) {
    if (e instanceof JsonProcessingException j) {
      long line = j.getLocation() == null ? 0 : j.getLocation().getLineNr();
      return InputException.at(file.toString(), line, null, "not valid JSON: " + j.getOriginalMessage());
    }
    return InputException.at(file.toString(), 0, null, "cannot read: " + e.getMessage());
  }

  void checkFormat(JsonNode root, String expected) {
    JsonNode f = root.get("format");
    if (f == null) {
      throw error(
          "format",
          "missing; not a kvsim result file of a known format (version " + VERSION + " files begin with \"format\": \"" + expected
              + "\", \"version\": " + VERSION + "; older result folders have no marker: run again to rewrite them)");
    }
    if (!f.isTextual() || !f.textValue().equals(expected)) {
      String hint = ResultsReader.RUN_FORMAT.equals(expected) && f.isTextual() && f.textValue().equals(ResultsReader.SWEEP_FORMAT)
          ? " (this is a seed sweep's summary: distributions over seeds, no per-run results or time series)"
          : "";
      throw error("format", "expected \"" + expected + "\", found " + f + hint);
    }
    JsonNode v = root.get("version");
    if (v == null) {
      throw error("version", "missing");
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() != VERSION) {
      throw error("version", v + " is not supported; this kvsim reads version " + VERSION);
    }
  }

  JsonNode object(JsonNode n, String field) {
    if (n == null) {
      throw error(field, "missing");
    }
    if (!n.isObject()) {
      throw error(field, "expected an object, found " + kind(n));
    }
    return n;
  }

  List<JsonNode> array(JsonNode n, String field) {
    if (n == null) {
      throw error(field, "missing");
    }
    if (!n.isArray()) {
      throw error(field, "expected an array, found " + kind(n));
    }
    List<JsonNode> out = new ArrayList<>();
    n.forEach(out::add);
    return out;
  }

  String text(JsonNode n, String field) {
    if (n == null) {
      throw error(field, "missing");
    }
    if (!n.isTextual() || n.textValue().isEmpty()) {
      throw error(field, "expected a non-empty string, found " + n);
    }
    return n.textValue();
  }

  /** A registry name, unique among {@code seen}. */
  String name(JsonNode n, String field, Set<String> seen) {
    String name = text(n, field);
    if (seen.contains(name)) {
      throw error(field, "'" + name + "' appears twice");
    }
    seen.add(name);
    return name;
  }

  long integer(JsonNode n, String field, boolean nonNegative) {
    if (n == null) {
      throw error(field, "missing");
    }
    if (!n.isIntegralNumber() || !n.canConvertToLong() || (nonNegative && n.longValue() < 0)) {
      throw error(field, "expected a" + (nonNegative ? " non-negative" : "n") + " integer, found " + n);
    }
    return n.longValue();
  }

  /** A number or null (the field must be present); {@code whole}: an integer. */
  Double numberOrNull(JsonNode n, String field, boolean whole) {
    if (n == null) {
      throw error(field, "missing");
    }
    if (n.isNull()) {
      return null;
    }
    if (!n.isNumber() || (whole && !n.isIntegralNumber()) || !Double.isFinite(n.doubleValue())) {
      throw error(field, "expected " + (whole ? "an integer" : "a number") + " or null, found " + n);
    }
    return n.doubleValue();
  }

  private static String kind(JsonNode n) {
    return n.getNodeType().toString().toLowerCase(Locale.ROOT);
  }

  void onlyFields(JsonNode o, String at, Set<String> allowed) {
    for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!allowed.contains(k)) {
        throw error(at.isEmpty() ? k : at + "." + k, "not a field of format version " + VERSION);
      }
    }
  }

  /** Converts a JSON value to plain Java values (maps, lists, strings, numbers, booleans, null). */
  Object plain(JsonNode n) {
    return JsonTrees.plain(n);
  }
}

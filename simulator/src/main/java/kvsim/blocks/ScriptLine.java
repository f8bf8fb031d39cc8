package kvsim.blocks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.Set;
import java.util.TreeSet;
import kvsim.core.InputException;

/**
 * One parsed script line with typed, checked access to its fields: every problem becomes an
 * {@link InputException} of the form {@code file:line: field: problem}.
 */
final class ScriptLine {
  private final String source;
  private final long lineNo;
  private final ObjectNode node;
  private final String op;

  ScriptLine(String source, long lineNo, ObjectNode node) {
    this.source = source;
    this.lineNo = lineNo;
    this.node = node;
    JsonNode opNode = node.get("op");
    if (opNode == null) {
      throw error("op", "missing (every line needs an \"op\")");
    }
    if (!opNode.isTextual()) {
      throw error("op", "must be a string, got " + opNode);
    }
    this.op = opNode.asText();
  }

  /** Returns the operation name. */
  String op() {
    return op;
  }

  /** Returns the line number in the script (1-based). */
  long lineNo() {
    return lineNo;
  }

  /** Returns an error about {@code field} on this line. */
  InputException error(String field, String problem) {
    return InputException.at(source, lineNo, field, problem);
  }

  /** Rejects any field not in {@code known} ({@code op} is always allowed). */
  void allowOnly(String... known) {
    Set<String> allowed = new TreeSet<>(Set.of(known));
    allowed.add("op");
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!allowed.contains(f)) {
        throw error(f, "unknown field for op " + op + " (known: " + String.join(", ", allowed) + ")");
      }
    }
  }

  /** Returns whether the field is present. */
  boolean has(String field) {
    return node.has(field);
  }

  /** Returns a required string field. */
  String string(String field) {
    JsonNode v = node.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    if (!v.isTextual()) {
      throw error(field, "must be a string, got " + v);
    }
    if (v.asText().isEmpty()) {
      throw error(field, "must not be empty");
    }
    return v.asText();
  }

  /** Returns an optional string field, or null. */
  String optString(String field) {
    return node.has(field) ? string(field) : null;
  }

  /** Returns a required integer field within [min, max]. */
  int integer(String field, long min, long max) {
    JsonNode v = node.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    return checkedInt(field, v, min, max);
  }

  /** Returns an optional integer field within [min, max], or the default. */
  int optInteger(String field, int defaultValue, long min, long max) {
    return node.has(field) ? integer(field, min, max) : defaultValue;
  }

  private int checkedInt(String field, JsonNode v, long min, long max) {
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw error(field, "must be an integer, got " + v);
    }
    long x = v.asLong();
    if (x < min || x > max) {
      throw error(field, x + " is outside [" + min + ", " + max + "]");
    }
    return (int) x;
  }

  /** Returns a required long field. */
  long longValue(String field, JsonNode v) {
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw error(field, "must be an integer, got " + v);
    }
    return v.asLong();
  }

  /** Returns an optional boolean field, or the default. */
  boolean optBool(String field, boolean defaultValue) {
    JsonNode v = node.get(field);
    if (v == null) {
      return defaultValue;
    }
    if (!v.isBoolean()) {
      throw error(field, "must be true or false, got " + v);
    }
    return v.asBoolean();
  }

  /** Returns an optional number field within [min, max), or the default. */
  double optNumber(String field, double defaultValue, double min, double maxExclusive) {
    JsonNode v = node.get(field);
    if (v == null) {
      return defaultValue;
    }
    if (!v.isNumber()) {
      throw error(field, "must be a number, got " + v);
    }
    double x = v.asDouble();
    if (!(x >= min && x < maxExclusive)) {
      throw error(field, x + " is outside [" + min + ", " + maxExclusive + ")");
    }
    return x;
  }

  /** Returns a required array of integers within [min, max]. */
  int[] intArray(String field, long min, long max) {
    JsonNode v = node.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    if (!v.isArray()) {
      throw error(field, "must be a list of integers, got " + v);
    }
    int[] out = new int[v.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode e = v.get(i);
      if (!e.isIntegralNumber() || !e.canConvertToLong() || e.asLong() < min || e.asLong() > max) {
        throw error(field, "element " + i + " (" + e + ") must be an integer in [" + min + ", " + max + "]");
      }
      out[i] = (int) e.asLong();
    }
    return out;
  }

  /** Returns a required array of longs. */
  long[] longArray(String field) {
    JsonNode v = node.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    if (!v.isArray()) {
      throw error(field, "must be a list of integers, got " + v);
    }
    long[] out = new long[v.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode e = v.get(i);
      if (!e.isIntegralNumber() || !e.canConvertToLong()) {
        throw error(field, "element " + i + " (" + e + ") must be an integer");
      }
      out[i] = e.asLong();
    }
    return out;
  }
}

package kvsim.blocks;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import kvsim.core.InputException;

/**
 * One parsed script line with typed, checked access to its fields: every problem becomes an
 * {@link InputException} of the form {@code file:line: field: problem}.
 *
 * <p>Note [Streaming script lines]: a line is read with Jackson's streaming parser into a map of
 * plain values — a string, a {@code Long}, a {@code Double}, a {@code Boolean}, {@link #NULL}, and
 * a {@code long[]} for an array of integers (a prompt's thousand token ids become one array, not
 * a thousand tree nodes). Anything else (an object, an array that is not all integers, an integer
 * beyond {@code long}) is kept as Jackson's tree node, and a line that is not an object is parsed
 * as a tree, so that every check and message is what it was when the whole line was a tree.
 */
final class ScriptLine {
  /** The value of a field written {@code null}. */
  static final Object NULL = new Object();

  /** Jackson's mapper, made only when a line needs it (Note [Plain lines] in {@link PlainLineParser}). */
  private static final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();
  }

  private final String source;
  private final long lineNo;
  private final Map<String, Object> fields;
  private final String op;

  private ScriptLine(String source, long lineNo, Map<String, Object> fields) {
    this.source = source;
    this.lineNo = lineNo;
    this.fields = fields;
    Object opValue = fields.get("op");
    if (opValue == null) {
      throw error("op", "missing (every line needs an \"op\")");
    }
    if (!(opValue instanceof String s)) {
      throw error("op", "must be a string, got " + describe(opValue));
    }
    this.op = s;
  }

  /** Parses one non-blank line (Note [Streaming script lines]). */
  static ScriptLine parse(String source, long lineNo, String text) {
    return new ScriptLine(source, lineNo, jacksonFields(source, lineNo, text));
  }

  /**
   * Parses one non-blank line of ASCII bytes, {@code buf[offset, offset + length)}: a plain line
   * directly, any other through Jackson (Note [Plain lines] in {@link PlainLineParser}).
   */
  static ScriptLine parse(String source, long lineNo, byte[] buf, int offset, int length) {
    Map<String, Object> plain = PlainLineParser.parse(buf, offset, offset + length, NULL);
    if (plain != null) {
      return new ScriptLine(source, lineNo, plain);
    }
    return parse(source, lineNo, new String(buf, offset, length, StandardCharsets.UTF_8));
  }

  /** The fields Jackson's streaming parser reads from a line (also for tests: no check of {@code op}). */
  static Map<String, Object> jacksonFields(String source, long lineNo, String text) {
    try (JsonParser p = Json.MAPPER.createParser(text)) {
      return fields(source, lineNo, p, text);
    } catch (IOException e) {
      throw new IllegalStateException(e); // reading a string does no I/O
    }
  }

  private static Map<String, Object> fields(String source, long lineNo, JsonParser p, String text) throws IOException {
    try {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        JsonNode tree = Json.MAPPER.readTree(text);
        if (tree == null || !tree.isObject()) {
          throw InputException.at(source, lineNo, null, "each line must be a JSON object, got " + text);
        }
        throw new IllegalStateException("an object line that did not start with {: " + text);
      }
      Map<String, Object> fields = new LinkedHashMap<>();
      for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
        String name = p.currentName();
        fields.put(name, value(p, p.nextToken()));
      }
      if (p.nextToken() != null) {
        throw InputException.at(source, lineNo, null, "text after the JSON object (one object per line)");
      }
      return fields;
    } catch (JsonProcessingException e) {
      throw InputException.at(source, lineNo, null, "malformed JSON: " + kvsim.core.JsonProblem.plain(e.getOriginalMessage()));
    }
  }

  private static Object value(JsonParser p, JsonToken t) throws IOException {
    switch (t) {
      case VALUE_STRING:
        return p.getText();
      case VALUE_NUMBER_INT:
        return p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? p.readValueAsTree() : (Object) p.getLongValue();
      case VALUE_NUMBER_FLOAT:
        return p.getDoubleValue();
      case VALUE_TRUE:
        return Boolean.TRUE;
      case VALUE_FALSE:
        return Boolean.FALSE;
      case VALUE_NULL:
        return NULL;
      case START_ARRAY:
        return array(p);
      default:
        return p.readValueAsTree();
    }
  }

  /** An array of integers as a {@code long[]}; any other array as a tree. */
  private static Object array(JsonParser p) throws IOException {
    long[] values = new long[16];
    int n = 0;
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
      if (n == values.length) {
        values = java.util.Arrays.copyOf(values, n * 2);
      }
      values[n++] = p.getLongValue();
    }
    if (t == JsonToken.END_ARRAY) {
      return java.util.Arrays.copyOf(values, n);
    }
    ArrayNode tree = JsonNodeFactory.instance.arrayNode();
    for (int i = 0; i < n; i++) {
      tree.add(values[i] == (int) values[i] ? JsonNodeFactory.instance.numberNode((int) values[i]) : JsonNodeFactory.instance.numberNode(values[i]));
    }
    for (; t != JsonToken.END_ARRAY; t = p.nextToken()) {
      tree.add((JsonNode) p.readValueAsTree());
    }
    return tree;
  }

  /** A value as JSON text, for messages. */
  private static String describe(Object v) {
    if (v == NULL) {
      return "null";
    }
    if (v instanceof String s) {
      return TextNode.valueOf(s).toString();
    }
    if (v instanceof Double d) {
      return DoubleNode.valueOf(d).toString();
    }
    if (v instanceof long[] a) {
      ArrayNode tree = JsonNodeFactory.instance.arrayNode();
      for (long x : a) {
        tree.add(x);
      }
      return tree.toString();
    }
    return String.valueOf(v);
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
    for (String f : fields.keySet()) {
      if (!f.equals("op") && !contains(known, f)) {
        Set<String> allowed = new TreeSet<>(Set.of(known));
        allowed.add("op");
        throw error(f, "unknown field for op " + op + " (known: " + String.join(", ", allowed) + ")");
      }
    }
  }

  private static boolean contains(String[] names, String name) {
    for (String n : names) {
      if (n.equals(name)) {
        return true;
      }
    }
    return false;
  }

  /** Returns whether the field is present. */
  boolean has(String field) {
    return fields.containsKey(field);
  }

  /** Returns a required string field. */
  String string(String field) {
    Object v = fields.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    if (!(v instanceof String s)) {
      throw error(field, "must be a string, got " + describe(v));
    }
    if (s.isEmpty()) {
      throw error(field, "must not be empty");
    }
    return s;
  }

  /** Returns an optional string field, or null. */
  String optString(String field) {
    return has(field) ? string(field) : null;
  }

  /** Returns a required integer field within [min, max]. */
  int integer(String field, long min, long max) {
    Object v = fields.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    if (!(v instanceof Long x)) {
      throw error(field, "must be an integer, got " + describe(v));
    }
    if (x < min || x > max) {
      throw error(field, x + " is outside [" + min + ", " + max + "]");
    }
    return (int) (long) x;
  }

  /** Returns an optional integer field within [min, max], or the default. */
  int optInteger(String field, int defaultValue, long min, long max) {
    return has(field) ? integer(field, min, max) : defaultValue;
  }

  /** Returns an optional boolean field, or the default. */
  boolean optBool(String field, boolean defaultValue) {
    Object v = fields.get(field);
    if (v == null) {
      return defaultValue;
    }
    if (!(v instanceof Boolean b)) {
      throw error(field, "must be true or false, got " + describe(v));
    }
    return b;
  }

  /** Returns an optional number field within [min, max), or the default. */
  double optNumber(String field, double defaultValue, double min, double maxExclusive) {
    Object v = fields.get(field);
    if (v == null) {
      return defaultValue;
    }
    double x;
    if (v instanceof Long l) {
      x = l;
    } else if (v instanceof Double d) {
      x = d;
    } else if (v instanceof JsonNode n && n.isNumber()) {
      x = n.asDouble();
    } else {
      throw error(field, "must be a number, got " + describe(v));
    }
    if (!(x >= min && x < maxExclusive)) {
      throw error(field, x + " is outside [" + min + ", " + maxExclusive + ")");
    }
    return x;
  }

  /** Returns a required array of integers within [min, max]. */
  int[] intArray(String field, long min, long max) {
    long[] values = longArray(field, min, max, " must be an integer in [" + min + ", " + max + "]");
    int[] out = new int[values.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = (int) values[i];
    }
    return out;
  }

  /** Returns a required array of longs. */
  long[] longArray(String field) {
    return longArray(field, Long.MIN_VALUE, Long.MAX_VALUE, " must be an integer");
  }

  private long[] longArray(String field, long min, long max, String rule) {
    Object v = fields.get(field);
    if (v == null) {
      throw error(field, "missing");
    }
    if (v instanceof long[] values) {
      for (int i = 0; i < values.length; i++) {
        if (values[i] < min || values[i] > max) {
          throw error(field, "element " + i + " (" + values[i] + ")" + rule);
        }
      }
      return values;
    }
    if (!(v instanceof JsonNode n) || !n.isArray()) {
      throw error(field, "must be a list of integers, got " + describe(v));
    }
    // An array holding something other than integers (Note [Streaming script lines]): name the first.
    for (int i = 0; i < n.size(); i++) {
      JsonNode e = n.get(i);
      if (!e.isIntegralNumber() || !e.canConvertToLong() || e.asLong() < min || e.asLong() > max) {
        throw error(field, "element " + i + " (" + e + ")" + rule);
      }
    }
    throw new IllegalStateException("an array of integers kept as a tree: " + n);
  }
}

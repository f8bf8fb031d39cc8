package kvsim.blocks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One output line of a block script under construction: a JSON object whose fields keep the order
 * they were first put in (a field put again keeps its place), written as compact JSON text.
 *
 * <p>Note [Output lines without a tree]: a long script writes tens of megabytes of such lines, and
 * building each as a Jackson tree and serialising it through the data-binding layer took a
 * quarter of a script's run. Values here are the few kinds a line holds (numbers, booleans,
 * strings, null, int arrays, nested objects and arrays), and {@link #toJson} writes exactly what
 * Jackson writes for them: integers in decimal, doubles as {@link Double#toString}, strings with
 * {@code "} and {@code \} escaped, control characters as {@code \b \t \n \f \r} or {@code \}{@code
 * u00XX} (upper-case hex), nothing else escaped. {@code JsonLineTest} checks that against Jackson.
 */
final class JsonLine {
  private final Map<String, Object> fields = new LinkedHashMap<>();

  void put(String field, long value) {
    fields.put(field, value);
  }

  void put(String field, boolean value) {
    fields.put(field, value);
  }

  void put(String field, double value) {
    fields.put(field, value);
  }

  void put(String field, String value) {
    fields.put(field, value);
  }

  void putNull(String field) {
    fields.put(field, null);
  }

  /** Puts a copy of {@code values} as an array of integers. */
  void putInts(String field, int[] values) {
    fields.put(field, Arrays.copyOf(values, values.length));
  }

  JsonLine putObject(String field) {
    JsonLine o = new JsonLine();
    fields.put(field, o);
    return o;
  }

  Array putArray(String field) {
    Array a = new Array();
    fields.put(field, a);
    return a;
  }

  /** A JSON array under construction. */
  static final class Array {
    private final List<Object> items = new ArrayList<>();

    void add(long value) {
      items.add(value);
    }

    void add(String value) {
      items.add(value);
    }

    JsonLine addObject() {
      JsonLine o = new JsonLine();
      items.add(o);
      return o;
    }

    Array addArray() {
      Array a = new Array();
      items.add(a);
      return a;
    }
  }

  /** Returns the line as compact JSON text. */
  String toJson() {
    StringBuilder sb = new StringBuilder(256);
    write(sb);
    return sb.toString();
  }

  private void write(StringBuilder sb) {
    sb.append('{');
    boolean first = true;
    for (Map.Entry<String, Object> e : fields.entrySet()) {
      if (!first) {
        sb.append(',');
      }
      first = false;
      string(sb, e.getKey());
      sb.append(':');
      value(sb, e.getValue());
    }
    sb.append('}');
  }

  private static void value(StringBuilder sb, Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      string(sb, s);
    } else if (v instanceof int[] ints) {
      sb.append('[');
      for (int k = 0; k < ints.length; k++) {
        if (k > 0) {
          sb.append(',');
        }
        sb.append(ints[k]);
      }
      sb.append(']');
    } else if (v instanceof JsonLine o) {
      o.write(sb);
    } else if (v instanceof Array a) {
      sb.append('[');
      for (int k = 0; k < a.items.size(); k++) {
        if (k > 0) {
          sb.append(',');
        }
        value(sb, a.items.get(k));
      }
      sb.append(']');
    } else {
      sb.append(v); // Long, Boolean, Double: Long.toString, Boolean.toString, Double.toString
    }
  }

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private static void string(StringBuilder sb, String s) {
    sb.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\b' -> sb.append("\\b");
        case '\t' -> sb.append("\\t");
        case '\n' -> sb.append("\\n");
        case '\f' -> sb.append("\\f");
        case '\r' -> sb.append("\\r");
        default -> {
          if (c < 0x20) {
            sb.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xF]);
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}

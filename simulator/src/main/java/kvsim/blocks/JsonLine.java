package kvsim.blocks;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One output line of a block script under construction: a JSON object whose fields keep the order
 * they were first put in (a field put again keeps its place), written as compact JSON text.
 *
 * <p>Note [Output lines without a tree]: a long script writes tens of megabytes of such lines, and
 * building each as a Jackson tree and serialising it through the data-binding layer took a
 * quarter of a script's run. Values here are the few kinds a line holds (numbers, booleans,
 * strings, null, int arrays, nested objects and arrays), written straight to UTF-8 bytes ({@link
 * JsonSink}), and {@link #writeTo} writes exactly what
 * Jackson writes for them: integers in decimal, doubles as {@link Double#toString}, strings with
 * {@code "} and {@code \} escaped, control characters as {@code \b \t \n \f \r} or {@code \}{@code
 * u00XX} (upper-case hex), nothing else escaped, encoded as UTF-8 with an unpaired surrogate as
 * {@code ?} (what a UTF-8 writer of Jackson's text writes). {@code JsonLineTest} checks that.
 */
final class JsonLine {
  // The fields in order: a name, and a long (an integer, a boolean as 0 or 1, a double's bits) or
  // an object (a string, an int[], a nested line or array; null for null), by kind.
  private static final byte LONG = 0;
  private static final byte BOOLEAN = 1;
  private static final byte DOUBLE = 2;
  private static final byte OBJECT = 3;
  /** Text already encoded: a byte[] written as it is. */
  private static final byte RAW = 4;

  private String[] names = new String[12];
  /** The names' hash codes, so that a new name is told from the others without comparing text. */
  private int[] hashes = new int[12];
  private byte[] kinds = new byte[12];
  private long[] longs = new long[12];
  private Object[] objects = new Object[12];
  private int size;

  void put(String field, long value) {
    set(field, LONG, value, null);
  }

  void put(String field, boolean value) {
    set(field, BOOLEAN, value ? 1 : 0, null);
  }

  void put(String field, double value) {
    set(field, DOUBLE, Double.doubleToRawLongBits(value), null);
  }

  void put(String field, String value) {
    set(field, OBJECT, 0, value);
  }

  void putNull(String field) {
    set(field, OBJECT, 0, null);
  }

  /** Puts a copy of {@code values} as an array of integers. */
  void putInts(String field, int[] values) {
    set(field, OBJECT, 0, Arrays.copyOf(values, values.length));
  }

  /**
   * Puts an array of integers already encoded by {@link JsonSink#intsJson} (the caller keeps such
   * encodings for arrays it prints again); {@code json} is not copied.
   */
  void putIntsJson(String field, byte[] json) {
    set(field, RAW, 0, json);
  }

  JsonLine putObject(String field) {
    JsonLine o = new JsonLine();
    set(field, OBJECT, 0, o);
    return o;
  }

  Array putArray(String field) {
    Array a = new Array();
    set(field, OBJECT, 0, a);
    return a;
  }

  /** Sets a field: in its place when it was put before, else after the others. */
  private void set(String field, byte kind, long bits, Object object) {
    int hash = field.hashCode();
    int k = 0;
    while (k < size && !(hashes[k] == hash && names[k].equals(field))) {
      k++;
    }
    if (k == size) {
      if (size == names.length) {
        int n = size * 2;
        names = Arrays.copyOf(names, n);
        hashes = Arrays.copyOf(hashes, n);
        kinds = Arrays.copyOf(kinds, n);
        longs = Arrays.copyOf(longs, n);
        objects = Arrays.copyOf(objects, n);
      }
      names[k] = field;
      hashes[k] = hash;
      size++;
    }
    kinds[k] = kind;
    longs[k] = bits;
    objects[k] = object;
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

  /** Returns the line as compact JSON text (an unpaired surrogate written as {@code ?}, as in the file). */
  String toJson() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    JsonSink sink = new JsonSink(bytes);
    writeTo(sink);
    try {
      sink.flush();
    } catch (IOException e) {
      throw new IllegalStateException(e); // a byte array does no I/O
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  /** Writes the line as compact JSON text, without a line end. */
  void writeTo(JsonSink out) {
    out.ascii('{');
    for (int k = 0; k < size; k++) {
      if (k > 0) {
        out.ascii(',');
      }
      if (!out.name(names[k])) {
        string(out, names[k]);
        out.ascii(':');
      }
      switch (kinds[k]) {
        case LONG -> out.decimal(longs[k]);
        case BOOLEAN -> out.ascii(longs[k] != 0 ? "true" : "false");
        case DOUBLE -> out.ascii(Double.toString(Double.longBitsToDouble(longs[k])));
        case RAW -> out.bytes((byte[]) objects[k]);
        default -> value(out, objects[k]);
      }
    }
    out.ascii('}');
  }

  private static void value(JsonSink out, Object v) {
    if (v == null) {
      out.ascii("null");
    } else if (v instanceof String s) {
      string(out, s);
    } else if (v instanceof int[] ints) {
      out.ints(ints);
    } else if (v instanceof Long l) {
      out.decimal(l);
    } else if (v instanceof JsonLine o) {
      o.writeTo(out);
    } else if (v instanceof Array a) {
      out.ascii('[');
      for (int k = 0; k < a.items.size(); k++) {
        if (k > 0) {
          out.ascii(',');
        }
        value(out, a.items.get(k));
      }
      out.ascii(']');
    } else {
      out.ascii(v.toString()); // Boolean, Double: Boolean.toString, Double.toString
    }
  }

  /** Writes a string: printable ASCII needing no escape as it is, anything else through {@link #escaped}. */
  private static void string(JsonSink out, String s) {
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
        out.utf8(escaped(s));
        return;
      }
    }
    out.ascii('"');
    out.ascii(s);
    out.ascii('"');
  }

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  /** The string as a JSON string literal, quotes included. */
  private static String escaped(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 8);
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
    return sb.toString();
  }
}

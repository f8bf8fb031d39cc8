package kvsim.blocks;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads the common shape of a script line straight from its ASCII bytes: one object of fields
 * whose values are strings without escapes, integers of at most 18 digits, numbers with a fraction
 * or exponent of at most 100 characters, {@code true}, {@code false}, {@code null}, and arrays of
 * such integers. It gives up (returns null) on anything else — an escape, a nested object, white
 * space other than blanks and tabs — and on anything malformed; the line then goes to Jackson, so
 * every message about a bad line is Jackson's (Note [Plain lines]).
 *
 * <p>Note [Plain lines]: a block script is tens of thousands of such lines. Creating a Jackson
 * parser for each (its buffers, its symbol table) and walking its tokens took a third of a short
 * script's run before the JIT had warmed up, and loading Jackson at all a tenth of a short one.
 * Values come out as Jackson's path makes them (Note [Streaming script lines] in {@link
 * ScriptLine}): a {@code String}, a {@code Long}, a {@code Double}, a {@code Boolean}, the null
 * marker, a {@code long[]}; a field given twice keeps its first place and its last value. {@code
 * PlainLineParserProperties} checks that against Jackson on random lines.
 */
final class PlainLineParser {
  private final byte[] b;
  private final int end;
  private int i;

  private PlainLineParser(byte[] b, int start, int end) {
    this.b = b;
    this.i = start;
    this.end = end;
  }

  /**
   * Returns the fields of {@code b[start, end)}, or null when the line is not of the plain shape
   * (or is malformed). {@code nullValue} stands for a field written {@code null}.
   */
  static Map<String, Object> parse(byte[] b, int start, int end, Object nullValue) {
    return new PlainLineParser(b, start, end).object(nullValue);
  }

  private Map<String, Object> object(Object nullValue) {
    blanks();
    if (!take('{')) {
      return null;
    }
    Map<String, Object> fields = new LinkedHashMap<>();
    blanks();
    if (!take('}')) {
      while (true) {
        String name = string();
        if (name == null) {
          return null;
        }
        blanks();
        if (!take(':')) {
          return null;
        }
        blanks();
        Object value = value(nullValue);
        if (value == null) {
          return null;
        }
        fields.put(name, value);
        blanks();
        if (take(',')) {
          blanks();
        } else if (take('}')) {
          break;
        } else {
          return null;
        }
      }
    }
    blanks();
    return i == end ? fields : null;
  }

  private Object value(Object nullValue) {
    if (i >= end) {
      return null;
    }
    byte c = b[i];
    if (c == '"') {
      return string();
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      int from = i;
      if (number()) {
        return number;
      }
      i = from;
      return real();
    }
    if (c == '[') {
      return integers();
    }
    if (word("true")) {
      return Boolean.TRUE;
    }
    if (word("false")) {
      return Boolean.FALSE;
    }
    if (word("null")) {
      return nullValue;
    }
    return null;
  }

  /** A string of printable ASCII without escapes; null otherwise. */
  private String string() {
    if (!take('"')) {
      return null;
    }
    int from = i;
    while (i < end) {
      byte c = b[i];
      if (c == '"') {
        String s = new String(b, from, i - from, StandardCharsets.ISO_8859_1);
        i++;
        return s;
      }
      if (c == '\\' || c < 0x20) {
        return null;
      }
      i++;
    }
    return null;
  }

  /**
   * A number with a fraction or an exponent as JSON writes it ({@code -}, an integer part without
   * a leading zero, {@code .} and digits, {@code e} or {@code E}, a sign, digits), of at most 100
   * characters, as a {@code Double}: what {@link Double#parseDouble} reads from its text, as
   * Jackson's path reads it ({@code JsonParser.getDoubleValue}); null for anything else (Note [Plain
   * lines]: a v0 script's watermark needs no Jackson).
   */
  private Double real() {
    int from = i;
    take('-');
    int digits = i;
    while (i < end && b[i] >= '0' && b[i] <= '9') {
      i++;
    }
    if (i == digits || (i - digits > 1 && b[digits] == '0')) {
      return null;
    }
    boolean fraction = take('.');
    if (fraction) {
      int f = i;
      while (i < end && b[i] >= '0' && b[i] <= '9') {
        i++;
      }
      if (i == f) {
        return null;
      }
    }
    boolean exponent = i < end && (b[i] == 'e' || b[i] == 'E');
    if (exponent) {
      i++;
      if (i < end && (b[i] == '+' || b[i] == '-')) {
        i++;
      }
      int e = i;
      while (i < end && b[i] >= '0' && b[i] <= '9') {
        i++;
      }
      if (i == e) {
        return null;
      }
    }
    if (!fraction && !exponent || i - from > 100 || (i < end && !delimiter(b[i]))) {
      return null; // an integer too long for number(), a number too long, something malformed
    }
    return Double.parseDouble(new String(b, from, i - from, StandardCharsets.ISO_8859_1));
  }

  /** The integer last read by {@link #number}. */
  private long number;

  /**
   * Reads an integer as JSON writes it (no leading zero, no fraction, no exponent, at most 18
   * digits) into {@link #number}, without boxing it (a prompt's thousand tokens are a thousand
   * integers); false for anything else.
   */
  private boolean number() {
    boolean negative = take('-');
    int from = i;
    long v = 0;
    while (i < end && b[i] >= '0' && b[i] <= '9') {
      v = v * 10 + (b[i] - '0');
      i++;
    }
    int digits = i - from;
    if (digits == 0 || digits > 18 || (digits > 1 && b[from] == '0')) {
      return false;
    }
    if (i < end && !delimiter(b[i])) {
      return false; // a fraction, an exponent, or something malformed
    }
    number = negative ? -v : v;
    return true;
  }

  private long[] integers() {
    take('[');
    blanks();
    long[] values = new long[16];
    int n = 0;
    if (!take(']')) {
      while (true) {
        if (!(i < end && (b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) && number())) {
          return null;
        }
        if (n == values.length) {
          values = Arrays.copyOf(values, n * 2);
        }
        values[n++] = number;
        blanks();
        if (take(',')) {
          blanks();
        } else if (take(']')) {
          break;
        } else {
          return null;
        }
      }
    }
    return Arrays.copyOf(values, n);
  }

  /** {@code w} here, not followed by a letter or digit ({@code truex} is Jackson's to refuse). */
  private boolean word(String w) {
    int n = w.length();
    if (end - i < n) {
      return false;
    }
    for (int k = 0; k < n; k++) {
      if (b[i + k] != w.charAt(k)) {
        return false;
      }
    }
    if (i + n < end && !delimiter(b[i + n])) {
      return false;
    }
    i += n;
    return true;
  }

  private static boolean delimiter(byte c) {
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t';
  }

  private void blanks() {
    while (i < end && (b[i] == ' ' || b[i] == '\t')) {
      i++;
    }
  }

  private boolean take(char c) {
    if (i < end && b[i] == c) {
      i++;
      return true;
    }
    return false;
  }
}

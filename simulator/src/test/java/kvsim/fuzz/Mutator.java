package kvsim.fuzz;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Turns valid inputs into nearly valid ones for the reader fuzz tests ({@link ReaderFuzzTest}): the
 * byte- and line-level mutations of coverage-guided fuzzers (AFL's havoc stage, libFuzzer's
 * mutators) plus text-aware ones for the formats kvsim reads, which are all text except pickles.
 *
 * <p>Note [Mutations]: one input is a corpus member with 1 to 8 stacked mutations, drawn from
 * <ul>
 *   <li>bytes: bit flip, byte set to an interesting value, insert, delete a range, truncate at any
 *       point, splice the head of one corpus member onto the tail of another;
 *   <li>lines: duplicate, remove, swap, insert a line of another member, repeat a line many times;
 *   <li>tokens: a number replaced by a boundary value (-1, 0, 2^31, 2^63-1, 2^63, 1e309, NaN, ...),
 *       a quoted string's content replaced (empty, 100k characters, escaped newline, control
 *       characters, a word of the target's dictionary), a value replaced by one of another JSON or
 *       YAML type, a dictionary word inserted;
 *   <li>encodings: CRLF line ends, a byte order mark, bytes that are not UTF-8, a NUL, an empty
 *       file, deep nesting.
 * </ul>
 * The random source is a {@link SplittableRandom} seeded per try, so a run is reproducible from its
 * seed and try number.
 */
final class Mutator {
  /** Values that sit on a boundary of some numeric field. */
  private static final String[] NUMBERS = {
    "-1", "0", "1", "2", "-0", "00", "0.0", "1.5", "-1.5", "1e3", "1E-9", "1e309", "-1e309", "NaN", "Infinity", "-Infinity",
    "127", "128", "255", "256", "65535", "65536", "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295",
    "4294967296", "9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999999999999999999999",
    "0x10", "1_000", "+1", ".5", "5.", "1e", "--1", "1..2", "2..1", "0..9223372036854775807", "-9223372036854775808..9223372036854775807"
  };
  /** Replacements for a whole value, of every JSON and YAML type. */
  private static final String[] VALUES = {
    "null", "true", "false", "[]", "{}", "[1]", "[null]", "{\"a\":1}", "\"\"", "\"x\"", "\"5\"", "[[[]]]", "~", "''", "!!binary AA==",
    "&a 1", "*a", "[1, 2, 3]", "{a: 1}", "|\n  x", ">-", "? x", "- x", "1, 2", "\"\\u0000\"", "\"\\n\"", "\"\\ud800\""
  };
  /** Bytes that mean something to one of the formats. */
  private static final byte[] BYTES = {
    0, '\t', '\n', '\r', ' ', '"', '\'', '#', ',', '-', '.', ':', '[', ']', '{', '}', '\\', '0', '9', 'e', '&', '*', '!', '|',
    '>', '?', '%', '@', '`', (byte) 0x7f, (byte) 0x80, (byte) 0xbf, (byte) 0xc0, (byte) 0xc3, (byte) 0xe2, (byte) 0xed,
    (byte) 0xf0, (byte) 0xf8, (byte) 0xfe, (byte) 0xff
  };
  /** Byte sequences that are not UTF-8, or only barely. */
  private static final byte[][] ENCODINGS = {
    {(byte) 0xff, (byte) 0xfe}, {(byte) 0xc3}, {(byte) 0xc0, (byte) 0xaf}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
    {(byte) 0xf4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, {(byte) 0xe2, (byte) 0x80, (byte) 0xa8}, {(byte) 0xc2, (byte) 0x85},
    {(byte) 0xef, (byte) 0xbb, (byte) 0xbf}, {0}, {(byte) 0xfe, (byte) 0xff, 0}
  };

  /** The largest input made: stacked repetitions stop here. */
  private static final int MAX_BYTES = 1 << 20;

  private final List<byte[]> corpus;
  private final String[] dictionary;

  /** A mutator over {@code corpus} (valid inputs) with the target's field names and keywords. */
  Mutator(List<byte[]> corpus, List<String> dictionary) {
    if (corpus.isEmpty()) {
      throw new IllegalArgumentException("empty corpus");
    }
    this.corpus = List.copyOf(corpus);
    this.dictionary = dictionary.toArray(String[]::new);
  }

  /** Returns a mutated corpus member. */
  byte[] next(SplittableRandom rng) {
    byte[] data = corpus.get(rng.nextInt(corpus.size()));
    int n = 1 + Integer.numberOfTrailingZeros(rng.nextInt() | 0x80); // 1 to 8, mostly 1 or 2
    for (int i = 0; i < n; i++) {
      byte[] next = mutate(rng, data);
      if (next.length <= MAX_BYTES) { // stacked repetitions would otherwise grow without bound
        data = next;
      }
    }
    return data;
  }

  private byte[] mutate(SplittableRandom rng, byte[] d) {
    int len = d.length;
    switch (rng.nextInt(26)) {
      case 0 -> { // bit flip
        if (len == 0) {
          return d;
        }
        byte[] c = d.clone();
        int p = rng.nextInt(len);
        c[p] ^= (byte) (1 << rng.nextInt(8));
        return c;
      }
      case 1 -> { // interesting byte
        if (len == 0) {
          return d;
        }
        byte[] c = d.clone();
        c[rng.nextInt(len)] = BYTES[rng.nextInt(BYTES.length)];
        return c;
      }
      case 2 -> { // insert a byte
        return splice(d, rng.nextInt(len + 1), 0, new byte[] {rng.nextBoolean() ? BYTES[rng.nextInt(BYTES.length)] : (byte) rng.nextInt(256)});
      }
      case 3 -> { // delete a range
        if (len == 0) {
          return d;
        }
        int p = rng.nextInt(len);
        return splice(d, p, 1 + rng.nextInt(Math.min(len - p, 1 + rng.nextInt(64))), new byte[0]);
      }
      case 4 -> { // truncate
        return java.util.Arrays.copyOf(d, rng.nextInt(len + 1));
      }
      case 5 -> { // splice two corpus members
        byte[] o = corpus.get(rng.nextInt(corpus.size()));
        int a = rng.nextInt(len + 1);
        int b = rng.nextInt(o.length + 1);
        return concat(java.util.Arrays.copyOf(d, a), java.util.Arrays.copyOfRange(o, b, o.length));
      }
      case 6, 7 -> { // line operations
        return lines(rng, d);
      }
      case 8, 9, 10 -> { // a number replaced by a boundary value
        return replaceNumber(rng, d, NUMBERS[rng.nextInt(NUMBERS.length)]);
      }
      case 11, 12 -> { // a quoted string's content replaced
        return replaceString(rng, d);
      }
      case 13, 14 -> { // a value replaced by one of another type
        return replaceValue(rng, d, rng.nextBoolean() ? VALUES[rng.nextInt(VALUES.length)] : word(rng));
      }
      case 15, 16 -> { // a dictionary word inserted
        String w = word(rng);
        String[] wraps = {w, "\"" + w + "\"", "\"" + w + "\":", "\"" + w + "\":1,", w + ": 1\n", ",\"" + w + "\":\"x\"", w + ","};
        return splice(d, rng.nextInt(len + 1), 0, utf8(wraps[rng.nextInt(wraps.length)]));
      }
      case 17 -> { // CRLF line ends
        return utf8(new String(d, StandardCharsets.ISO_8859_1).replace("\n", "\r\n"), StandardCharsets.ISO_8859_1);
      }
      case 18 -> { // byte order mark
        return concat(new byte[] {(byte) 0xef, (byte) 0xbb, (byte) 0xbf}, d);
      }
      case 19 -> { // bytes that are not UTF-8
        return splice(d, rng.nextInt(len + 1), 0, ENCODINGS[rng.nextInt(ENCODINGS.length)]);
      }
      case 20 -> { // empty, or blank
        String[] blanks = {"", "\n", "\r\n", " ", "\n\n\n", "\uFEFF", "#\n", "---\n", "{}\n", "[]\n", "null\n"};
        return utf8(blanks[rng.nextInt(blanks.length)]);
      }
      case 21 -> { // deep nesting
        int depth = rng.nextBoolean() ? 1 + rng.nextInt(100) : 1000 + rng.nextInt(20_000);
        String open = rng.nextBoolean() ? "[" : "{\"a\":";
        String close = open.equals("[") ? "]" : "}";
        String nest = open.repeat(depth) + "1" + (rng.nextBoolean() ? close.repeat(depth) : "");
        return replaceValue(rng, d, nest);
      }
      case 22 -> { // a huge value
        String[] huge = {"9".repeat(100_000), "\"" + "a".repeat(200_000) + "\"", "[" + "1,".repeat(50_000) + "1]", "1".repeat(400) + "e-400"};
        return replaceValue(rng, d, huge[rng.nextInt(huge.length)]);
      }
      case 23 -> { // a NUL or control character in a string
        String[] ctl = {"\u0000", "\u0001", "\t", "\u001f", "\u007f", "\u2028", "\u0085", "\\u0000", "\\n", "\\r", "\\\"", "\\"};
        return replaceString(rng, d, ctl[rng.nextInt(ctl.length)]);
      }
      default -> { // a token of the dictionary replacing a word
        return replaceWord(rng, d, word(rng));
      }
    }
  }

  private String word(SplittableRandom rng) {
    return dictionary.length == 0 ? "x" : dictionary[rng.nextInt(dictionary.length)];
  }

  private byte[] lines(SplittableRandom rng, byte[] d) {
    List<byte[]> ls = split(d);
    if (ls.isEmpty()) {
      return d;
    }
    int i = rng.nextInt(ls.size());
    int j = rng.nextInt(ls.size());
    switch (rng.nextInt(6)) {
      case 0 -> ls.add(i, ls.get(i));
      case 1 -> ls.remove(i);
      case 2 -> {
        byte[] t = ls.get(i);
        ls.set(i, ls.get(j));
        ls.set(j, t);
      }
      case 3 -> {
        List<byte[]> other = split(corpus.get(rng.nextInt(corpus.size())));
        if (!other.isEmpty()) {
          ls.add(i, other.get(rng.nextInt(other.size())));
        }
      }
      case 4 -> {
        int copies = Math.min(rng.nextBoolean() ? 2 + rng.nextInt(10) : 1000 + rng.nextInt(4000), MAX_BYTES / (ls.get(i).length + 1));
        for (int k = 0; k < copies; k++) {
          ls.add(i, ls.get(i));
        }
      }
      default -> ls.set(i, java.util.Arrays.copyOf(ls.get(i), rng.nextInt(ls.get(i).length + 1)));
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(d.length + 64);
    for (byte[] l : ls) {
      out.writeBytes(l);
    }
    return out.toByteArray();
  }

  /** Splits after each '\n', keeping it. */
  private static List<byte[]> split(byte[] d) {
    List<byte[]> out = new ArrayList<>();
    int start = 0;
    for (int i = 0; i < d.length; i++) {
      if (d[i] == '\n') {
        out.add(java.util.Arrays.copyOfRange(d, start, i + 1));
        start = i + 1;
      }
    }
    if (start < d.length) {
      out.add(java.util.Arrays.copyOfRange(d, start, d.length));
    }
    return out;
  }

  /** Replaces a random run of digits (with a leading '-' and a fraction, if any) by {@code value}. */
  private static byte[] replaceNumber(SplittableRandom rng, byte[] d, String value) {
    int[] span = pick(rng, d, Mutator::numberAt);
    return span == null ? splice(d, rng.nextInt(d.length + 1), 0, utf8(value)) : splice(d, span[0], span[1] - span[0], utf8(value));
  }

  private static int numberAt(byte[] d, int p) {
    if (!(isDigit(d[p]) || (d[p] == '-' && p + 1 < d.length && isDigit(d[p + 1])))) {
      return -1;
    }
    if (p > 0 && (isDigit(d[p - 1]) || d[p - 1] == '.' || d[p - 1] == '-')) {
      return -1;
    }
    int e = p + 1;
    while (e < d.length && (isDigit(d[e]) || d[e] == '.' || d[e] == 'e' || d[e] == 'E')) {
      e++;
    }
    return e;
  }

  private byte[] replaceString(SplittableRandom rng, byte[] d) {
    String[] contents = {
      "", " ", "a".repeat(100_000), "\\n", "\\r\\n", "\\u0000", "\\ud83d\\ude00", "é", "\u00e9\u4e2d", "..", "/", "../../x", "C:\\\\x",
      "%s", "${x}", "null", "-1", "1e309", word(rng), word(rng) + " ", " " + word(rng), word(rng).toUpperCase(java.util.Locale.ROOT)
    };
    return replaceString(rng, d, contents[rng.nextInt(contents.length)]);
  }

  /** Replaces the content of a random "quoted string" by {@code content}. */
  private static byte[] replaceString(SplittableRandom rng, byte[] d, String content) {
    int[] span = pick(rng, d, (b, p) -> {
      if (b[p] != '"') {
        return -1;
      }
      for (int e = p + 1; e < b.length && b[e] != '\n'; e++) {
        if (b[e] == '"' && b[e - 1] != '\\') {
          return e + 1;
        }
      }
      return -1;
    });
    if (span == null) {
      return splice(d, rng.nextInt(d.length + 1), 0, utf8(content));
    }
    return splice(d, span[0] + 1, span[1] - span[0] - 2, utf8(content));
  }

  /** Replaces the value after a random ':' (JSON or YAML) up to the next ',', '}' or line end. */
  private static byte[] replaceValue(SplittableRandom rng, byte[] d, String value) {
    int[] span = pick(rng, d, (b, p) -> {
      if (b[p] != ':') {
        return -1;
      }
      int s = p + 1;
      while (s < b.length && b[s] == ' ') {
        s++;
      }
      int depth = 0;
      int e = s;
      boolean quoted = false;
      for (; e < b.length && b[e] != '\n'; e++) {
        byte c = b[e];
        if (c == '"' && (e == s || b[e - 1] != '\\')) {
          quoted = !quoted;
        } else if (!quoted && (c == '[' || c == '{')) {
          depth++;
        } else if (!quoted && (c == ']' || c == '}')) {
          if (depth == 0) {
            break;
          }
          depth--;
        } else if (!quoted && c == ',' && depth == 0) {
          break;
        }
      }
      return e;
    });
    if (span == null) {
      return splice(d, rng.nextInt(d.length + 1), 0, utf8(value));
    }
    int s = span[0] + 1;
    while (s < span[1] && d[s] == ' ') {
      s++;
    }
    return splice(d, s, span[1] - s, utf8(value));
  }

  /** Replaces a random run of letters, digits, '_' and '-' by {@code word}. */
  private static byte[] replaceWord(SplittableRandom rng, byte[] d, String word) {
    int[] span = pick(rng, d, (b, p) -> {
      if (!isWordByte(b[p]) || (p > 0 && isWordByte(b[p - 1]))) {
        return -1;
      }
      int e = p;
      while (e < b.length && isWordByte(b[e])) {
        e++;
      }
      return e;
    });
    return span == null ? splice(d, rng.nextInt(d.length + 1), 0, utf8(word)) : splice(d, span[0], span[1] - span[0], utf8(word));
  }

  /** Where a token starts at {@code p}: its end, or -1 when none starts there. */
  private interface TokenEnd {
    int at(byte[] d, int p);
  }

  /** Picks a token at random: tries random positions, then scans from one. Returns {start, end} or null. */
  private static int[] pick(SplittableRandom rng, byte[] d, TokenEnd token) {
    if (d.length == 0) {
      return null;
    }
    int start = rng.nextInt(d.length);
    for (int k = 0; k < d.length; k++) {
      int p = (start + k) % d.length;
      int e = token.at(d, p);
      if (e > p) {
        return new int[] {p, e};
      }
    }
    return null;
  }

  private static boolean isDigit(byte b) {
    return b >= '0' && b <= '9';
  }

  private static boolean isWordByte(byte b) {
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || isDigit(b) || b == '_' || b == '-';
  }

  static byte[] splice(byte[] d, int at, int remove, byte[] insert) {
    byte[] out = new byte[d.length - remove + insert.length];
    System.arraycopy(d, 0, out, 0, at);
    System.arraycopy(insert, 0, out, at, insert.length);
    System.arraycopy(d, at + remove, out, at + insert.length, d.length - at - remove);
    return out;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    return splice(a, a.length, 0, b);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] utf8(String s, java.nio.charset.Charset cs) {
    return s.getBytes(cs);
  }
}

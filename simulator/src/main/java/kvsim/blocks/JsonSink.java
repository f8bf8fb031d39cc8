package kvsim.blocks;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Output lines as UTF-8 bytes, gathered in one buffer and handed to an output stream in large
 * pieces: a block script writes tens of megabytes, almost all of it ASCII digits and punctuation,
 * which need no character encoder on the way out (Note [Output lines without a tree] in {@link
 * JsonLine}).
 */
final class JsonSink {
  /** Buffered bytes past which a finished line is handed on. */
  private static final int FLUSH_BYTES = 1 << 16;

  private final OutputStream out;
  private byte[] buf;
  private int len;
  private final byte[] digits = new byte[20];

  JsonSink(OutputStream out) {
    this(out, FLUSH_BYTES + 4096);
  }

  private JsonSink(OutputStream out, int capacity) {
    this.out = out;
    this.buf = new byte[capacity];
  }

  /** Appends one ASCII character. */
  void ascii(char c) {
    ensure(1);
    buf[len++] = (byte) c;
  }

  /** Appends text known to be ASCII. */
  void ascii(String s) {
    int n = s.length();
    ensure(n);
    for (int k = 0; k < n; k++) {
      buf[len++] = (byte) s.charAt(k);
    }
  }

  /** Appends text as UTF-8 (an unpaired surrogate becomes {@code ?}, as an encoding writer writes it). */
  void utf8(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    ensure(b.length);
    System.arraycopy(b, 0, buf, len, b.length);
    len += b.length;
  }

  /** Appends an integer in decimal, as {@link Long#toString(long)} writes it. */
  void decimal(long v) {
    if (v >= 0 && v <= Integer.MAX_VALUE) {
      decimal((int) v);
      return;
    }
    if (v == Long.MIN_VALUE) {
      ascii(Long.toString(v));
      return;
    }
    ensure(20);
    if (v < 0) {
      buf[len++] = '-';
      v = -v;
    }
    int n = 0;
    do {
      digits[n++] = (byte) ('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) {
      buf[len++] = digits[--n];
    }
  }

  // Note [Small decimals]: almost every number a block script prints is a block id or a token
  // count below 10,000, and printing them was the largest part of a script's run while the JIT's
  // first tier runs it (Note [Flags per command] in the launcher), which divides by 10 with a
  // division instruction per digit. A number below 10,000 is copied from a table of their digits;
  // a larger one is cut into such groups, with the zeros a group needs.
  /** The decimal digits of 0 … 9999, four bytes each, right-aligned after zeros. */
  private static final byte[] GROUPS = new byte[4 * 10_000];

  static {
    for (int v = 0; v < 10_000; v++) {
      GROUPS[4 * v] = (byte) ('0' + v / 1000);
      GROUPS[4 * v + 1] = (byte) ('0' + v / 100 % 10);
      GROUPS[4 * v + 2] = (byte) ('0' + v / 10 % 10);
      GROUPS[4 * v + 3] = (byte) ('0' + v % 10);
    }
  }

  /** Appends a non-negative int in decimal. */
  private void decimal(int v) {
    ensure(10);
    if (v < 10_000) {
      group(v, v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : 4);
    } else if (v < 100_000_000) {
      int high = v / 10_000;
      group(high, high < 10 ? 1 : high < 100 ? 2 : high < 1000 ? 3 : 4);
      group(v - high * 10_000, 4);
    } else {
      int high = v / 100_000_000; // 1 … 21
      int rest = v - high * 100_000_000;
      int mid = rest / 10_000;
      group(high, high < 10 ? 1 : 2);
      group(mid, 4);
      group(rest - mid * 10_000, 4);
    }
  }

  /** Appends the last {@code digits} digits of {@code v} (below 10,000). */
  private void group(int v, int digits) {
    for (int k = 4 * v + 4 - digits, end = 4 * v + 4; k < end; k++) {
      buf[len++] = GROUPS[k];
    }
  }

  /** Appends bytes as they are (text already encoded, such as {@link #intsJson}'s). */
  void bytes(byte[] b) {
    ensure(b.length);
    System.arraycopy(b, 0, buf, len, b.length);
    len += b.length;
  }

  // Note [Int arrays in one pass]: the numbers of a script's output are almost all in arrays (a
  // block table of 60 blocks on every decode), and appending each number with its own bounds
  // check and calls cost more than the digits while the JIT's first tier runs it. An array reserves
  // room for its longest form once (11 bytes a number) and writes its digits in one loop; a number
  // outside [0, 10,000) takes decimal's path.
  /** Appends {@code values} as a JSON array of integers, as {@link #decimal} writes each. */
  void ints(int[] values) {
    ensure(2 + 11 * values.length);
    byte[] b = buf;
    int p = len;
    b[p++] = '[';
    for (int k = 0; k < values.length; k++) {
      if (k > 0) {
        b[p++] = ',';
      }
      int v = values[k];
      if (v >= 0 && v < 10_000) {
        int g = 4 * v;
        if (v >= 1000) {
          b[p++] = GROUPS[g];
        }
        if (v >= 100) {
          b[p++] = GROUPS[g + 1];
        }
        if (v >= 10) {
          b[p++] = GROUPS[g + 2];
        }
        b[p++] = GROUPS[g + 3];
      } else {
        len = p;
        decimal((long) v);
        p = len;
        b = buf;
      }
    }
    b[p++] = ']';
    len = p;
  }

  /** Returns {@code values} as the bytes {@link #ints} appends. */
  static byte[] intsJson(int[] values) {
    JsonSink s = new JsonSink(null, 2 + 11 * values.length);
    s.ints(values);
    return Arrays.copyOf(s.buf, s.len);
  }

  // Note [Field names once]: a script of 27,200 operations writes some 300,000 field names, the
  // same twenty or so each time. A name that needs no escape is encoded once, with its quotes and
  // colon, into a small table looked up by the name's hash and compared by identity, then by
  // content; any other name is written by the caller as a string.
  private static final int NAME_SLOTS = 64;
  private final String[] names = new String[NAME_SLOTS];
  private final byte[][] nameBytes = new byte[NAME_SLOTS][];

  /**
   * Appends {@code "name":} for a name of printable ASCII without {@code "} or {@code \}; returns
   * false, appending nothing, for any other name.
   */
  boolean name(String name) {
    int slot = name.hashCode() & (NAME_SLOTS - 1);
    String known = names[slot];
    byte[] b;
    if (known == name || name.equals(known)) {
      b = nameBytes[slot];
    } else {
      int n = name.length();
      b = new byte[n + 3];
      b[0] = '"';
      for (int k = 0; k < n; k++) {
        char c = name.charAt(k);
        if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
          return false;
        }
        b[k + 1] = (byte) c;
      }
      b[n + 1] = '"';
      b[n + 2] = ':';
      names[slot] = name;
      nameBytes[slot] = b;
    }
    bytes(b);
    return true;
  }

  /** Ends a line, handing the buffer on when it is full enough. */
  void endLine() throws IOException {
    ascii('\n');
    if (len >= FLUSH_BYTES) {
      flush();
    }
  }

  /** Hands every buffered byte on and flushes the stream. */
  void flush() throws IOException {
    out.write(buf, 0, len);
    len = 0;
    out.flush();
  }

  private void ensure(int n) {
    if (len + n > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
    }
  }
}

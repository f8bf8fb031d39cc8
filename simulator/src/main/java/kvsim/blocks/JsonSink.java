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
  private byte[] buf = new byte[FLUSH_BYTES + 4096];
  private int len;
  private final byte[] digits = new byte[20];

  JsonSink(OutputStream out) {
    this.out = out;
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

package kvsim.blocks;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * The lines of a stream as byte ranges of one reused buffer, split where {@link
 * java.io.BufferedReader#readLine} splits them: at {@code \n}, {@code \r} or {@code \r\n}, with a
 * last line that has no terminator counted when it is not empty. Only the current line and one
 * read-ahead block are held, so a script of any length streams.
 */
final class ByteLines {
  private static final int READ_BYTES = 1 << 16;

  private final InputStream in;
  private byte[] buf = new byte[READ_BYTES];
  /** Bytes [pos, limit) are read and not yet returned. */
  private int pos;
  private int limit;
  private boolean eof;
  /** The last line ended at a {@code \r}: a {@code \n} right after it belongs to that line. */
  private boolean skipNewline;
  private int start;
  private int end;

  ByteLines(InputStream in) {
    this.in = in;
  }

  /** Moves to the next line; false at the end of the stream. */
  boolean next() throws IOException {
    int scan = pos;
    while (true) {
      if (skipNewline && pos < limit) {
        skipNewline = false;
        if (buf[pos] == '\n') {
          pos++;
          scan = pos;
        }
      }
      for (int k = scan; k < limit; k++) {
        byte b = buf[k];
        if (b == '\n' || b == '\r') {
          start = pos;
          end = k;
          pos = k + 1;
          skipNewline = b == '\r';
          return true;
        }
      }
      scan = limit;
      if (eof) {
        if (pos < limit) {
          start = pos;
          end = limit;
          pos = limit;
          return true;
        }
        return false;
      }
      int offset = pos;
      fill();
      scan -= offset;
    }
  }

  /** Returns the buffer holding the current line. */
  byte[] buffer() {
    return buf;
  }

  /** Returns the index of the current line's first byte. */
  int start() {
    return start;
  }

  /** Returns the index just past the current line's last byte (its terminator excluded). */
  int end() {
    return end;
  }

  /** Moves the unread bytes to the front, grows the buffer when a line fills it, and reads more. */
  private void fill() throws IOException {
    int unread = limit - pos;
    if (pos > 0) {
      System.arraycopy(buf, pos, buf, 0, unread);
    }
    pos = 0;
    limit = unread;
    if (buf.length - limit < READ_BYTES / 2) {
      buf = Arrays.copyOf(buf, buf.length * 2);
    }
    int n = in.read(buf, limit, buf.length - limit);
    if (n < 0) {
      eof = true;
    } else {
      limit += n;
    }
  }
}

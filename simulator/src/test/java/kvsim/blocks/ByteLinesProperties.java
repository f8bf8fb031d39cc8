package kvsim.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** {@link ByteLines} splits a stream where {@link BufferedReader#readLine} splits its text. */
class ByteLinesProperties {
  @Property(tries = 500)
  void splitsAsReadLineDoes(
      @ForAll @Size(max = 400) List<@IntRange(min = 0, max = 5) Integer> pieces,
      @ForAll @IntRange(min = 1, max = 70_000) int longLine,
      @ForAll @IntRange(min = 1, max = 9) int bytesPerRead) throws IOException {
    // Pieces: 0 '\n', 1 '\r', 2 "\r\n", 3 a space, 4 a short token, 5 one long line (past the read block).
    StringBuilder text = new StringBuilder();
    for (int piece : pieces) {
      switch (piece) {
        case 0 -> text.append('\n');
        case 1 -> text.append('\r');
        case 2 -> text.append("\r\n");
        case 3 -> text.append(' ');
        case 4 -> text.append("{\"op\":\"x\"}");
        default -> text.append("7".repeat(longLine));
      }
    }
    byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
    List<String> expected = new ArrayList<>();
    BufferedReader reader = new BufferedReader(new InputStreamReader(new ByteArrayInputStream(bytes), StandardCharsets.UTF_8));
    for (String line = reader.readLine(); line != null; line = reader.readLine()) {
      expected.add(line);
    }
    for (InputStream in : List.of(new ByteArrayInputStream(bytes), new Trickle(bytes, bytesPerRead))) {
      ByteLines lines = new ByteLines(in);
      List<String> actual = new ArrayList<>();
      while (lines.next()) {
        actual.add(new String(lines.buffer(), lines.start(), lines.end() - lines.start(), StandardCharsets.UTF_8));
      }
      assertEquals(expected, actual);
    }
  }

  /** A stream that gives at most a few bytes per read, so lines and {@code \r\n} straddle reads. */
  private static final class Trickle extends InputStream {
    private final byte[] bytes;
    private final int most;
    private int pos;

    Trickle(byte[] bytes, int most) {
      this.bytes = bytes;
      this.most = most;
    }

    @Override
    public int read() {
      return pos < bytes.length ? bytes[pos++] & 0xFF : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (pos == bytes.length) {
        return -1;
      }
      int n = Math.min(Math.min(len, most), bytes.length - pos);
      System.arraycopy(bytes, pos, b, off, n);
      pos += n;
      return n;
    }
  }
}

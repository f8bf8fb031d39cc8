package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import kvsim.core.InputException;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * A block column's varints read by {@link BinaryBlocks.Cursor#unsigned}, which skips the end check
 * away from the column's end (Note [Varints away from the end]), give the values and the one error
 * of a naive decoder that checks every byte: over columns of short and long varints, of runs of
 * continuation bytes as long as 13, and of columns that end inside a varint.
 */
class VarintProperties {
  @Property(tries = 400)
  void readsAsANaiveDecoder(@ForAll long seed, @ForAll @IntRange(min = 0, max = 120) int length) throws IOException {
    Random rnd = new Random(seed);
    byte[] column = new byte[length];
    for (int i = 0; i < length; i++) {
      int kind = rnd.nextInt(10);
      // Mostly final bytes and short varints; now and then a long run of continuation bytes.
      column[i] = (byte) (kind < 4 ? rnd.nextInt(128) : kind < 9 ? 128 + rnd.nextInt(128) : 0x80);
      if (kind == 9) {
        int run = 8 + rnd.nextInt(6);
        for (int k = 1; k < run && i + 1 < length; k++) {
          column[++i] = (byte) (0x80 | rnd.nextInt(128));
        }
      }
    }
    assertEquals(naive(column), cursor(column));
  }

  /** Each value in turn, then the error's problem if the column does not end after a whole varint. */
  private static List<String> naive(byte[] column) {
    List<String> out = new ArrayList<>();
    int p = 0;
    while (p < column.length) {
      long v = 0;
      int shift = 0;
      while (true) {
        if (shift >= 64) {
          out.add("column 0 holds a varint of more than 10 bytes");
          return out;
        }
        if (p >= column.length) {
          out.add("column 0 ends early");
          return out;
        }
        byte x = column[p++];
        v |= (long) (x & 0x7F) << shift;
        shift += 7;
        if (x >= 0) {
          break;
        }
      }
      out.add(Long.toString(v));
    }
    return out;
  }

  private static List<String> cursor(byte[] column) throws IOException {
    ByteArrayOutputStream file = new ByteArrayOutputStream();
    BinaryBlocks.Out out = new BinaryBlocks.Out(file, BinaryTraceFormat.L1_MAGIC, Map.of("format", L1Format.NAME, "version", L1Format.VERSION), 1);
    for (byte b : column) {
      out.columns().putByte(0, b);
    }
    out.flushBlock(1);
    out.finish();
    BinaryBlocks.In in =
        new BinaryBlocks.In("t.kvt", new ByteArrayInputStream(file.toByteArray()), BinaryTraceFormat.L1_MAGIC, L1Format.NAME, L1Format.VERSION, "L1 trace", "event");
    BinaryBlocks.Cursor c = in.nextBlock(null, 1);
    List<String> values = new ArrayList<>();
    String prefix = "t.kvt: corrupt block 0 (events from 1): ";
    try {
      while (c.pos[0] < c.end[0]) {
        values.add(Long.toString(c.unsigned(0)));
      }
    } catch (InputException e) {
      assertEquals(prefix, e.getMessage().substring(0, prefix.length()), e.getMessage());
      values.add(e.getMessage().substring(prefix.length()));
    }
    return values;
  }
}

package kvsim.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;
import kvsim.core.InputException;

/**
 * The framing both binary trace formats share ({@link BinaryTraceFormat}): the file header (magic,
 * layout version, the JSONL header object), blocks of records stored column by column, each with
 * its record count, payload length and CRC32C, and the end block with the total record count.
 * {@link Out} writes it, {@link In} reads and checks it, and {@link Columns} and {@link Cursor}
 * are the growable byte columns and their readers with the varint codes.
 */
final class BinaryBlocks {
  private BinaryBlocks() {}

  /** Growable byte columns of one block, written with varints. */
  static final class Columns {
    final byte[][] data;
    final int[] length;

    Columns(int count) {
      data = new byte[count][];
      length = new int[count];
      for (int i = 0; i < count; i++) {
        data[i] = new byte[1 << 12];
      }
    }

    void clear() {
      Arrays.fill(length, 0);
    }

    private void ensure(int c, int more) {
      if (length[c] + more > data[c].length) {
        data[c] = Arrays.copyOf(data[c], Math.max(data[c].length * 2, length[c] + more));
      }
    }

    void putByte(int c, int b) {
      ensure(c, 1);
      data[c][length[c]++] = (byte) b;
    }

    /** Writes {@code v} as an unsigned LEB128 varint (7 bits a byte, low bits first). */
    void putUnsigned(int c, long v) {
      ensure(c, 10);
      byte[] d = data[c];
      int p = length[c];
      while ((v & ~0x7FL) != 0) {
        d[p++] = (byte) ((v & 0x7F) | 0x80);
        v >>>= 7;
      }
      d[p++] = (byte) v;
      length[c] = p;
    }

    /** Writes {@code v} zigzag-encoded (small magnitudes of either sign stay short). */
    void putSigned(int c, long v) {
      putUnsigned(c, (v << 1) ^ (v >> 63));
    }

    void putBytes(int c, byte[] b) {
      putUnsigned(c, b.length);
      ensure(c, b.length);
      System.arraycopy(b, 0, data[c], length[c], b.length);
      length[c] += b.length;
    }
  }

  /** A per-block string table written into one column: a reference, or the next new string inline. */
  static final class StringTable {
    private final Map<String, Integer> index = new LinkedHashMap<>();

    void clear() {
      index.clear();
    }

    void put(Columns cols, int c, String s) {
      Integer i = index.get(s);
      if (i != null) {
        cols.putUnsigned(c, i);
      } else {
        int next = index.size();
        index.put(s, next);
        cols.putUnsigned(c, next);
        cols.putBytes(c, s.getBytes(StandardCharsets.UTF_8));
      }
    }
  }

  /** Writes the file header, then blocks, then the end block. */
  static final class Out {
    private final OutputStream out;
    private final Columns cols;
    private final byte[] frame = new byte[16];
    private final CRC32C crc = new CRC32C();
    private long total;

    Out(OutputStream out, byte[] magic, Map<String, Object> header, int columns) throws IOException {
      this.out = out;
      this.cols = new Columns(columns);
      byte[] json = JsonlReader.HEADER_JSON.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
      out.write(magic);
      putInt(frame, 0, BinaryTraceFormat.LAYOUT_VERSION);
      putInt(frame, 4, json.length);
      out.write(frame, 0, 8);
      out.write(json);
      crc.reset();
      crc.update(json);
      putInt(frame, 0, (int) crc.getValue());
      out.write(frame, 0, 4);
    }

    Columns columns() {
      return cols;
    }

    /** Writes the block of {@code records} records held in the columns, and clears them. */
    void flushBlock(int records) throws IOException {
      if (records == 0) {
        return;
      }
      Columns c = cols;
      // The payload: the column count, each column's length, then the columns.
      Columns lengths = new Columns(1);
      lengths.putUnsigned(0, c.data.length);
      for (int i = 0; i < c.data.length; i++) {
        lengths.putUnsigned(0, c.length[i]);
      }
      int payload = lengths.length[0];
      for (int len : c.length) {
        payload += len;
      }
      crc.reset();
      crc.update(lengths.data[0], 0, lengths.length[0]);
      for (int i = 0; i < c.data.length; i++) {
        crc.update(c.data[i], 0, c.length[i]);
      }
      putInt(frame, 0, records);
      putInt(frame, 4, payload);
      putInt(frame, 8, (int) crc.getValue());
      out.write(frame, 0, 12);
      out.write(lengths.data[0], 0, lengths.length[0]);
      for (int i = 0; i < c.data.length; i++) {
        out.write(c.data[i], 0, c.length[i]);
      }
      total += records;
      c.clear();
    }

    /** Writes the end block: a record count of 0, then the file's total record count. */
    void finish() throws IOException {
      putInt(frame, 0, 0);
      putLong(frame, 4, total);
      out.write(frame, 0, 12);
      out.flush();
    }
  }

  /** Reads and checks the file header and the blocks; every problem is one line naming the file and the block. */
  static final class In implements AutoCloseable {
    final String source;
    private final InputStream in;
    private final String recordWord;
    final Map<String, Object> header;
    private final CRC32C crc = new CRC32C();
    private final byte[] frame = new byte[16];
    private byte[] payload = new byte[1 << 16];
    private long blocks;
    private long recordsBefore;
    private boolean ended;

    /**
     * Reads the header of {@code in}, which must start with {@code magic}; the JSON header must name
     * {@code formatName} and {@code version} as its JSONL twin's does.
     */
    In(String source, InputStream in, byte[] magic, String formatName, int version, String noun, String recordWord) throws IOException {
      this.source = source;
      this.in = in;
      this.recordWord = recordWord;
      try {
        byte[] m = new byte[magic.length];
        int n = in.readNBytes(m, 0, m.length);
        if (n < m.length || !Arrays.equals(m, magic)) {
          throw new InputException(source + ": not a binary " + noun + " (the file does not start with \"" + new String(magic, StandardCharsets.US_ASCII) + "\")");
        }
        readFully(frame, 8, "the file header");
        int layout = getInt(frame, 0);
        if (layout != BinaryTraceFormat.LAYOUT_VERSION) {
          throw new InputException(source + ": unsupported binary layout version " + Integer.toUnsignedString(layout) + " (this kvsim reads version "
              + BinaryTraceFormat.LAYOUT_VERSION + ")");
        }
        int len = getInt(frame, 4);
        if (len < 0 || len > BinaryTraceFormat.MAX_HEADER_BYTES) {
          throw new InputException(source + ": corrupt file header: header length " + Integer.toUnsignedString(len) + " bytes (at most "
              + BinaryTraceFormat.MAX_HEADER_BYTES + ")");
        }
        byte[] json = new byte[len];
        readFully(json, len, "the file header");
        readFully(frame, 4, "the file header");
        crc.reset();
        crc.update(json);
        if ((int) crc.getValue() != getInt(frame, 0)) {
          throw new InputException(source + ": corrupt file header: checksum mismatch");
        }
        Map<String, Object> h;
        try {
          @SuppressWarnings("unchecked")
          Map<String, Object> read = JsonlReader.HEADER_JSON.readValue(json, LinkedHashMap.class);
          h = read;
        } catch (JsonProcessingException e) {
          throw new InputException(source + ": corrupt file header: not a JSON object: " + JsonlReader.plainWords(e.getOriginalMessage()));
        }
        if (h == null || !formatName.equals(h.get("format"))) {
          throw new InputException(source + ": header: format: expected \"" + formatName + "\", got " + (h == null ? "nothing" : h.get("format")));
        }
        if (!(h.get("version") instanceof Integer v) || v != version) {
          throw new InputException(source + ": header: version: unsupported " + noun + " version " + h.get("version") + " (this kvsim reads version " + version + ")");
        }
        this.header = Collections.unmodifiableMap(h);
      } catch (IOException | RuntimeException e) {
        in.close();
        throw e;
      }
    }

    private void readFully(byte[] b, int len, String what) throws IOException {
      int n = in.readNBytes(b, 0, len);
      if (n < len) {
        throw new InputException(source + ": truncated: the file ends inside " + what);
      }
    }

    private String block() {
      return "block " + blocks + " (" + recordWord + "s from " + (recordsBefore + 1) + ")";
    }

    /**
     * Reads the next block's payload into a cursor over its {@code columns} columns, or returns null
     * after the end block; the record count is the cursor's {@link Cursor#records}.
     */
    Cursor nextBlock(Cursor reuse, int columns) throws IOException {
      if (ended) {
        return null;
      }
      int n = in.readNBytes(frame, 0, 12);
      if (n < 12) {
        throw new InputException(source + ": truncated: the file ends " + (n == 0 ? "before" : "inside the frame of") + " " + block()
            + " (no end block: the writer did not finish)");
      }
      int records = getInt(frame, 0);
      if (records == 0) {
        long total = getLong(frame, 4);
        if (total != recordsBefore) {
          throw new InputException(source + ": corrupt end block: it counts " + total + " " + recordWord + "s, the blocks held " + recordsBefore);
        }
        if (in.read() != -1) {
          throw new InputException(source + ": corrupt: bytes after the end block");
        }
        ended = true;
        return null;
      }
      int len = getInt(frame, 4);
      if (records < 0 || records > BinaryTraceFormat.MAX_BLOCK_RECORDS || len < 0 || len > BinaryTraceFormat.MAX_BLOCK_BYTES) {
        throw new InputException(source + ": corrupt " + block() + ": " + Integer.toUnsignedString(records) + " " + recordWord + "s in "
            + Integer.toUnsignedString(len) + " bytes (at most " + BinaryTraceFormat.MAX_BLOCK_RECORDS + " in " + BinaryTraceFormat.MAX_BLOCK_BYTES + ")");
      }
      if (payload.length < len) {
        payload = new byte[Math.max(len, payload.length * 2)];
      }
      int got = in.readNBytes(payload, 0, len);
      if (got < len) {
        throw new InputException(source + ": truncated: the file ends inside " + block() + " (" + got + " of " + len + " bytes)");
      }
      crc.reset();
      crc.update(payload, 0, len);
      if ((int) crc.getValue() != getInt(frame, 8)) {
        throw new InputException(source + ": corrupt " + block() + ": checksum mismatch");
      }
      Cursor c = reuse == null ? new Cursor(columns) : reuse;
      c.reset(this, payload, len, records, recordsBefore, block(), columns);
      recordsBefore += records;
      blocks++;
      return c;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  /** Reads the columns of one block; running off a column's end is a one-line error naming the block. */
  static final class Cursor {
    byte[] buf;
    final int[] pos;
    final int[] end;
    int records;
    long recordsBefore;
    private String where;
    private String source;
    private final String[][] strings;
    private final int[] stringCount;

    Cursor(int columns) {
      pos = new int[columns];
      end = new int[columns];
      strings = new String[columns][];
      stringCount = new int[columns];
    }

    void reset(In in, byte[] payload, int len, int records, long recordsBefore, String where, int columns) {
      this.buf = payload;
      this.records = records;
      this.recordsBefore = recordsBefore;
      this.where = where;
      this.source = in.source;
      Arrays.fill(stringCount, 0);
      // The directory: the column count and each column's length.
      pos[0] = 0;
      end[0] = len;
      long count = unsigned(0);
      if (count != columns) {
        throw corrupt("it has " + count + " columns, this format has " + columns);
      }
      long[] lengths = new long[columns];
      for (int i = 0; i < columns; i++) {
        lengths[i] = unsigned(0);
      }
      int p = pos[0];
      for (int i = 0; i < columns; i++) {
        if (lengths[i] > len - p) {
          throw corrupt("column " + i + " runs past the block's end");
        }
        pos[i] = p;
        end[i] = p + (int) lengths[i];
        p = end[i];
      }
      if (p != len) {
        throw corrupt((len - p) + " bytes after the last column");
      }
    }

    InputException corrupt(String what) {
      return new InputException(source + ": corrupt " + where + ": " + what);
    }

    int readByte(int c) {
      int p = pos[c];
      if (p >= end[c]) {
        throw corrupt("column " + c + " ends early");
      }
      pos[c] = p + 1;
      return buf[p] & 0xFF;
    }

    /**
     * Reads an unsigned varint from column {@code c}. Where ten bytes are left in the column, the
     * longest a varint may be, the loop needs no check of the column's end (Note [Varints away
     * from the end]).
     */
    long unsigned(int c) {
      int p = pos[c];
      if (end[c] - p < 10) {
        return unsignedNearEnd(c);
      }
      byte[] b = buf;
      byte x = b[p];
      if (x >= 0) {
        pos[c] = p + 1;
        return x;
      }
      long v = x & 0x7F;
      for (int shift = 7; shift < 64; shift += 7) {
        x = b[++p];
        v |= (long) (x & 0x7F) << shift;
        if (x >= 0) {
          pos[c] = p + 1;
          return v;
        }
      }
      throw tooLong(c);
    }

    /**
     * Note [Varints away from the end]: a varint is at most ten bytes, so one that starts ten or
     * more bytes before its column's end cannot run past it, and its loop checks only the
     * continuation bit; the last few varints of a column go through this loop, which checks the end
     * at every byte. Both give the same values and the same errors ({@code VarintProperties}).
     * Decoding was a seventh of a binary trace's warm replay in async-profiler samples.
     */
    private long unsignedNearEnd(int c) {
      byte[] b = buf;
      int p = pos[c];
      int e = end[c];
      long v = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        if (p >= e) {
          throw corrupt("column " + c + " ends early");
        }
        byte x = b[p++];
        v |= (long) (x & 0x7F) << shift;
        if (x >= 0) {
          pos[c] = p;
          return v;
        }
      }
      throw tooLong(c);
    }

    private InputException tooLong(int c) {
      return corrupt("column " + c + " holds a varint of more than 10 bytes");
    }

    long signed(int c) {
      long u = unsigned(c);
      return (u >>> 1) ^ -(u & 1);
    }

    String string(int c) {
      long ref = unsigned(c);
      String[] table = strings[c];
      int n = stringCount[c];
      if (ref < n) {
        return table[(int) ref];
      }
      if (ref != n) {
        throw corrupt("column " + c + " refers to string " + ref + " of " + n);
      }
      long len = unsigned(c);
      if (len > end[c] - pos[c]) {
        throw corrupt("column " + c + " ends early");
      }
      String s = new String(buf, pos[c], (int) len, StandardCharsets.UTF_8);
      pos[c] += (int) len;
      if (table == null || n == table.length) {
        strings[c] = table = table == null ? new String[8] : Arrays.copyOf(table, n * 2);
      }
      table[n] = s;
      stringCount[c] = n + 1;
      return s;
    }

    /** Checks, after a block's last record, that every column was read to its end. */
    void finish() {
      for (int c = 0; c < pos.length; c++) {
        if (pos[c] != end[c]) {
          throw corrupt("column " + c + " has " + (end[c] - pos[c]) + " bytes left after the block's last record");
        }
      }
    }
  }

  /** Opens {@code file} buffered, with one-line errors for a folder or a missing file. */
  static InputStream openFile(Path file, String noun) throws IOException {
    if (Files.isDirectory(file)) {
      throw new InputException(file + ": is a folder, not a " + noun + " file");
    }
    try {
      return new BufferedInputStream(Files.newInputStream(file), 1 << 16);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    }
  }

  static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  static void putLong(byte[] b, int at, long v) {
    putInt(b, at, (int) (v >>> 32));
    putInt(b, at + 4, (int) v);
  }

  static int getInt(byte[] b, int at) {
    return (b[at] & 0xFF) << 24 | (b[at + 1] & 0xFF) << 16 | (b[at + 2] & 0xFF) << 8 | (b[at + 3] & 0xFF);
  }

  static long getLong(byte[] b, int at) {
    return (long) getInt(b, at) << 32 | (getInt(b, at + 4) & 0xFFFFFFFFL);
  }
}

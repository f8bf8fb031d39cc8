package kvsim.trace;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import kvsim.core.InputException;

/**
 * The binary twins of the JSONL trace formats ({@link L1Format}, {@link RequestFormat}): the same
 * header object and the same records, stored column by column in checksummed blocks, so a reader
 * decodes a block with a few varint loops instead of parsing a line of JSON per record. The byte
 * layout, version 1, is specified in {@code results/SCHEMA.md} ("Binary traces").
 *
 * <p>Note [Binary trace files]: a reader recognises a binary trace by its first eight bytes (the
 * magic, {@code KVSIM-L1} or {@code KVSIM-RQ}), never by its name, so every command that reads a
 * trace reads either form. A writer chooses binary by the output's extension ({@value
 * #L1_EXTENSION} for an L1 trace, {@value #REQUEST_EXTENSION} for a request trace) because every
 * command that writes a trace already names its output with {@code -o} or {@code --emit-trace}, and
 * {@code --format} of {@code generate requests} already chooses between kvsim and Azure's CSV.
 *
 * <p>Note [Binary layout choices]: the records of a block are split into columns (op codes and
 * flags, time deltas, id deltas, sizes, tags, streams, addresses, annotation actions; for requests
 * flags, id and time deltas, lengths, samples, beam widths, hash counts, hash deltas), each a run
 * of LEB128 varints (zigzag where a delta may be negative), with block-local bases so a block
 * decodes alone. Strings (tags, actions) are a per-block table: a reference, or the next new
 * string inline. A block holds at most {@value #BLOCK_RECORDS} records and is framed by its record
 * count, payload length and CRC32C; an end block carries the file's record count, so a file cut at
 * a block boundary is told from a whole one. A reader holds one block at a time: memory stays flat
 * whatever the trace's length.
 */
public final class BinaryTraceFormat {
  /** The layout version this kvsim reads and writes (the JSON header's {@code version} is the format's). */
  public static final int LAYOUT_VERSION = 1;
  /** The first bytes of a binary L1 trace. */
  static final byte[] L1_MAGIC = "KVSIM-L1".getBytes(StandardCharsets.US_ASCII);
  /** The first bytes of a binary request trace. */
  static final byte[] REQUEST_MAGIC = "KVSIM-RQ".getBytes(StandardCharsets.US_ASCII);
  /** The extension that makes a writer write a binary L1 trace. */
  public static final String L1_EXTENSION = ".kvt";
  /** The extension that makes a writer write a binary request trace. */
  public static final String REQUEST_EXTENSION = ".kvr";
  /** Records a writer puts in one block. */
  public static final int BLOCK_RECORDS = 1 << 16;
  /** Records a reader accepts in one block (a writer of another build may choose other blocks). */
  static final int MAX_BLOCK_RECORDS = 1 << 20;
  /** Payload bytes a reader accepts in one block. */
  static final int MAX_BLOCK_BYTES = 1 << 30;
  /** Header bytes a reader accepts. */
  static final int MAX_HEADER_BYTES = 1 << 24;

  private BinaryTraceFormat() {}

  /** What a file's first bytes say it is. */
  public enum Kind {
    L1_BINARY,
    REQUESTS_BINARY,
    /** Starts with {@code KVSIM-} but neither magic: damaged, or of a kind this kvsim does not know. */
    UNKNOWN_BINARY,
    OTHER
  }

  /** Returns what {@code file} is by its magic (Note [Binary trace files]); a file that cannot be read is {@code OTHER}. */
  public static Kind sniff(Path file) {
    if (!Files.isRegularFile(file)) {
      return Kind.OTHER;
    }
    try (InputStream in = Files.newInputStream(file)) {
      byte[] head = in.readNBytes(L1_MAGIC.length);
      if (Arrays.equals(head, L1_MAGIC)) {
        return Kind.L1_BINARY;
      }
      if (Arrays.equals(head, REQUEST_MAGIC)) {
        return Kind.REQUESTS_BINARY;
      }
      return new String(head, StandardCharsets.US_ASCII).startsWith("KVSIM-") ? Kind.UNKNOWN_BINARY : Kind.OTHER;
    } catch (IOException e) {
      return Kind.OTHER;
    }
  }

  /** Returns whether an L1 trace written at {@code file} is binary: its name ends in {@value #L1_EXTENSION}. */
  public static boolean writesL1Binary(Path file) {
    return hasExtension(file, L1_EXTENSION);
  }

  /** Returns whether a request trace written at {@code file} is binary: its name ends in {@value #REQUEST_EXTENSION}. */
  public static boolean writesRequestsBinary(Path file) {
    return hasExtension(file, REQUEST_EXTENSION);
  }

  /** Refuses an L1 trace output named like a request trace ({@value #REQUEST_EXTENSION}). */
  public static void checkL1Output(Path file) {
    if (hasExtension(file, REQUEST_EXTENSION)) {
      throw new InputException(file + ": " + REQUEST_EXTENSION + " names a binary request trace; name an L1 trace " + L1_EXTENSION + " (binary) or .jsonl");
    }
  }

  /** Refuses a request trace output named like an L1 trace ({@value #L1_EXTENSION}). */
  public static void checkRequestOutput(Path file) {
    if (hasExtension(file, L1_EXTENSION)) {
      throw new InputException(file + ": " + L1_EXTENSION + " names a binary L1 trace; name a request trace " + REQUEST_EXTENSION + " (binary) or .jsonl");
    }
  }

  /** The one-line refusal of a file of {@link Kind#UNKNOWN_BINARY}. */
  static InputException unknownBinary(Path file) {
    return new InputException(file + ": not a binary trace kvsim knows (it starts with \"KVSIM-\" but neither \"KVSIM-L1\" nor \"KVSIM-RQ\")");
  }

  static boolean hasExtension(Path file, String ext) {
    Path name = file.getFileName();
    return name != null && name.toString().toLowerCase(Locale.ROOT).endsWith(ext);
  }
}

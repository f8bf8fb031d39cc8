package kvsim.trace;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;

/**
 * Writes a binary L1 trace ({@link BinaryTraceFormat}): the header object as the JSONL writer
 * would write it, then the events in blocks of {@value BinaryTraceFormat#BLOCK_RECORDS}, column by
 * column (Note [Binary layout choices] on {@link BinaryTraceFormat}), then the end block on
 * {@link #finish}. Times must not decrease, as in every L1 trace.
 */
final class L1BinaryWriter {
  static final int OPS = 0;
  static final int TIME = 1;
  static final int ID = 2;
  static final int SIZE = 3;
  static final int TAG = 4;
  static final int STREAM = 5;
  static final int ADDR = 6;
  static final int ACTION = 7;
  static final int COLUMNS = 8;

  /** Op code bits: the low two bits are the op; the rest flag optional columns. */
  static final int OP_ALLOC = 0;
  static final int OP_FREE = 1;
  static final int OP_ANNOTATE = 2;
  static final int HAS_ADDR = 4;
  static final int HAS_STREAM = 8;
  static final int SPLITTABLE = 16;
  static final int HAS_TAG = 32;
  static final int KNOWN_BITS = 63;

  private final BinaryBlocks.Out out;
  private final BinaryBlocks.Columns cols;
  private final BinaryBlocks.StringTable tags = new BinaryBlocks.StringTable();
  private final BinaryBlocks.StringTable actions = new BinaryBlocks.StringTable();
  private final int blockRecords;
  private int inBlock;
  private long lastTimeNanos;
  private long lastId;
  private boolean finished;

  /** Starts a binary trace on {@code out} with the complete header object (format and version first). */
  L1BinaryWriter(OutputStream out, Map<String, Object> header) throws IOException {
    this(out, header, BinaryTraceFormat.BLOCK_RECORDS);
  }

  /** Starts a binary trace with blocks of {@code blockRecords} events (tests use small blocks). */
  L1BinaryWriter(OutputStream out, Map<String, Object> header, int blockRecords) throws IOException {
    this.blockRecords = blockRecords;
    this.out = new BinaryBlocks.Out(out, BinaryTraceFormat.L1_MAGIC, header, COLUMNS);
    this.cols = this.out.columns();
  }

  void write(TraceEvent e) throws IOException {
    if (finished) {
      throw new IllegalStateException("the trace is finished");
    }
    if (e.timeNanos() < lastTimeNanos) {
      throw new IllegalArgumentException("time goes backwards: " + e.timeNanos() + " ns after " + lastTimeNanos + " ns");
    }
    BinaryBlocks.Columns c = cols;
    long base = inBlock == 0 ? 0 : lastTimeNanos;
    int code = switch (e.op()) {
      case ALLOC -> OP_ALLOC | (e.splittable() ? SPLITTABLE : 0) | (e.tag() != kvsim.core.Tag.KV ? HAS_TAG : 0);
      case FREE -> OP_FREE;
      case ANNOTATE -> OP_ANNOTATE;
    };
    if (e.addressBytes() >= 0) {
      code |= HAS_ADDR;
    }
    if (e.stream() != 0) {
      code |= HAS_STREAM;
    }
    c.putByte(OPS, code);
    c.putUnsigned(TIME, e.timeNanos() - base);
    lastTimeNanos = e.timeNanos();
    switch (e.op()) {
      case ALLOC -> {
        putId(e.id());
        c.putUnsigned(SIZE, e.sizeBytes());
        if ((code & HAS_TAG) != 0) {
          tags.put(c, TAG, e.tag().name());
        }
      }
      case FREE -> putId(e.id());
      case ANNOTATE -> {
        c.putUnsigned(SIZE, e.sizeBytes());
        actions.put(c, ACTION, e.action());
      }
    }
    if ((code & HAS_STREAM) != 0) {
      c.putSigned(STREAM, e.stream());
    }
    if ((code & HAS_ADDR) != 0) {
      c.putUnsigned(ADDR, e.addressBytes());
    }
    if (++inBlock == blockRecords) {
      flushBlock();
    }
  }

  private void putId(long id) {
    cols.putSigned(ID, id - lastId);
    lastId = id;
  }

  private void flushBlock() throws IOException {
    out.flushBlock(inBlock);
    inBlock = 0;
    lastId = 0;
    tags.clear();
    actions.clear();
  }

  /** Writes the last block and the end block; the trace is complete once this returns. */
  void finish() throws IOException {
    if (!finished) {
      flushBlock();
      out.finish();
      finished = true;
    }
  }
}

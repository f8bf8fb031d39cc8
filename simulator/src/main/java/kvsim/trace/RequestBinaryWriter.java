package kvsim.trace;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;

/**
 * Writes a binary request trace ({@link BinaryTraceFormat}): the header object as {@link
 * RequestTraceWriter} would write it, then the requests in blocks, column by column (Note [Binary
 * layout choices] on {@link BinaryTraceFormat}); {@link #finish} writes the end block.
 */
public final class RequestBinaryWriter implements RequestWriter {
  static final int FLAGS = 0;
  static final int ID = 1;
  static final int TIME = 2;
  static final int PROMPT = 3;
  static final int OUTPUT = 4;
  static final int SAMPLES = 5;
  static final int BEAM = 6;
  static final int HASH_COUNT = 7;
  static final int HASHES = 8;
  static final int COLUMNS = 9;

  static final int HAS_HASHES = 1;
  static final int HAS_SAMPLES = 2;
  static final int HAS_BEAM = 4;
  static final int KNOWN_BITS = 7;

  private final BinaryBlocks.Out out;
  private final BinaryBlocks.Columns cols;
  private final int blockRecords;
  private int inBlock;
  private long lastId;
  private long lastTimeNanos;
  private long requests;
  private boolean finished;

  /**
   * Starts a binary request trace on {@code out} with the header {@link RequestTraceWriter} would
   * write for {@code headerFields} and {@code hashBlockTokens}.
   */
  public RequestBinaryWriter(OutputStream out, Map<String, Object> headerFields, int hashBlockTokens) throws IOException {
    this(out, headerFields, hashBlockTokens, BinaryTraceFormat.BLOCK_RECORDS);
  }

  /** Starts a binary request trace with blocks of {@code blockRecords} requests (tests use small blocks). */
  RequestBinaryWriter(OutputStream out, Map<String, Object> headerFields, int hashBlockTokens, int blockRecords) throws IOException {
    this.blockRecords = blockRecords;
    this.out = new BinaryBlocks.Out(out, BinaryTraceFormat.REQUEST_MAGIC, RequestTraceWriter.header(headerFields, hashBlockTokens), COLUMNS);
    this.cols = this.out.columns();
  }

  @Override
  public void write(Request r) throws IOException {
    if (finished) {
      throw new IllegalStateException("the trace is finished");
    }
    BinaryBlocks.Columns c = cols;
    int flags = (r.hashIds() != null ? HAS_HASHES : 0) | (r.samples() != 1 ? HAS_SAMPLES : 0) | (r.beamWidth() != 1 ? HAS_BEAM : 0);
    c.putByte(FLAGS, flags);
    c.putSigned(ID, r.id() - lastId);
    lastId = r.id();
    c.putSigned(TIME, r.arrivalNanos() - lastTimeNanos);
    lastTimeNanos = r.arrivalNanos();
    c.putUnsigned(PROMPT, r.promptTokens() & 0xFFFFFFFFL);
    c.putUnsigned(OUTPUT, r.outputTokens() & 0xFFFFFFFFL);
    if ((flags & HAS_SAMPLES) != 0) {
      c.putUnsigned(SAMPLES, r.samples() & 0xFFFFFFFFL);
    }
    if ((flags & HAS_BEAM) != 0) {
      c.putUnsigned(BEAM, r.beamWidth() & 0xFFFFFFFFL);
    }
    if ((flags & HAS_HASHES) != 0) {
      long[] h = r.hashIds();
      c.putUnsigned(HASH_COUNT, h.length);
      long last = 0;
      for (long x : h) {
        c.putSigned(HASHES, x - last);
        last = x;
      }
    }
    requests++;
    if (++inBlock == blockRecords) {
      flushBlock();
    }
  }

  private void flushBlock() throws IOException {
    out.flushBlock(inBlock);
    inBlock = 0;
    lastId = 0;
    lastTimeNanos = 0;
  }

  @Override
  public long requestsWritten() {
    return requests;
  }

  /** Writes nothing until {@link #finish}: a block is written whole or not at all. */
  @Override
  public void flush() throws IOException {}

  @Override
  public void finish() throws IOException {
    if (!finished) {
      flushBlock();
      out.finish();
      finished = true;
    }
  }
}

package kvsim.trace;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.InputException;

/**
 * Streams a binary request trace ({@link BinaryTraceFormat}) one block at a time, decoding its
 * columns straight into {@link Request}s, with the checks of the JSONL reader ({@link
 * RequestTraceReader}): positive lengths that fit an int, time never going backwards, ids
 * increasing, {@code hash_ids} only with the header's {@code hash_block_tokens} and one per block
 * of the prompt, {@code n} and {@code beam_width} not both above 1. Messages are one line, {@code
 * file: request N (block B): field: problem}; a request's {@link Request#line} is its number in the
 * file.
 */
public final class RequestBinaryReader implements RequestSource {
  private final BinaryBlocks.In in;
  private final String source;
  private final int hashBlockTokens;
  private BinaryBlocks.Cursor block;
  private int left;
  private long blockIndex = -1;
  private long requests;
  private long lastTimeNanos;
  private long lastId = -1;
  private long blockId;
  private long blockTimeNanos;

  private RequestBinaryReader(String source, InputStream in) throws IOException {
    this.source = source;
    this.in = new BinaryBlocks.In(source, in, BinaryTraceFormat.REQUEST_MAGIC, RequestFormat.NAME, RequestFormat.VERSION, "request trace", "request");
    Object hbt = this.in.header.get(RequestFormat.HASH_BLOCK_TOKENS);
    if (hbt == null) {
      hashBlockTokens = 0;
    } else if (hbt instanceof Integer n && n > 0) {
      hashBlockTokens = n;
    } else {
      this.in.close();
      throw new InputException(source + ": header: " + RequestFormat.HASH_BLOCK_TOKENS + ": must be a positive integer, got " + hbt);
    }
  }

  /** Opens a binary request trace file and reads its header. */
  public static RequestBinaryReader open(Path file) throws IOException {
    return new RequestBinaryReader(file.toString(), BinaryBlocks.openFile(file, "request trace"));
  }

  /** Reads a binary request trace from a stream; {@code source} names it in messages. */
  public static RequestBinaryReader open(String source, InputStream in) throws IOException {
    return new RequestBinaryReader(source, in);
  }

  /** Returns the header's fields. */
  public Map<String, Object> header() {
    return in.header;
  }

  @Override
  public int hashBlockTokens() {
    return hashBlockTokens;
  }

  /** Returns the number of requests read so far. */
  public long requestsRead() {
    return requests;
  }

  @Override
  public String name() {
    return Path.of(source).getFileName().toString();
  }

  @Override
  public Map<String, Object> describe() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("trace", source);
    d.put("header", in.header);
    return d;
  }

  private InputException at(String field, String problem) {
    return new InputException(source + ": request " + requests + " (block " + blockIndex + "): " + field + ": " + problem);
  }

  private int positiveInt(BinaryBlocks.Cursor c, int column, String field) {
    long x = c.unsigned(column);
    if (x <= 0) {
      throw at(field, "must be positive, got " + x);
    }
    if (x > Integer.MAX_VALUE) {
      throw at(field, "must be at most " + Integer.MAX_VALUE + ", got " + x);
    }
    return (int) x;
  }

  @Override
  public Request next() throws IOException {
    BinaryBlocks.Cursor c = block;
    if (left == 0) {
      if (c != null) {
        c.finish();
      }
      c = block = in.nextBlock(c, RequestBinaryWriter.COLUMNS);
      if (c == null) {
        return null;
      }
      blockIndex++;
      left = c.records;
      blockId = 0;
      blockTimeNanos = 0;
    }
    left--;
    requests++;
    int flags = c.readByte(RequestBinaryWriter.FLAGS);
    if ((flags & ~RequestBinaryWriter.KNOWN_BITS) != 0) {
      throw at("flags", "unknown flags " + flags);
    }
    long id = blockId + c.signed(RequestBinaryWriter.ID);
    blockId = id;
    long t = blockTimeNanos + c.signed(RequestBinaryWriter.TIME);
    blockTimeNanos = t;
    if (id < 0) {
      throw at("id", "must not be negative, got " + id);
    }
    if (t < 0) {
      throw at("t", "must not be negative, got " + t);
    }
    int prompt = positiveInt(c, RequestBinaryWriter.PROMPT, "prompt_tokens");
    int output = positiveInt(c, RequestBinaryWriter.OUTPUT, "output_tokens");
    int samples = (flags & RequestBinaryWriter.HAS_SAMPLES) != 0 ? positiveInt(c, RequestBinaryWriter.SAMPLES, "n") : 1;
    int beam = (flags & RequestBinaryWriter.HAS_BEAM) != 0 ? positiveInt(c, RequestBinaryWriter.BEAM, "beam_width") : 1;
    if (id <= lastId) {
      throw at("id", "ids must increase along the file: " + id + " after " + lastId);
    }
    if (t < lastTimeNanos) {
      throw at("t", "time goes backwards: " + t + " ns after " + lastTimeNanos + " ns");
    }
    if (samples > 1 && beam > 1) {
      throw at("beam_width", "n and beam_width cannot both be above 1");
    }
    long[] hashIds = null;
    if ((flags & RequestBinaryWriter.HAS_HASHES) != 0) {
      long n = c.unsigned(RequestBinaryWriter.HASH_COUNT);
      if (hashBlockTokens == 0) {
        throw at("hash_ids", "given, but the header has no " + RequestFormat.HASH_BLOCK_TOKENS);
      }
      long blocks = (prompt + (long) hashBlockTokens - 1) / hashBlockTokens;
      if (n != blocks) {
        throw at("hash_ids", n + " hashes for " + prompt + " prompt tokens; expected " + blocks + " (one per " + hashBlockTokens + " tokens, the last one partial)");
      }
      hashIds = new long[(int) n];
      long last = 0;
      for (int i = 0; i < n; i++) {
        last += c.signed(RequestBinaryWriter.HASHES);
        hashIds[i] = last;
      }
    }
    lastId = id;
    lastTimeNanos = t;
    return new Request(requests, id, t, prompt, output, hashIds, samples, beam);
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}

package kvsim.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Arrays;
import kvsim.core.InputException;

/**
 * Streams a kvsim request trace ({@link RequestFormat}) one request at a time, with the rules of
 * the L1 reader ({@link JsonlReader}): every problem is {@code file:line: field: problem} and
 * nothing is skipped or clamped — a missing, unknown or repeated field, a value of the wrong type, a length
 * that is not positive or does not fit an int, time going backwards, an id that does not increase,
 * {@code hash_ids} without the header's {@code hash_block_tokens} or not one per block of the
 * prompt, {@code n} and {@code beam_width} both above 1.
 *
 * <p>Memory stays flat: the reader keeps the last time and id only.
 */
public final class RequestTraceReader extends JsonlReader implements RequestSource {
  private final int hashBlockTokens;
  private long lastTimeNanos;
  private long lastId = -1;
  private long requests;
  private long[] hashBuffer = new long[64];

  private RequestTraceReader(String source, InputStream in) throws IOException {
    super(source, in, RequestFormat.NAME, RequestFormat.VERSION, "request trace", "kvsim request trace");
    Object hbt = header().get(RequestFormat.HASH_BLOCK_TOKENS);
    if (hbt == null) {
      hashBlockTokens = 0;
    } else if (hbt instanceof Integer n && n > 0) {
      hashBlockTokens = n;
    } else {
      try {
        close();
      } catch (IOException ignored) {
        // the header error below is what the user needs to see
      }
      throw InputException.at(source, 1, RequestFormat.HASH_BLOCK_TOKENS, "must be a positive integer, got " + hbt);
    }
  }

  /** Opens a request trace file and reads its header. */
  public static RequestTraceReader open(Path file) throws IOException {
    return new RequestTraceReader(file.toString(), openFile(file, "request trace"));
  }

  /** Reads a request trace from a stream; {@code source} names it in messages. */
  public static RequestTraceReader open(String source, InputStream in) throws IOException {
    return new RequestTraceReader(source, in);
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
  protected String recordWord() {
    return "request";
  }

  @Override
  public Request next() throws IOException {
    long line = beginRecord();
    if (line < 0) {
      return null;
    }
    long id = -1;
    long t = -1;
    long prompt = -1;
    long output = -1;
    long[] hashIds = null;
    long samples = 1;
    long beamWidth = 1;
    try {
      String field;
      int seen = 0;
      while ((field = nextFieldName()) != null) {
        JsonToken v = parser.nextToken();
        switch (field) {
          case "id" -> {
            seen = once(seen, 1, line, field);
            id = nonNegative(v, line, field);
          }
          case "t" -> {
            seen = once(seen, 2, line, field);
            t = nonNegative(v, line, field);
          }
          case "prompt_tokens" -> {
            seen = once(seen, 4, line, field);
            prompt = positiveInt(v, line, field);
          }
          case "output_tokens" -> {
            seen = once(seen, 8, line, field);
            output = positiveInt(v, line, field);
          }
          case "hash_ids" -> {
            seen = once(seen, 16, line, field);
            hashIds = hashIds(v, line, field);
          }
          case "n" -> {
            seen = once(seen, 32, line, field);
            samples = positiveInt(v, line, field);
          }
          case "beam_width" -> {
            seen = once(seen, 64, line, field);
            beamWidth = positiveInt(v, line, field);
          }
          default -> throw InputException.at(source, line, field, "unknown field (known: id, t, prompt_tokens, output_tokens, hash_ids, n, beam_width)");
        }
      }
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
    endRecord();
    require(id >= 0, line, "id", "missing");
    require(t >= 0, line, "t", "missing");
    require(prompt > 0, line, "prompt_tokens", "missing");
    require(output > 0, line, "output_tokens", "missing");
    require(id > lastId, line, "id", "ids must increase along the file: " + id + " after " + lastId);
    require(t >= lastTimeNanos, line, "t", "time goes backwards: " + t + " ns after " + lastTimeNanos + " ns");
    require(samples == 1 || beamWidth == 1, line, "beam_width", "n and beam_width cannot both be above 1");
    if (hashIds != null) {
      require(hashBlockTokens > 0, line, "hash_ids", "given, but the header has no " + RequestFormat.HASH_BLOCK_TOKENS);
      long blocks = (prompt + hashBlockTokens - 1) / hashBlockTokens;
      require(hashIds.length == blocks, line, "hash_ids",
          hashIds.length + " hashes for " + prompt + " prompt tokens; expected " + blocks + " (one per " + hashBlockTokens + " tokens, the last one partial)");
    }
    lastId = id;
    lastTimeNanos = t;
    requests++;
    return new Request(line, id, t, (int) prompt, (int) output, hashIds, (int) samples, (int) beamWidth);
  }

  private long positiveInt(JsonToken v, long line, String field) throws IOException {
    long x = integer(v, line, field);
    require(x > 0, line, field, "must be positive, got " + x);
    require(x <= Integer.MAX_VALUE, line, field, "must be at most " + Integer.MAX_VALUE + ", got " + x);
    return x;
  }

  private long[] hashIds(JsonToken v, long line, String field) throws IOException {
    require(v == JsonToken.START_ARRAY, line, field, "must be an array of integers, got " + describe(v));
    int n = 0;
    JsonToken e;
    while ((e = nextToken()) != JsonToken.END_ARRAY) {
      if (n == hashBuffer.length) {
        hashBuffer = Arrays.copyOf(hashBuffer, n * 2);
      }
      hashBuffer[n++] = integer(e, line, field);
    }
    return Arrays.copyOf(hashBuffer, n);
  }
}

package kvsim.trace;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes a kvsim request trace ({@link RequestFormat}): the header line, then one request per line
 * with the fields in a fixed order, so the same requests always give the same bytes. {@code
 * hash_ids}, {@code n} and {@code beam_width} are written only when present or above 1.
 */
public final class RequestTraceWriter implements RequestWriter {
  /** A request trace file, recognised by its header line (Note [Output rule] on {@code core.OutputFile}). */
  public static final kvsim.core.OutputFile.Kind OUTPUT_KIND =
      kvsim.core.OutputFile.Kind.startingWith("a request trace (kvsim-requests)", "{\"format\":\"kvsim-requests\"", "KVSIM-RQ");

  private final Writer out;
  private final StringBuilder line = new StringBuilder(128);
  private long requests;

  /**
   * Starts a trace on {@code out} with the given extra header fields (format and version first);
   * {@code hashBlockTokens} &gt; 0 is written as the header's {@code hash_block_tokens}.
   */
  public RequestTraceWriter(OutputStream out, Map<String, Object> headerFields, int hashBlockTokens) throws IOException {
    this.out = new OutputStreamWriter(out, StandardCharsets.UTF_8);
    this.out.write(JsonlReader.HEADER_JSON.writeValueAsString(header(headerFields, hashBlockTokens)));
    this.out.write('\n');
  }

  /** Returns the header object written for {@code headerFields}: format, version and {@code hash_block_tokens} first. */
  static Map<String, Object> header(Map<String, Object> headerFields, int hashBlockTokens) {
    Map<String, Object> header = new LinkedHashMap<>();
    header.put("format", RequestFormat.NAME);
    header.put("version", RequestFormat.VERSION);
    if (hashBlockTokens > 0) {
      header.put(RequestFormat.HASH_BLOCK_TOKENS, hashBlockTokens);
    }
    headerFields.forEach((k, v) -> {
      if (!header.containsKey(k)) {
        header.put(k, v);
      }
    });
    return header;
  }

  /**
   * Returns a writer of the request trace at {@code file}: binary when its name ends in {@code .kvr}
   * (Note [Binary trace files] on {@link BinaryTraceFormat}), JSONL otherwise.
   */
  public static RequestWriter forFile(java.nio.file.Path file, OutputStream out, Map<String, Object> headerFields, int hashBlockTokens) throws IOException {
    return BinaryTraceFormat.writesRequestsBinary(file)
        ? new RequestBinaryWriter(out, headerFields, hashBlockTokens)
        : new RequestTraceWriter(out, headerFields, hashBlockTokens);
  }

  /** Writes one request. */
  @Override
  public void write(Request r) throws IOException {
    StringBuilder sb = line;
    sb.setLength(0);
    sb.append("{\"id\":").append(r.id()).append(",\"t\":").append(r.arrivalNanos())
        .append(",\"prompt_tokens\":").append(r.promptTokens()).append(",\"output_tokens\":").append(r.outputTokens());
    if (r.hashIds() != null) {
      sb.append(",\"hash_ids\":[");
      long[] h = r.hashIds();
      for (int i = 0; i < h.length; i++) {
        if (i > 0) {
          sb.append(',');
        }
        sb.append(h[i]);
      }
      sb.append(']');
    }
    if (r.samples() > 1) {
      sb.append(",\"n\":").append(r.samples());
    }
    if (r.beamWidth() > 1) {
      sb.append(",\"beam_width\":").append(r.beamWidth());
    }
    sb.append("}\n");
    out.write(sb.toString());
    requests++;
  }

  /** Returns the number of requests written. */
  @Override
  public long requestsWritten() {
    return requests;
  }

  /** Flushes the buffered text to the stream. */
  @Override
  public void flush() throws IOException {
    out.flush();
  }
}

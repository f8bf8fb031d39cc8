package kvsim.trace;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes a kvsim L1 trace ({@link L1Format}): the header line, then one event per line with the
 * fields in a fixed order, so the same events always give the same bytes. Optional fields are
 * written only when they differ from their defaults.
 */
public final class L1TraceWriter implements AutoCloseable {
  /** An L1 trace file, recognised by its header line (Note [Output rule] on {@code core.OutputFile}). */
  public static final kvsim.core.OutputFile.Kind OUTPUT_KIND =
      kvsim.core.OutputFile.Kind.startingWith("an L1 trace (kvsim-l1)", "{\"format\":\"kvsim-l1\"");

  private final Writer out;
  private final StringBuilder line = new StringBuilder(128);
  private long events;

  /** Starts a trace on {@code out} with the given extra header fields (format and version first). */
  public L1TraceWriter(OutputStream out, Map<String, Object> headerFields) throws IOException {
    this.out = new OutputStreamWriter(out, StandardCharsets.UTF_8);
    Map<String, Object> header = new LinkedHashMap<>();
    header.put("format", L1Format.NAME);
    header.put("version", L1Format.VERSION);
    headerFields.forEach((k, v) -> {
      if (!k.equals("format") && !k.equals("version")) {
        header.put(k, v);
      }
    });
    this.out.write(new ObjectMapper().writeValueAsString(header));
    this.out.write('\n');
  }

  /** Writes one event. */
  public void write(TraceEvent e) throws IOException {
    StringBuilder sb = line;
    sb.setLength(0);
    sb.append("{\"t\":").append(e.timeNanos()).append(",\"op\":\"").append(e.op().label()).append('"');
    switch (e.op()) {
      case ALLOC -> {
        sb.append(",\"id\":").append(e.id()).append(",\"size\":").append(e.sizeBytes());
        sb.append(",\"tag\":\"");
        quote(sb, e.tag().name());
        sb.append('"');
        if (e.splittable() != e.tag().splittableByDefault()) {
          sb.append(",\"splittable\":").append(e.splittable());
        }
      }
      case FREE -> sb.append(",\"id\":").append(e.id());
      case ANNOTATE -> {
        sb.append(",\"action\":\"");
        quote(sb, e.action());
        sb.append('"');
        if (e.sizeBytes() > 0) {
          sb.append(",\"size\":").append(e.sizeBytes());
        }
      }
    }
    if (e.stream() != 0) {
      sb.append(",\"stream\":").append(e.stream());
    }
    if (e.addressBytes() >= 0) {
      sb.append(",\"addr\":").append(e.addressBytes());
    }
    sb.append("}\n");
    out.append(sb);
    events++;
  }

  private static void quote(StringBuilder sb, String s) {
    JsonStringEncoder.getInstance().quoteAsString(s, sb);
  }

  /** Returns the number of events written. */
  public long eventsWritten() {
    return events;
  }

  /** Flushes buffered output without closing the stream. */
  public void flush() throws IOException {
    out.flush();
  }

  @Override
  public void close() throws IOException {
    out.close();
  }
}

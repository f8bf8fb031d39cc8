package kvsim.trace;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
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
 * written only when they differ from their defaults. {@link #forFile} writes the binary form
 * ({@link BinaryTraceFormat}) instead for a {@code .kvt} file.
 */
public final class L1TraceWriter implements AutoCloseable {
  /** An L1 trace file, recognised by its header line (Note [Output rule] on {@code core.OutputFile}). */
  public static final kvsim.core.OutputFile.Kind OUTPUT_KIND =
      kvsim.core.OutputFile.Kind.startingWith("an L1 trace (kvsim-l1)", "{\"format\":\"kvsim-l1\"", "KVSIM-L1");

  private final Writer out;
  /** The binary encoder when this writes a binary trace, else null. */
  private final L1BinaryWriter binary;
  private final StringBuilder line = new StringBuilder(128);
  private long events;

  /** Starts a trace on {@code out} with the given extra header fields (format and version first). */
  public L1TraceWriter(OutputStream out, Map<String, Object> headerFields) throws IOException {
    this.out = new OutputStreamWriter(out, StandardCharsets.UTF_8);
    this.binary = null;
    this.out.write(JsonlReader.HEADER_JSON.writeValueAsString(header(headerFields)));
    this.out.write('\n');
  }

  private L1TraceWriter(L1BinaryWriter binary) {
    this.out = null;
    this.binary = binary;
  }

  /**
   * Starts a trace for {@code file} on {@code out}: binary when its name ends in {@code .kvt} (Note
   * [Binary trace files] on {@link BinaryTraceFormat}), JSONL otherwise. Call {@link #finish} (or
   * {@link #close}) after the last event.
   */
  public static L1TraceWriter forFile(java.nio.file.Path file, OutputStream out, Map<String, Object> headerFields) throws IOException {
    return open(out, headerFields, BinaryTraceFormat.writesL1Binary(file));
  }

  /** Starts a trace on {@code out}, binary ({@link BinaryTraceFormat}) or JSONL; see {@link #forFile}. */
  public static L1TraceWriter open(OutputStream out, Map<String, Object> headerFields, boolean binary) throws IOException {
    return binary ? new L1TraceWriter(new L1BinaryWriter(out, header(headerFields))) : new L1TraceWriter(out, headerFields);
  }

  /** Returns the header object written for {@code headerFields}: format and version first. */
  static Map<String, Object> header(Map<String, Object> headerFields) {
    Map<String, Object> header = new LinkedHashMap<>();
    header.put("format", L1Format.NAME);
    header.put("version", L1Format.VERSION);
    headerFields.forEach((k, v) -> {
      if (!k.equals("format") && !k.equals("version")) {
        header.put(k, v);
      }
    });
    return header;
  }

  /** Writes one event. */
  public void write(TraceEvent e) throws IOException {
    if (binary != null) {
      binary.write(e);
      events++;
      return;
    }
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

  /** Flushes buffered output without closing the stream (a binary trace writes whole blocks only, at {@link #finish}). */
  public void flush() throws IOException {
    if (binary == null) {
      out.flush();
    }
  }

  /** Completes the trace after its last event (a binary trace's last block and end block) without closing the stream. */
  public void finish() throws IOException {
    if (binary != null) {
      binary.finish();
    } else {
      out.flush();
    }
  }

  @Override
  public void close() throws IOException {
    finish();
    if (binary == null) {
      out.close();
    }
  }
}

package kvsim.trace;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import kvsim.core.InputException;

/**
 * Opens a trace file in either of its forms, JSONL or binary, told apart by the file's first bytes
 * (Note [Binary trace files] on {@link BinaryTraceFormat}): every command that reads an L1 trace or
 * a request trace opens it here. A binary trace of the other kind is refused with one line.
 */
public final class TraceFiles {
  private TraceFiles() {}

  /** Opens an L1 trace, JSONL or binary, and reads its header. */
  public static EventSource openL1(Path file) throws IOException {
    return switch (BinaryTraceFormat.sniff(file)) {
      case L1_BINARY -> L1BinaryReader.open(file);
      case REQUESTS_BINARY -> throw new InputException(file + ": is a binary request trace (kvsim-requests), not an L1 trace; serving and capacity run it");
      case UNKNOWN_BINARY -> throw BinaryTraceFormat.unknownBinary(file);
      case OTHER -> L1TraceReader.open(file);
    };
  }

  /** Returns the header fields of an L1 trace, JSONL or binary. */
  public static Map<String, Object> l1Header(Path file) throws IOException {
    try (EventSource source = openL1(file)) {
      return header(source);
    }
  }

  /**
   * Returns the format name of a kvsim trace, JSONL or binary: {@link L1Format#NAME} or {@link
   * RequestFormat#NAME}, from the magic or the JSON header's {@code format}.
   */
  public static String formatOf(Path file) throws IOException {
    switch (BinaryTraceFormat.sniff(file)) {
      case L1_BINARY:
        return L1Format.NAME;
      case REQUESTS_BINARY:
        return RequestFormat.NAME;
      case UNKNOWN_BINARY:
        throw BinaryTraceFormat.unknownBinary(file);
      default:
        break;
    }
    try (java.io.InputStream in = BinaryBlocks.openFile(file, "trace");
        com.fasterxml.jackson.core.JsonParser p = new com.fasterxml.jackson.core.JsonFactory().createParser(in)) {
      if (p.nextToken() == com.fasterxml.jackson.core.JsonToken.START_OBJECT) {
        String field;
        while ((field = p.nextFieldName()) != null) {
          com.fasterxml.jackson.core.JsonToken v = p.nextToken();
          if (field.equals("format") && v == com.fasterxml.jackson.core.JsonToken.VALUE_STRING) {
            String name = p.getText();
            if (name.equals(L1Format.NAME) || name.equals(RequestFormat.NAME)) {
              return name;
            }
            break;
          }
          p.skipChildren();
        }
      }
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      // not JSON: said below
    }
    throw new InputException(file + ": not a kvsim trace (neither a binary trace nor a JSONL file whose header's format is " + L1Format.NAME + " or "
        + RequestFormat.NAME + ")");
  }

  /** Returns the header fields of an L1 trace source opened by {@link #openL1}. */
  public static Map<String, Object> header(EventSource source) {
    return source instanceof L1BinaryReader b ? b.header() : ((L1TraceReader) source).header();
  }

  /** Returns the header fields of a request trace source opened by {@link #openRequests}. */
  public static Map<String, Object> header(RequestSource source) {
    return source instanceof RequestBinaryReader b ? b.header() : ((RequestTraceReader) source).header();
  }

  /** Opens a request trace, JSONL or binary, and reads its header. */
  public static RequestSource openRequests(Path file) throws IOException {
    return switch (BinaryTraceFormat.sniff(file)) {
      case REQUESTS_BINARY -> RequestBinaryReader.open(file);
      case L1_BINARY -> throw new InputException(file + ": is a binary L1 trace (kvsim-l1), not a request trace; replay and compare run it");
      case UNKNOWN_BINARY -> throw BinaryTraceFormat.unknownBinary(file);
      case OTHER -> RequestTraceReader.open(file);
    };
  }
}

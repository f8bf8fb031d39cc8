package kvsim.trace;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.LongLongMap;
import kvsim.core.Tag;

/**
 * Streams a kvsim L1 trace (JSONL, see {@link L1Format}) one event at a time with a single Jackson
 * token parser over the whole file, so memory stays flat whatever the trace length. Every problem
 * is reported as {@code file:line: field: problem} and nothing is skipped: malformed JSON, a
 * missing or unknown field, a value of the wrong type, a non-positive size, time going backwards,
 * an allocation of an id that is live, a free of an id that is not.
 *
 * <p>The reader keeps the set of live ids (a primitive map from id to the line that allocated it),
 * which grows with the number of live allocations, not with the trace.
 */
public final class L1TraceReader implements EventSource {
  private static final JsonFactory FACTORY = new JsonFactory();

  private final String source;
  private final InputStream in;
  private final JsonParser parser;
  private final Map<String, Object> header;
  private final LongLongMap liveLineById = new LongLongMap(1 << 12);
  private long lastObjectLine;
  /** Line where the object being parsed began, 0 between objects; malformed JSON is reported there. */
  private long objectStartLine;
  private long lastTimeNanos;
  private long events;

  private L1TraceReader(String source, InputStream in) throws IOException {
    this.source = source;
    this.in = in;
    try {
      this.parser = FACTORY.createParser(in);
      this.header = readHeader();
    } catch (IOException | RuntimeException e) {
      in.close();
      throw e;
    }
  }

  /** Opens a trace file and reads its header. */
  public static L1TraceReader open(Path file) throws IOException {
    InputStream in;
    if (Files.isDirectory(file)) {
      throw new InputException(file + ": is a folder, not a trace file");
    }
    try {
      in = new java.io.BufferedInputStream(Files.newInputStream(file), 1 << 16);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    }
    return new L1TraceReader(file.toString(), in);
  }

  /** Reads a trace from a stream; {@code source} names it in messages. */
  public static L1TraceReader open(String source, InputStream in) throws IOException {
    return new L1TraceReader(source, in);
  }

  private Map<String, Object> readHeader() throws IOException {
    JsonToken tok = nextToken();
    if (tok == null) {
      throw InputException.at(source, 1, null, "empty file: expected a header line {\"format\":\"" + L1Format.NAME + "\",\"version\":" + L1Format.VERSION + "}");
    }
    long line = parser.currentTokenLocation().getLineNr();
    if (tok != JsonToken.START_OBJECT) {
      throw InputException.at(source, line, null, "the first line must be the trace header, a JSON object");
    }
    Map<String, Object> h;
    try {
      @SuppressWarnings("unchecked")
      Map<String, Object> read = new ObjectMapper().readValue(parser, LinkedHashMap.class);
      h = read;
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
    Object format = h.get("format");
    if (!L1Format.NAME.equals(format)) {
      throw InputException.at(source, line, "format", "expected \"" + L1Format.NAME + "\" in the header, got " + (format == null ? "nothing" : "\"" + format + "\"") + " (is this a kvsim L1 trace?)");
    }
    Object version = h.get("version");
    if (!(version instanceof Integer v) || v != L1Format.VERSION) {
      throw InputException.at(source, line, "version", "unsupported trace version " + version + " (this kvsim reads version " + L1Format.VERSION + ")");
    }
    lastObjectLine = parser.currentLocation().getLineNr();
    return Collections.unmodifiableMap(h);
  }

  /** Returns the header's fields. */
  public Map<String, Object> header() {
    return header;
  }

  @Override
  public String name() {
    return Path.of(source).getFileName().toString();
  }

  @Override
  public Map<String, Object> describe() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("trace", source);
    d.put("header", header);
    return d;
  }

  /** Returns the number of events read so far. */
  public long eventsRead() {
    return events;
  }

  private JsonToken nextToken() throws IOException {
    try {
      return parser.nextToken();
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
  }

  private InputException malformed(JsonProcessingException e) {
    long line = objectStartLine > 0 ? objectStartLine : e.getLocation() == null ? 0 : e.getLocation().getLineNr();
    String msg = e.getOriginalMessage();
    int nl = msg.indexOf('\n');
    if (nl >= 0) {
      msg = msg.substring(0, nl);
    }
    msg = msg.replaceAll("\\s*\\(start marker at \\[Source.*$", "").replaceAll("\\s*at \\[Source.*$", "");
    return InputException.at(source, line, null, "malformed JSON: " + plainWords(msg));
  }

  /** Jackson's parser messages in plain words: the character itself instead of "(code 125)". */
  static String plainWords(String jacksonMessage) {
    String m = jacksonMessage;
    if (m.startsWith("Illegal unquoted character ((CTRL-CHAR, code 10))")
        || m.startsWith("Illegal unquoted character ((CTRL-CHAR, code 13))")) {
      return "a string is not closed before the end of the line (missing '\"')";
    }
    if (m.startsWith("Illegal unquoted character ((CTRL-CHAR, code ")) {
      String code = m.substring("Illegal unquoted character ((CTRL-CHAR, code ".length()).replaceAll("\\).*$", "");
      return "a control character (code " + code + ") inside a string; write it escaped, as \\u" + String.format(Locale.ROOT, "%04x", Integer.parseInt(code));
    }
    if (m.startsWith("Unexpected end-of-input")) {
      return "the line ends inside an object or array (missing '}' or ']')";
    }
    m = m.replaceAll("\\(('.{1,2}') \\(code \\d+\\)\\)", "$1")
        .replaceAll("\\(CTRL-CHAR, code (\\d+)\\)", "control character $1");
    m = m.replace("was expecting double-quote to start field name", "expected a field name in double quotes (a trailing comma?)");
    m = m.replace("was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')", "expected a string, number, array, object, true, false or null");
    m = m.replace("was expecting comma to separate Object entries", "expected ',' between fields or '}' at the end");
    m = m.replace("was expecting a colon to separate field name and value", "expected ':' after the field name");
    return Character.toLowerCase(m.charAt(0)) + m.substring(1);
  }

  @Override
  public TraceEvent next() throws IOException {
    JsonToken tok = nextToken();
    if (tok == null) {
      return null;
    }
    long line = parser.currentTokenLocation().getLineNr();
    if (tok != JsonToken.START_OBJECT) {
      throw InputException.at(source, line, null, "expected one JSON object per line, got " + tok.asString());
    }
    if (line <= lastObjectLine) {
      throw InputException.at(source, line, null, "two JSON objects on one line; write one event per line");
    }
    objectStartLine = line;
    String op = null;
    long t = -1;
    long id = -1;
    long size = 0;
    boolean sizeGiven = false; // a flag, not a sentinel: every long, -1 included, is a size to judge
    String tag = null;
    Boolean splittable = null;
    long stream = 0;
    long addr = -1;
    String action = null;
    try {
      String field;
      while ((field = parser.nextFieldName()) != null) {
        JsonToken v = parser.nextToken();
        switch (field) {
          case "t" -> t = nonNegative(v, line, field);
          case "op" -> op = string(v, line, field);
          case "id" -> id = nonNegative(v, line, field);
          case "size" -> {
            size = integer(v, line, field);
            sizeGiven = true;
          }
          case "tag" -> tag = string(v, line, field);
          case "splittable" -> {
            if (v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE) {
              throw InputException.at(source, line, field, "must be true or false");
            }
            splittable = v == JsonToken.VALUE_TRUE;
          }
          case "stream" -> stream = integer(v, line, field);
          case "addr" -> addr = nonNegative(v, line, field);
          case "action" -> action = string(v, line, field);
          default -> throw InputException.at(source, line, field, "unknown field (known: t, op, id, size, tag, splittable, stream, addr, action)");
        }
      }
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
    lastObjectLine = parser.currentLocation().getLineNr();
    objectStartLine = 0;
    if (op == null) {
      throw InputException.at(source, line, "op", "missing (alloc, free or annotate)");
    }
    if (t < 0) {
      t = lastTimeNanos;
    } else if (t < lastTimeNanos) {
      throw InputException.at(source, line, "t", "time goes backwards: " + t + " ns after " + lastTimeNanos + " ns");
    }
    lastTimeNanos = t;
    events++;
    switch (op) {
      case "alloc" -> {
        require(id >= 0, line, "id", "missing");
        require(sizeGiven, line, "size", "missing");
        require(size > 0, line, "size", "must be positive, got " + size);
        require(action == null, line, "action", "applies to annotate events only");
        Tag tg;
        try {
          tg = tag == null ? Tag.KV : Tag.of(tag);
        } catch (IllegalArgumentException e) {
          throw InputException.at(source, line, "tag", e.getMessage());
        }
        if (!liveLineById.putIfAbsent(id, line)) {
          throw InputException.at(source, line, "id", "id " + id + " is already live (allocated at line " + liveLineById.get(id, 0) + ")");
        }
        boolean split = splittable == null ? tg.splittableByDefault() : splittable;
        return new TraceEvent(line, t, TraceEvent.Op.ALLOC, id, size, tg, split, stream, addr, null);
      }
      case "free" -> {
        require(id >= 0, line, "id", "missing");
        require(!sizeGiven, line, "size", "does not apply to free events");
        require(tag == null && splittable == null && action == null, line, tag != null ? "tag" : splittable != null ? "splittable" : "action", "does not apply to free events");
        if (liveLineById.remove(id, -1) == -1) {
          throw InputException.at(source, line, "id", "free of id " + id + ", which is not live (never allocated, or already freed: double free)");
        }
        return new TraceEvent(line, t, TraceEvent.Op.FREE, id, 0, null, false, stream, addr, null);
      }
      case "annotate" -> {
        require(action != null, line, "action", "missing");
        require(id == -1 && tag == null && splittable == null, line, id != -1 ? "id" : tag != null ? "tag" : "splittable", "does not apply to annotate events");
        return new TraceEvent(line, t, TraceEvent.Op.ANNOTATE, -1, Math.max(size, 0), null, false, stream, addr, action);
      }
      default -> throw InputException.at(source, line, "op", "unknown op \"" + op + "\" (alloc, free or annotate)");
    }
  }

  private void require(boolean ok, long line, String field, String problem) {
    if (!ok) {
      throw InputException.at(source, line, field, problem);
    }
  }

  private long integer(JsonToken v, long line, String field) throws IOException {
    if (v != JsonToken.VALUE_NUMBER_INT) {
      throw InputException.at(source, line, field, "must be an integer, got " + describe(v));
    }
    try {
      return parser.getLongValue();
    } catch (InputCoercionException e) {
      throw InputException.at(source, line, field, "integer out of range: " + parser.getText());
    }
  }

  private long nonNegative(JsonToken v, long line, String field) throws IOException {
    long x = integer(v, line, field);
    if (x < 0) {
      throw InputException.at(source, line, field, "must not be negative, got " + x);
    }
    return x;
  }

  private String string(JsonToken v, long line, String field) throws IOException {
    if (v != JsonToken.VALUE_STRING) {
      throw InputException.at(source, line, field, "must be a string, got " + describe(v));
    }
    return parser.getText();
  }

  private String describe(JsonToken v) throws IOException {
    return switch (v) {
      case VALUE_STRING -> "\"" + parser.getText() + "\"";
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> parser.getText();
      case VALUE_TRUE, VALUE_FALSE, VALUE_NULL -> v.asString();
      case START_OBJECT -> "an object";
      case START_ARRAY -> "an array";
      default -> v.toString();
    };
  }

  @Override
  public void close() throws IOException {
    parser.close();
    in.close();
  }
}

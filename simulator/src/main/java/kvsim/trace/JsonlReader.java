package kvsim.trace;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedInputStream;
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

/**
 * What every kvsim JSONL file reader shares: one Jackson token parser over the whole file (memory
 * stays flat whatever the file's length), a header object on line 1 with a {@code format} name and
 * a {@code version}, then one JSON object per line. Every problem is an {@link InputException}
 * worded {@code file:line: field: problem}, with Jackson's parser messages in plain words.
 *
 * <p>A subclass reads its records with {@link #beginRecord()}, the typed field readers ({@link
 * #integer}, {@link #nonNegative}, {@link #string}) and {@link #endRecord()}.
 */
abstract class JsonlReader implements AutoCloseable {
  private static final JsonFactory FACTORY = new JsonFactory();
  /**
   * Reads and writes the trace files' headers, JSONL and binary: one mapper for all files, as a
   * mapper is thread-safe once configured (a new one, its caches empty, for each file took about
   * 1 ms of every open, and a replay opens its trace three times).
   */
  static final ObjectMapper HEADER_JSON = new ObjectMapper();

  /** The file's name in messages. */
  protected final String source;
  /** The parser over the whole file. */
  protected final JsonParser parser;
  private final InputStream in;
  private final Map<String, Object> header;
  private long lastObjectLine;
  /** Line where the object being parsed began, 0 between objects; malformed JSON is reported there. */
  private long objectStartLine;

  /**
   * Starts reading {@code in} and reads its header, which must name {@code formatName} and
   * {@code version}; messages call the file a {@code noun} ("trace") and ask whether it is a
   * {@code kind} ("kvsim L1 trace") when the format does not match.
   */
  protected JsonlReader(String source, InputStream in, String formatName, int version, String noun, String kind) throws IOException {
    this.source = source;
    this.in = in;
    try {
      this.parser = FACTORY.createParser(in);
      this.header = readHeader(formatName, version, noun, kind);
    } catch (IOException | RuntimeException e) {
      in.close();
      throw e;
    }
  }

  /** Opens {@code file} buffered, with one-line errors for a folder or a missing file. */
  protected static InputStream openFile(Path file, String noun) throws IOException {
    if (Files.isDirectory(file)) {
      throw new InputException(file + ": is a folder, not a " + noun + " file");
    }
    try {
      return new BufferedInputStream(Files.newInputStream(file), 1 << 16);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    }
  }

  private Map<String, Object> readHeader(String formatName, int version, String noun, String kind) throws IOException {
    JsonToken tok = nextToken();
    if (tok == null) {
      throw InputException.at(source, 1, null, "empty file: expected a header line {\"format\":\"" + formatName + "\",\"version\":" + version + "}");
    }
    long line = parser.currentTokenLocation().getLineNr();
    if (tok != JsonToken.START_OBJECT) {
      throw InputException.at(source, line, null, "the first line must be the " + noun + " header, a JSON object");
    }
    Map<String, Object> h;
    try {
      @SuppressWarnings("unchecked")
      Map<String, Object> read = HEADER_JSON.readValue(parser, LinkedHashMap.class);
      h = read;
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
    Object format = h.get("format");
    if (!formatName.equals(format)) {
      throw InputException.at(source, line, "format", "expected \"" + formatName + "\" in the header, got " + (format == null ? "nothing" : "\"" + format + "\"") + " (is this a " + kind + "?)");
    }
    Object v = h.get("version");
    if (!(v instanceof Integer n) || n != version) {
      throw InputException.at(source, line, "version", "unsupported " + noun + " version " + v + " (this kvsim reads version " + version + ")");
    }
    lastObjectLine = parser.currentLocation().getLineNr();
    return Collections.unmodifiableMap(h);
  }

  /** Returns the header's fields. */
  public Map<String, Object> header() {
    return header;
  }

  /** Returns the file's name, for reports. */
  public String name() {
    return Path.of(source).getFileName().toString();
  }

  /** Returns the file's path and header, for a run's config echo. */
  public Map<String, Object> describe() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("trace", source);
    d.put("header", header);
    return d;
  }

  /**
   * Moves to the next record and returns its line, or -1 at the end of the file; the parser then
   * stands on the record's {@code START_OBJECT}.
   */
  protected final long beginRecord() throws IOException {
    JsonToken tok = nextToken();
    if (tok == null) {
      return -1;
    }
    long line = parser.currentTokenLocation().getLineNr();
    if (tok != JsonToken.START_OBJECT) {
      throw InputException.at(source, line, null, "expected one JSON object per line, got " + tok.asString());
    }
    if (line <= lastObjectLine) {
      throw InputException.at(source, line, null, "two JSON objects on one line; write one " + recordWord() + " per line");
    }
    objectStartLine = line;
    return line;
  }

  /** Marks the end of the record whose fields were just read. */
  protected final void endRecord() {
    lastObjectLine = parser.currentLocation().getLineNr();
    objectStartLine = 0;
  }

  /** Returns what one line holds, for messages ("event", "request"). */
  protected abstract String recordWord();

  /** Returns the next token; malformed JSON becomes an {@link InputException}. */
  protected final JsonToken nextToken() throws IOException {
    try {
      return parser.nextToken();
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
  }

  /** Returns the next field name of the current object, or null at its end. */
  protected final String nextFieldName() throws IOException {
    try {
      return parser.nextFieldName();
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
  }

  /** Turns a Jackson parse error into a one-line message at the line of the object being read. */
  protected final InputException malformed(JsonProcessingException e) {
    // A limit of the parser (a number of more than 1000 digits) comes without a location: the
    // parser's own position names the line then.
    long line = objectStartLine > 0 ? objectStartLine : e.getLocation() != null ? e.getLocation().getLineNr() : parser.currentLocation().getLineNr();
    String msg = e.getOriginalMessage();
    int nl = msg.indexOf('\n');
    if (nl >= 0) {
      msg = msg.substring(0, nl);
    }
    msg = msg.replaceAll("\\s*\\(start marker at \\[Source.*$", "").replaceAll("\\s*at \\[Source.*$", "");
    return InputException.at(source, line, null, "malformed JSON: " + plainWords(msg));
  }

  /** Jackson's parser messages in plain words: {@link kvsim.core.JsonProblem#plain}. */
  static String plainWords(String jacksonMessage) {
    return kvsim.core.JsonProblem.plain(jacksonMessage);
  }

  /** Throws {@code file:line: field: problem} unless {@code ok}. */
  protected final void require(boolean ok, long line, String field, String problem) {
    if (!ok) {
      throw InputException.at(source, line, field, problem);
    }
  }

  /**
   * Marks field {@code bit} of a record as read: a field given twice is an error, not silently its
   * last value. Returns the fields read so far.
   */
  protected final int once(int seen, int bit, long line, String field) {
    if ((seen & bit) != 0) {
      throw InputException.at(source, line, field, "given twice in one " + recordWord());
    }
    return seen | bit;
  }

  /** Reads the current value as a long integer. */
  protected final long integer(JsonToken v, long line, String field) throws IOException {
    if (v != JsonToken.VALUE_NUMBER_INT) {
      throw InputException.at(source, line, field, "must be an integer, got " + describe(v));
    }
    try {
      return parser.getLongValue();
    } catch (InputCoercionException e) {
      throw InputException.at(source, line, field, "integer out of range: " + parser.getText());
    }
  }

  /** Reads the current value as a non-negative long integer. */
  protected final long nonNegative(JsonToken v, long line, String field) throws IOException {
    long x = integer(v, line, field);
    if (x < 0) {
      throw InputException.at(source, line, field, "must not be negative, got " + x);
    }
    return x;
  }

  /** Reads the current value as a string. */
  protected final String string(JsonToken v, long line, String field) throws IOException {
    if (v != JsonToken.VALUE_STRING) {
      throw InputException.at(source, line, field, "must be a string, got " + describe(v));
    }
    return parser.getText();
  }

  /** Describes the current value for a message: the value itself, or what kind of thing it is. */
  protected final String describe(JsonToken v) throws IOException {
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

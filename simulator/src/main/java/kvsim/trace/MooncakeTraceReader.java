package kvsim.trace;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import kvsim.core.InputException;
import kvsim.core.OptionMap;

/**
 * Imports a Mooncake trace (the FAST'25 release: {@code conversation_trace.jsonl}, {@code
 * toolagent_trace.jsonl}): JSONL without a header, one request per line, {@code
 * {"timestamp":27482,"input_length":6955,"output_length":52,"hash_ids":[46,47,…]}}.
 *
 * <ul>
 *   <li>{@code timestamp}: a non-negative integer number of milliseconds.
 *   <li>{@code input_length} is the prompt, {@code output_length} the output; the rules for 0 and
 *       for windows are {@link ImportedRequestSource}'s.
 *   <li>{@code hash_ids}: the prompt's prefix hashes, one per 512 tokens, the last one partial, so
 *       exactly {@code ceil(input_length / 512)} of them (every line of the released files obeys
 *       this); they become the request's {@code hash_ids} with {@code hash_block_tokens} 512.
 *   <li>Any other field is an error, as is a missing one or one given twice.
 * </ul>
 */
public final class MooncakeTraceReader extends ImportedRequestSource {
  /** The tokens each Mooncake hash covers. */
  public static final int HASH_BLOCK_TOKENS = 512;

  private static final JsonFactory JSON = new JsonFactory();
  /** The fields a line has. */
  private static final java.util.List<String> FIELDS = java.util.List.of("timestamp", "input_length", "output_length", "hash_ids");
  private final BufferedReader in;
  private long line;
  private long[] hashBuffer = new long[64];

  /** Opens {@code file} with the shared options of {@link ImportedRequestSource}. */
  public MooncakeTraceReader(Path file, OptionMap options) throws IOException {
    super("mooncake", file, options, "timestamp", "input_length", "output_length");
    options.requireAllUsed();
    if (Files.isDirectory(file)) {
      throw new InputException(file + ": is a folder, not a Mooncake trace file");
    }
    try {
      this.in = new BufferedReader(new InputStreamReader(Files.newInputStream(file), StandardCharsets.UTF_8), 1 << 16);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    }
  }

  @Override
  protected Row readRow() throws IOException {
    String text = in.readLine();
    if (text == null) {
      return null;
    }
    line++;
    long t = Long.MIN_VALUE;
    long prompt = Long.MIN_VALUE;
    long output = Long.MIN_VALUE;
    long[] hashes = null;
    try (JsonParser p = JSON.createParser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw InputException.at(source, line, null, "expected a JSON object");
      }
      String field;
      int seen = 0;
      while ((field = p.nextFieldName()) != null) {
        JsonToken v = p.nextToken();
        int bit = 1 << FIELDS.indexOf(field); // an unknown field (index -1) is the switch's to report
        if (FIELDS.contains(field) && (seen & bit) != 0) {
          throw InputException.at(source, line, field, "given twice in one line; a field is given once");
        }
        seen |= bit;
        switch (field) {
          case "timestamp" -> {
            t = integer(p, v, field);
            require(t >= 0, field, "must not be negative, got " + t);
          }
          case "input_length" -> prompt = integer(p, v, field);
          case "output_length" -> output = integer(p, v, field);
          case "hash_ids" -> hashes = hashIds(p, v, field);
          default -> throw InputException.at(source, line, field, "unknown field (known: timestamp, input_length, output_length, hash_ids)");
        }
      }
      if (p.nextToken() != null) {
        throw InputException.at(source, line, null, "more than one JSON value on the line");
      }
    } catch (JsonProcessingException e) {
      throw InputException.at(source, line, null, "malformed JSON: " + kvsim.core.JsonProblem.plain(e.getOriginalMessage()));
    }
    require(t != Long.MIN_VALUE, "timestamp", "missing");
    require(prompt != Long.MIN_VALUE, "input_length", "missing");
    require(output != Long.MIN_VALUE, "output_length", "missing");
    require(hashes != null, "hash_ids", "missing");
    require(prompt > 0, "input_length", "must be positive, got " + prompt + " (an empty prompt cannot be served)");
    long blocks = (prompt + HASH_BLOCK_TOKENS - 1) / HASH_BLOCK_TOKENS;
    require(hashes.length == blocks, "hash_ids",
        hashes.length + " hashes for " + prompt + " input tokens; expected " + blocks + " (one per " + HASH_BLOCK_TOKENS + " tokens, the last one partial)");
    require(t <= Long.MAX_VALUE / 1_000_000L, "timestamp", "too large: " + t + " ms");
    return new Row(line, t * 1_000_000L, prompt, output, hashes);
  }

  private long integer(JsonParser p, JsonToken v, String field) throws IOException {
    if (v != JsonToken.VALUE_NUMBER_INT) {
      throw InputException.at(source, line, field, "must be an integer, got " + (v == null ? "nothing" : p.getText()));
    }
    if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
      throw InputException.at(source, line, field, "too large: " + p.getText());
    }
    return p.getLongValue();
  }

  private long[] hashIds(JsonParser p, JsonToken v, String field) throws IOException {
    if (v != JsonToken.START_ARRAY) {
      throw InputException.at(source, line, field, "must be an array of integers");
    }
    int n = 0;
    JsonToken e;
    while ((e = p.nextToken()) != JsonToken.END_ARRAY) {
      if (n == hashBuffer.length) {
        hashBuffer = Arrays.copyOf(hashBuffer, n * 2);
      }
      hashBuffer[n++] = integer(p, e, field);
    }
    return Arrays.copyOf(hashBuffer, n);
  }

  private void require(boolean ok, String field, String problem) {
    if (!ok) {
      throw InputException.at(source, line, field, problem);
    }
  }

  @Override
  public int hashBlockTokens() {
    return HASH_BLOCK_TOKENS;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}

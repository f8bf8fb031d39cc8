package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The request trace reader accepts what the writer writes and names file, line and field for every bad input. */
class RequestTraceReaderTest {
  private static final String HEADER = "{\"format\":\"kvsim-requests\",\"version\":1,\"hash_block_tokens\":512}\n";

  private static List<Request> readAll(String text) throws IOException {
    try (RequestTraceReader r = RequestTraceReader.open("r.jsonl", new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)))) {
      List<Request> out = new ArrayList<>();
      Request q;
      while ((q = r.next()) != null) {
        out.add(q);
      }
      return out;
    }
  }

  private static String error(String text) {
    return assertThrows(InputException.class, () -> readAll(text)).getMessage();
  }

  @Test
  void whatTheWriterWritesReadsBackAsTheSameRequests() throws IOException {
    List<Request> requests = List.of(
        new Request(2, 0, 0, 6758, 500, new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 1, 1),
        new Request(3, 4, 0, 512, 7, new long[] {0}, 4, 1),
        new Request(4, 9, 1_500_000, 513, 1, new long[] {0, -77}, 1, 3),
        new Request(5, 10, 1_500_000, 1, 2_000_000_000, null, 1, 1));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    RequestTraceWriter w = new RequestTraceWriter(bytes, Map.of("generator", "test"), 512);
    for (Request r : requests) {
      w.write(r);
    }
    w.flush();
    assertEquals(4, w.requestsWritten());
    String text = bytes.toString(StandardCharsets.UTF_8);
    assertEquals(requests, readAll(text));
    try (RequestTraceReader r = RequestTraceReader.open("r.jsonl", new ByteArrayInputStream(bytes.toByteArray()))) {
      assertEquals(512, r.hashBlockTokens());
      assertEquals("test", r.header().get("generator"));
    }
    // The writer writes optional fields only when present: the same requests give the same bytes.
    assertEquals("{\"id\":10,\"t\":1500000,\"prompt_tokens\":1,\"output_tokens\":2000000000}", text.lines().reduce((a, b) -> b).orElseThrow());
  }

  @Test
  void aTraceWithoutHashesNeedsNoHashBlockTokens() throws IOException {
    List<Request> r = readAll("{\"format\":\"kvsim-requests\",\"version\":1}\n{\"id\":3,\"t\":5,\"prompt_tokens\":10,\"output_tokens\":2}\n");
    assertEquals(1, r.size());
    assertNull(r.get(0).hashIds());
    assertEquals(1, r.get(0).samples());
    assertEquals(1, r.get(0).beamWidth());
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"id\":0,\"prompt_tokens\":10,\"output_tokens\":2}                          | r.jsonl:2: t: missing",
        "{\"id\":0,\"t\":0,\"output_tokens\":2}                                       | r.jsonl:2: prompt_tokens: missing",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10}                                      | r.jsonl:2: output_tokens: missing",
        "{\"t\":0,\"prompt_tokens\":10,\"output_tokens\":2}                           | r.jsonl:2: id: missing",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":0,\"output_tokens\":2}                   | r.jsonl:2: prompt_tokens: must be positive, got 0",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":-1}                 | r.jsonl:2: output_tokens: must be positive, got -1",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":3000000000,\"output_tokens\":1}          | r.jsonl:2: prompt_tokens: must be at most 2147483647, got 3000000000",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":\"10\",\"output_tokens\":1}              | r.jsonl:2: prompt_tokens: must be an integer, got \"10\"",
        "{\"id\":0,\"t\":-5,\"prompt_tokens\":10,\"output_tokens\":1}                 | r.jsonl:2: t: must not be negative, got -5",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"size\":5}       | r.jsonl:2: size: unknown field (known: id, t, prompt_tokens, output_tokens, hash_ids, n, beam_width)",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"hash_ids\":[0,1]} | r.jsonl:2: hash_ids: 2 hashes for 10 prompt tokens; expected 1 (one per 512 tokens, the last one partial)",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"hash_ids\":7}    | r.jsonl:2: hash_ids: must be an array of integers, got 7",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"hash_ids\":[\"a\"]} | r.jsonl:2: hash_ids: must be an integer, got \"a\"",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"n\":2,\"beam_width\":2} | r.jsonl:2: beam_width: n and beam_width cannot both be above 1",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"n\":0}          | r.jsonl:2: n: must be positive, got 0",
        "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1                    | r.jsonl:2: malformed JSON: the line ends inside an object or array (missing '}' or ']')",
      })
  void everyBadRequestIsNamedByFileLineAndField(String line, String message) {
    assertEquals(message, error(HEADER + line.strip() + "\n"));
  }

  @Test
  void idsMustIncreaseAndTimeMustNotGoBack() {
    String ok = "{\"id\":5,\"t\":100,\"prompt_tokens\":10,\"output_tokens\":1}\n";
    assertEquals("r.jsonl:3: id: ids must increase along the file: 5 after 5", error(HEADER + ok + ok));
    assertEquals("r.jsonl:3: t: time goes backwards: 99 ns after 100 ns",
        error(HEADER + ok + "{\"id\":6,\"t\":99,\"prompt_tokens\":10,\"output_tokens\":1}\n"));
    assertEquals("r.jsonl:3: two JSON objects on one line; write one request per line",
        error(HEADER + ok + "{\"id\":6,\"t\":100,\"prompt_tokens\":1,\"output_tokens\":1} {\"id\":7,\"t\":100,\"prompt_tokens\":1,\"output_tokens\":1}\n"));
  }

  @Test
  void theHeaderIsChecked() {
    assertEquals("r.jsonl:1: empty file: expected a header line {\"format\":\"kvsim-requests\",\"version\":1}", error(""));
    assertEquals("r.jsonl:1: format: expected \"kvsim-requests\" in the header, got \"kvsim-l1\" (is this a kvsim request trace?)",
        error("{\"format\":\"kvsim-l1\",\"version\":1}\n"));
    assertEquals("r.jsonl:1: version: unsupported request trace version 2 (this kvsim reads version 1)",
        error("{\"format\":\"kvsim-requests\",\"version\":2}\n"));
    assertEquals("r.jsonl:1: hash_block_tokens: must be a positive integer, got 0",
        error("{\"format\":\"kvsim-requests\",\"version\":1,\"hash_block_tokens\":0}\n"));
    assertEquals("r.jsonl:2: hash_ids: given, but the header has no hash_block_tokens",
        error("{\"format\":\"kvsim-requests\",\"version\":1}\n{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":1,\"hash_ids\":[3]}\n"));
  }

  @Test
  void hashIdsOfAnyLengthAreReadWhole() throws IOException {
    int blocks = 300;
    StringBuilder ids = new StringBuilder();
    long[] expected = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      ids.append(i == 0 ? "" : ",").append(1000 + i);
      expected[i] = 1000 + i;
    }
    List<Request> r = readAll(HEADER + "{\"id\":0,\"t\":0,\"prompt_tokens\":" + (blocks * 512) + ",\"output_tokens\":1,\"hash_ids\":[" + ids + "]}\n");
    assertArrayEquals(expected, r.get(0).hashIds());
  }

  // Found by ReaderFuzzTest: a value holding an escaped carriage return made a two-line message.
  @Test
  void aLineBreakInAValueStaysOnTheMessagesOneLine() {
    assertEquals("r.jsonl:2: id: must be an integer, got \"\\r\"", error(HEADER + "{\"id\":\"\\r\"}\n"));
  }

  // Found by ReaderFuzzTest: Jackson's limit on a number's length comes without a location, and the
  // message named no line.
  @Test
  void aNumberTooLongForTheParserIsReportedAtItsLine() {
    assertTrue(error("9".repeat(1001)).startsWith("r.jsonl:1: malformed JSON: number value length (1001) exceeds"), error("9".repeat(1001)));
    assertTrue(error(HEADER + "{\"id\":" + "9".repeat(1001) + "}\n").startsWith("r.jsonl:2: malformed JSON: number value length"));
  }

  // Found by ReaderFuzzTest (an accepted mutant): a field given twice silently kept its last value.
  @Test
  void aFieldGivenTwiceIsRefused() {
    assertEquals("r.jsonl:2: prompt_tokens: given twice in one request",
        error(HEADER + "{\"id\":0,\"t\":0,\"prompt_tokens\":5,\"output_tokens\":1,\"prompt_tokens\":6}\n"));
  }
}

package kvsim.trace;

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
import kvsim.core.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The L1 reader accepts what the writer writes and names file, line and field for every bad input. */
class L1TraceReaderTest {
  private static final String HEADER = "{\"format\":\"kvsim-l1\",\"version\":1}\n";

  private static List<TraceEvent> readAll(String text) throws IOException {
    try (L1TraceReader r = L1TraceReader.open("t.jsonl", new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)))) {
      List<TraceEvent> out = new ArrayList<>();
      TraceEvent e;
      while ((e = r.next()) != null) {
        out.add(e);
      }
      return out;
    }
  }

  @Test
  void whatTheWriterWritesReadsBackAsTheSameEvents() throws IOException {
    List<TraceEvent> events = List.of(
        TraceEvent.alloc(0, 1, 4096, Tag.KV, true, 0),
        TraceEvent.alloc(5, 2, 1 << 20, Tag.ACTIVATION, false, 7),
        TraceEvent.alloc(5, 3, 512, Tag.of("my \"odd\" tag"), true, 0),
        TraceEvent.annotate(6, "segment_alloc", 0, 2 << 20, 0),
        TraceEvent.free(9, 2, 7),
        TraceEvent.free(10, 1, 0));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (L1TraceWriter w = new L1TraceWriter(bytes, Map.of("generator", "test"))) {
      for (TraceEvent e : events) {
        w.write(e);
      }
    }
    List<TraceEvent> back = readAll(bytes.toString(StandardCharsets.UTF_8));
    assertEquals(events.size(), back.size());
    for (int i = 0; i < events.size(); i++) {
      TraceEvent a = events.get(i);
      TraceEvent b = back.get(i);
      assertEquals(i + 2, b.line());
      assertEquals(a.op(), b.op());
      assertEquals(a.timeNanos(), b.timeNanos());
      assertEquals(a.id(), b.id());
      assertEquals(a.sizeBytes(), b.sizeBytes());
      assertEquals(a.tag(), b.tag());
      assertEquals(a.splittable(), b.splittable());
      assertEquals(a.stream(), b.stream());
      assertEquals(a.action(), b.action());
    }
  }

  @Test
  void anEventWithoutTimeHappensAtThePreviousEventsTime() throws IOException {
    List<TraceEvent> e = readAll(HEADER + "{\"t\":42,\"op\":\"alloc\",\"id\":1,\"size\":8}\n{\"op\":\"free\",\"id\":1}\n");
    assertEquals(42, e.get(1).timeNanos());
    assertTrue(e.get(0).splittable(), "kv is splittable by default");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "malformed JSON line | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":8 | 2 | | malformed JSON",
        "missing size | {\"t\":1,\"op\":\"alloc\",\"id\":1} | 2 | size | missing",
        "missing op | {\"t\":1,\"id\":1} | 2 | op | missing",
        "unknown field | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":8,\"szie\":3} | 2 | szie | unknown field",
        "negative size | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":-8} | 2 | size | must be positive",
        "size -1 | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":-1} | 2 | size | must be positive, got -1",
        "size on a free | {\"t\":1,\"op\":\"free\",\"id\":1,\"size\":-1} | 2 | size | does not apply",
        "size just past 2^63 | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":9223372036854775808} | 2 | size | out of range",
        "zero size | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":0} | 2 | size | must be positive",
        "size as a string | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":\"8\"} | 2 | size | must be an integer",
        "size out of range | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":99999999999999999999999} | 2 | size | out of range",
        "unknown op | {\"t\":1,\"op\":\"realloc\",\"id\":1} | 2 | op | unknown op",
        "unknown id | {\"t\":1,\"op\":\"free\",\"id\":5} | 2 | id | not live",
        "negative time | {\"t\":-1,\"op\":\"alloc\",\"id\":1,\"size\":8} | 2 | t | must not be negative",
        "two events on a line | {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":8} {\"t\":1,\"op\":\"free\",\"id\":1} | 2 | | two JSON objects",
        "not an object | [1,2] | 2 | | expected one JSON object",
      })
  void badLinesAreOneLineErrorsNamingFileLineAndField(String label, String line, int lineNo, String field, String problem) {
    InputException e = assertThrows(InputException.class, () -> readAll(HEADER + line + "\n"));
    String msg = e.getMessage();
    assertTrue(msg.startsWith("t.jsonl:" + lineNo + ": "), msg);
    if (field != null) {
      assertTrue(msg.contains(": " + field + ": "), msg);
    }
    assertTrue(msg.contains(problem), msg);
    assertTrue(!msg.contains("\n"), "one line: " + msg);
  }

  @Test
  void sizesAndTimesUpToTwoToTheSixtyThirdMinusOneReadExactly() throws IOException {
    String text =
        HEADER
            + "{\"t\":0,\"op\":\"alloc\",\"id\":0,\"size\":9223372036854775000,\"tag\":\"kv\"}\n"
            + "{\"t\":9223372036854775806,\"op\":\"alloc\",\"id\":9223372036854775807,\"size\":9223372036854775807}\n"
            + "{\"t\":9223372036854775807,\"op\":\"free\",\"id\":9223372036854775807}\n";
    List<TraceEvent> events = readAll(text);
    assertEquals(9_223_372_036_854_775_000L, events.get(0).sizeBytes());
    assertEquals(Long.MAX_VALUE, events.get(1).sizeBytes());
    assertEquals(Long.MAX_VALUE, events.get(1).id());
    assertEquals(Long.MAX_VALUE - 1, events.get(1).timeNanos());
    assertEquals(Long.MAX_VALUE, events.get(2).timeNanos());
  }

  @Test
  void aDoubleFreeNamesTheSecondFree() {
    String text = HEADER + "{\"t\":1,\"op\":\"alloc\",\"id\":3,\"size\":8}\n{\"t\":2,\"op\":\"free\",\"id\":3}\n{\"t\":3,\"op\":\"free\",\"id\":3}\n";
    InputException e = assertThrows(InputException.class, () -> readAll(text));
    assertTrue(e.getMessage().startsWith("t.jsonl:4: id: "), e.getMessage());
    assertTrue(e.getMessage().contains("double free"), e.getMessage());
  }

  @Test
  void timeGoingBackwardsIsAnError() {
    String text = HEADER + "{\"t\":10,\"op\":\"alloc\",\"id\":3,\"size\":8}\n{\"t\":9,\"op\":\"free\",\"id\":3}\n";
    InputException e = assertThrows(InputException.class, () -> readAll(text));
    assertTrue(e.getMessage().startsWith("t.jsonl:3: t: time goes backwards"), e.getMessage());
  }

  @Test
  void reusingALiveIdIsAnError() {
    String text = HEADER + "{\"t\":1,\"op\":\"alloc\",\"id\":3,\"size\":8}\n{\"t\":2,\"op\":\"alloc\",\"id\":3,\"size\":8}\n";
    InputException e = assertThrows(InputException.class, () -> readAll(text));
    assertTrue(e.getMessage().startsWith("t.jsonl:3: id: id 3 is already live (allocated at line 2)"), e.getMessage());
  }

  @Test
  void aFileWithoutTheHeaderIsRefused() {
    InputException e = assertThrows(InputException.class, () -> readAll("{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":8}\n"));
    assertTrue(e.getMessage().startsWith("t.jsonl:1: format: "), e.getMessage());
    InputException v = assertThrows(InputException.class, () -> readAll("{\"format\":\"kvsim-l1\",\"version\":2}\n"));
    assertTrue(v.getMessage().contains("unsupported trace version 2"), v.getMessage());
    InputException empty = assertThrows(InputException.class, () -> readAll(""));
    assertTrue(empty.getMessage().contains("empty file"), empty.getMessage());
  }

  @Test
  void anEmptyTraceHasNoEvents() throws IOException {
    assertNull(L1TraceReader.open("t.jsonl", new ByteArrayInputStream(HEADER.getBytes(StandardCharsets.UTF_8))).next());
  }

  // Found by ReaderFuzzTest: a field name holding an escaped line break made a two-line message.
  @Test
  void aLineBreakInAFieldNameStaysOnTheMessagesOneLine() {
    InputException e = assertThrows(InputException.class, () -> readAll(HEADER + "{\"op\":\"free\",\"a\\nb\":6}\n"));
    assertEquals("t.jsonl:2: a\\nb: unknown field (known: t, op, id, size, tag, splittable, stream, addr, action)", e.getMessage());
  }

  // Found by ReaderFuzzTest (an accepted mutant): a field given twice silently kept its last value.
  @Test
  void aFieldGivenTwiceIsRefused() {
    InputException e = assertThrows(InputException.class, () -> readAll(HEADER + "{\"t\":0,\"op\":\"alloc\",\"id\":3,\"size\":2,\"id\":4}\n"));
    assertEquals("t.jsonl:2: id: given twice in one event", e.getMessage());
  }
}

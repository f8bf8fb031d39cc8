package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The BurstGPT importer: exact times, the Total tokens check, the model and log-type filters, failed rows. */
class BurstGptTraceReaderTest {
  /** The sample in workloads/: 48 rows, 2 of them failed (0 response tokens, lines 19 and 35). */
  static final Path SAMPLE = Path.of("..", "workloads", "burstgpt-sample.csv");
  private static final String HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

  @TempDir Path dir;

  private static OptionMap options(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new OptionMap("import burstgpt", m);
  }

  private static List<Request> all(Path file, String... kv) throws IOException {
    List<Request> out = new ArrayList<>();
    try (RequestSource s = new BurstGptTraceReader(file, options(kv))) {
      Request r;
      while ((r = s.next()) != null) {
        out.add(r);
      }
    }
    return out;
  }

  private Path csv(String rows) throws IOException {
    Path p = dir.resolve("burst.csv");
    Files.writeString(p, HEADER + rows);
    return p;
  }

  @Test
  void theSampleReadsWithItsFailedRowsDroppedOrRunWithOneToken() throws IOException {
    List<Request> dropped = all(SAMPLE, "zero-output", "drop");
    assertEquals(46, dropped.size());
    assertEquals(7_000_000_000L, dropped.get(0).arrivalNanos(), "times are the Timestamp column, not shifted to the first row");
    assertEquals(7_500_000_000L, dropped.get(1).arrivalNanos());
    assertEquals(List.of(0L, 1L, 2L), dropped.stream().limit(3).map(Request::id).toList());
    assertTrue(dropped.stream().noneMatch(r -> r.id() == 17 || r.id() == 33), "the failed rows are left out");
    List<Request> one = all(SAMPLE, "zero-output", "one");
    assertEquals(48, one.size());
    assertEquals(1, one.get(17).outputTokens());
    assertEquals(112, one.get(17).promptTokens());
  }

  @Test
  void aFailedRowIsAnErrorByDefault() {
    InputException e = assertThrows(InputException.class, () -> all(SAMPLE));
    assertTrue(e.getMessage().startsWith(SAMPLE + ":19: Response tokens: 0 output tokens"), e.getMessage());
  }

  @Test
  void filtersAreExactAndKeepTheRowNumbersAsIds() throws IOException {
    List<Request> gpt4 = all(SAMPLE, "model", "GPT-4", "zero-output", "drop");
    assertEquals(10, gpt4.size());
    assertEquals(3, gpt4.get(0).id());
    assertEquals(10_500_000_000L, gpt4.get(0).arrivalNanos());
    assertEquals(7, all(SAMPLE, "model", "GPT-4", "log-type", "API log", "zero-output", "drop").size());
    assertEquals(23, all(SAMPLE, "model", "ChatGPT", "log-type", "Conversation log", "zero-output", "drop").size());
    assertEquals(20, all(SAMPLE, "log-type", "API log", "zero-output", "drop").size());
  }

  @Test
  void aFilterThatMatchesNoRowIsBadInputNamingTheValuesThere() {
    InputException e = assertThrows(InputException.class, () -> all(SAMPLE, "model", "gpt-4", "zero-output", "drop"));
    assertTrue(e.getMessage().startsWith(SAMPLE + ":49: Model: the filter model=gpt-4 matched none of the 48 rows"), e.getMessage());
    assertTrue(e.getMessage().contains("models in the file: ChatGPT, GPT-4"), e.getMessage());
    InputException both = assertThrows(InputException.class, () -> all(SAMPLE, "model", "GPT-4", "log-type", "Conversation", "zero-output", "drop"));
    assertTrue(both.getMessage().contains(":49: Log Type: the filter model=GPT-4 log-type=Conversation matched none"), both.getMessage());
  }

  @Test
  void fractionalTimestampsAreExactNanoseconds() throws IOException {
    List<Request> rs = all(csv("0.000000001,ChatGPT,10,5,15,API log\n1.5,ChatGPT,10,5,15,API log\n86400.25,GPT-4,3,2,5,Conversation log\n"));
    assertEquals(List.of(1L, 1_500_000_000L, 86_400_250_000_000L), rs.stream().map(Request::arrivalNanos).toList());
  }

  @Test
  void totalTokensMustBeRequestPlusResponse() throws IOException {
    Path p = csv("1,ChatGPT,10,5,15,API log\n2,ChatGPT,10,5,16,API log\n");
    InputException e = assertThrows(InputException.class, () -> all(p));
    assertEquals(p + ":3: Total tokens: 16 is not Request tokens + Response tokens (10 + 5 = 15)", e.getMessage());
  }

  @Test
  void timeMustNotGoBackwardsEvenInRowsAFilterLeavesOut() throws IOException {
    Path p = csv("5,ChatGPT,10,5,15,API log\n4,GPT-4,10,5,15,API log\n6,ChatGPT,10,5,15,API log\n");
    InputException e = assertThrows(InputException.class, () -> all(p, "model", "ChatGPT"));
    assertTrue(e.getMessage().startsWith(p + ":3: Timestamp: time goes backwards"), e.getMessage());
  }

  @Test
  void badTimestampsAndMissingColumnsNameTheField() throws IOException {
    Path p = csv("soon,ChatGPT,10,5,15,API log\n");
    assertTrue(assertThrows(InputException.class, () -> all(p)).getMessage().startsWith(p + ":2: Timestamp: not a number of seconds"));
    Path q = csv("-1,ChatGPT,10,5,15,API log\n");
    assertTrue(assertThrows(InputException.class, () -> all(q)).getMessage().contains(":2: Timestamp: must not be negative"));
    Path r = dir.resolve("r.csv");
    Files.writeString(r, "Timestamp,Model,Request tokens,Response tokens,Log Type\n1,ChatGPT,1,1,API log\n");
    InputException e = assertThrows(InputException.class, () -> all(r));
    assertTrue(e.getMessage().startsWith(r + ":1: Total tokens: no such column"), e.getMessage());
  }

  @Test
  void windowsAndSpeedupApplyToTheTraceTime() throws IOException {
    List<Request> rs = all(SAMPLE, "from", "60", "to", "100", "speedup", "2", "zero-output", "drop");
    assertTrue(rs.size() > 3, rs.toString());
    assertEquals(250_000_000L, rs.get(0).arrivalNanos(), "60.5 s is 0.5 s after from=60, halved");
    assertTrue(rs.stream().allMatch(r -> r.arrivalNanos() < 20_000_000_000L));
  }

  // Found probing the readers beside ReaderFuzzTest: an exponent near 2^31 overflowed BigDecimal's scale (an ArithmeticException
  // escaped), and a row at 2^63-1 ns was silently taken for the end of a window that was not given.
  @Test
  void timestampsAtTheEndsOfTheLongsAreReadOrRefused() throws IOException {
    Path p = csv("1E+2147483647,GPT-4,1,1,2,API log\n");
    InputException e = assertThrows(InputException.class, () -> all(p));
    assertEquals(p + ":2: Timestamp: too large: 1E+2147483647 s", e.getMessage());
    List<Request> last = all(csv("9.223372036854775807E9,GPT-4,1,1,2,API log\n"));
    assertEquals(1, last.size());
    assertEquals(Long.MAX_VALUE, last.get(0).arrivalNanos());
  }
}

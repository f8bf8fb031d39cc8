package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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

/** The importers of foreign request logs: Azure CSV, Mooncake JSONL, length tables. */
class RequestImportersTest {
  @TempDir Path dir;

  private static final String AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

  private Path file(String name, String text) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, text);
    return p;
  }

  private static OptionMap options(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return new OptionMap("import test", m);
  }

  private static List<Request> all(RequestSource s) throws IOException {
    List<Request> out = new ArrayList<>();
    try (s) {
      Request r;
      while ((r = s.next()) != null) {
        out.add(r);
      }
    }
    return out;
  }

  private Path azure(String rows) throws IOException {
    return file("azure.csv", AZURE_HEADER + rows);
  }

  private InputException azureFails(String rows, String... kv) throws IOException {
    Path p = azure(rows);
    return assertThrows(InputException.class, () -> all(new AzureTraceReader(p, options(kv))));
  }

  @Test
  void azureTimesAreExactNanosecondsFromTheFirstRow() throws IOException {
    Path p = azure("2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\r\n2023-11-16 18:15:50.9951691,10,1\n2023-11-17 00:00:00,5,2\n");
    List<Request> rs = all(new AzureTraceReader(p, options()));
    assertEquals(4, rs.size());
    assertEquals(Request.of(0, 0, 374, 44), strip(rs.get(0)));
    assertEquals(4_314_579_000L, rs.get(1).arrivalNanos());
    assertEquals(4_314_579_100L, rs.get(2).arrivalNanos());
    assertEquals((5 * 3600 + 44 * 60 + 13) * 1_000_000_000L + 319_410_000L, rs.get(3).arrivalNanos());
    assertEquals(List.of(0L, 1L, 2L, 3L), rs.stream().map(Request::id).toList());
    assertEquals(3, rs.get(1).line());
  }

  @Test
  void azureOffsetsAndNineDigitsParse() throws IOException {
    Path p = azure("2024-05-10 00:00:00.000000001+00:00,3,1\n2024-05-09 20:00:00.5-04:00,3,1\n2024-05-10T00:00:01Z,3,1\n");
    List<Request> rs = all(new AzureTraceReader(p, options()));
    assertEquals(List.of(0L, 499_999_999L, 999_999_999L), rs.stream().map(Request::arrivalNanos).toList());
  }

  @Test
  void windowKeepsIdsAndShiftsAndSpeedsUpTime() throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 10; i++) {
      sb.append("2023-01-01 00:00:0").append(i).append(".0,").append(100 + i).append(",5\n");
    }
    Path p = azure(sb.toString());
    List<Request> rs = all(new AzureTraceReader(p, options("from", "2", "to", "6", "speedup", "4")));
    assertEquals(List.of(2L, 3L, 4L, 5L), rs.stream().map(Request::id).toList());
    assertEquals(List.of(0L, 250_000_000L, 500_000_000L, 750_000_000L), rs.stream().map(Request::arrivalNanos).toList());
  }

  @Test
  void zeroOutputIsAnErrorUnlessARuleIsGiven() throws IOException {
    String rows = "2023-01-01 00:00:00,10,5\n2023-01-01 00:00:01,10,0\n2023-01-01 00:00:02,10,3\n";
    InputException e = azureFails(rows);
    assertTrue(e.getMessage().startsWith(dir.resolve("azure.csv") + ":3: GeneratedTokens: 0 output tokens"), e.getMessage());
    AzureTraceReader one = new AzureTraceReader(azure(rows), options("zero-output", "one"));
    List<Request> rs = all(one);
    assertEquals(List.of(5, 1, 3), rs.stream().map(Request::outputTokens).toList());
    assertEquals(1, one.zeroOutputRows());
    AzureTraceReader drop = new AzureTraceReader(azure(rows), options("zero-output", "drop"));
    rs = all(drop);
    assertEquals(List.of(0L, 2L), rs.stream().map(Request::id).toList());
    assertEquals(1, drop.zeroOutputRows());
  }

  @Test
  void eachBadAzureRowIsFileLineField() throws IOException {
    String ok = "2023-01-01 00:00:05,10,5\n";
    String at = dir.resolve("azure.csv") + ":3: ";
    assertTrue(azureFails(ok + "2023-01-01 00:00:04,10,5\n").getMessage().startsWith(at + "TIMESTAMP: time goes backwards"));
    assertTrue(azureFails(ok + "2023-13-01 00:00:06,10,5\n").getMessage().startsWith(at + "TIMESTAMP: not a valid time"));
    assertTrue(azureFails(ok + "yesterday,10,5\n").getMessage().startsWith(at + "TIMESTAMP: expected YYYY-MM-DD"));
    assertTrue(azureFails(ok + "2023-01-01 00:00:06.1234567891,10,5\n").getMessage().startsWith(at + "TIMESTAMP: expected"));
    assertTrue(azureFails(ok + "2023-01-01 00:00:06,0,5\n").getMessage().startsWith(at + "ContextTokens: must be positive"));
    assertTrue(azureFails(ok + "2023-01-01 00:00:06,1.5,5\n").getMessage().startsWith(at + "ContextTokens: not an integer"));
    assertTrue(azureFails(ok + "2023-01-01 00:00:06,10,-1\n").getMessage().startsWith(at + "GeneratedTokens: must not be negative"));
    assertTrue(azureFails(ok + "2023-01-01 00:00:06,10,99999999999\n").getMessage().startsWith(at + "GeneratedTokens: must be at most"));
    assertTrue(azureFails(ok + "2023-01-01 00:00:06,10\n").getMessage().startsWith(at + "2 fields, but the header has 3"));
    Path noColumn = file("bad.csv", "TIMESTAMP,Context,GeneratedTokens\n");
    InputException e = assertThrows(InputException.class, () -> new AzureTraceReader(noColumn, options()));
    assertTrue(e.getMessage().startsWith(noColumn + ":1: ContextTokens: no such column"), e.getMessage());
  }

  @Test
  void badOptionsFailBeforeReading() throws IOException {
    Path p = azure("");
    assertTrue(assertThrows(InputException.class, () -> new AzureTraceReader(p, options("rate", "2"))).getMessage().contains("unknown option 'rate'"));
    assertTrue(assertThrows(InputException.class, () -> new AzureTraceReader(p, options("from", "5", "to", "5"))).getMessage().contains("must be above from"));
    assertTrue(assertThrows(InputException.class, () -> new AzureTraceReader(p, options("speedup", "0"))).getMessage().contains("option speedup='0'"));
    assertTrue(assertThrows(InputException.class, () -> new AzureTraceReader(p, options("zero-output", "skip"))).getMessage().contains("expected error, one or drop"));
  }

  private Path mooncake(String lines) throws IOException {
    return file("mc.jsonl", lines);
  }

  private InputException mooncakeFails(String lines) throws IOException {
    Path p = mooncake(lines);
    return assertThrows(InputException.class, () -> all(new MooncakeTraceReader(p, options())));
  }

  @Test
  void mooncakeCarriesHashesAndMilliseconds() throws IOException {
    Path p = mooncake("{\"timestamp\": 3000, \"input_length\": 513, \"output_length\": 7, \"hash_ids\": [0, 1]}\n"
        + "{\"timestamp\": 3000, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 6001, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [9]}\n");
    MooncakeTraceReader r = new MooncakeTraceReader(p, options());
    assertEquals(512, r.hashBlockTokens());
    List<Request> rs = all(r);
    assertEquals(3, rs.size());
    assertArrayEquals(new long[] {0, 1}, rs.get(0).hashIds());
    assertEquals(List.of(0L, 0L, 3_001_000_000L), rs.stream().map(Request::arrivalNanos).toList());
    assertEquals(List.of(513, 512, 1), rs.stream().map(Request::promptTokens).toList());
  }

  @Test
  void eachBadMooncakeLineIsFileLineField() throws IOException {
    String ok = "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 7, \"hash_ids\": [0]}\n";
    String at = dir.resolve("mc.jsonl") + ":2: ";
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 7, \"hash_ids\": [0]}\n").getMessage().startsWith(at + "timestamp: time goes backwards"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11, \"input_length\": 513, \"output_length\": 7, \"hash_ids\": [0]}\n").getMessage().startsWith(at + "hash_ids: 1 hashes for 513"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11, \"input_length\": 5, \"output_length\": 7}\n").getMessage().startsWith(at + "hash_ids: missing"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11, \"input_length\": 5, \"output_length\": 7, \"hash_ids\": [0], \"x\": 1}\n").getMessage().startsWith(at + "x: unknown field"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11.5, \"input_length\": 5, \"output_length\": 7, \"hash_ids\": [0]}\n").getMessage().startsWith(at + "timestamp: must be an integer"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 7, \"hash_ids\": [0]}\n").getMessage().startsWith(at + "timestamp: must not be negative"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11, \"input_length\": 0, \"output_length\": 7, \"hash_ids\": []}\n").getMessage().startsWith(at + "input_length: must be positive"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11, \"input_length\": 5, \"output_length\": 0, \"hash_ids\": [0]}\n").getMessage().startsWith(at + "output_length: 0 output tokens"));
    assertTrue(mooncakeFails(ok + "{\"timestamp\": 11, \"input_length\": 5,\n").getMessage().startsWith(at + "malformed JSON"));
  }

  @Test
  void spreadEvensOutRowsThatShareATick() throws IOException {
    Path p = mooncake("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 3000, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 6000, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 6000, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n");
    List<Request> rs = all(new MooncakeTraceReader(p, options("spread", "3")));
    assertEquals(List.of(0L, 1_000_000_000L, 2_000_000_000L, 3_000_000_000L, 6_000_000_000L, 7_500_000_000L),
        rs.stream().map(Request::arrivalNanos).toList());
    assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L), rs.stream().map(Request::id).toList());
    InputException e = assertThrows(InputException.class, () -> all(new MooncakeTraceReader(p, options("spread", "5"))));
    assertTrue(e.getMessage().startsWith(p + ":4: timestamp: spread=5.0 s spreads the 3 rows"), e.getMessage());
    Path back = mooncake("{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n"
        + "{\"timestamp\": 5, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n");
    e = assertThrows(InputException.class, () -> all(new MooncakeTraceReader(back, options("spread", "3"))));
    assertTrue(e.getMessage().startsWith(back + ":2: timestamp: time goes backwards"), e.getMessage());
  }

  private Path lengths() throws IOException {
    return file("lengths.csv", "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n74,918,992,0.08\n290,905,1195,0.32\n5,1,6,5.0\n");
  }

  @Test
  void lengthTablesGetSeededPoissonArrivalsOneRequestPerRow() throws IOException {
    List<Request> a = all(new LengthTableReader(lengths(), options("rate", "2", "seed", "7")));
    List<Request> b = all(new LengthTableReader(lengths(), options("rate", "2", "seed", "7")));
    List<Request> c = all(new LengthTableReader(lengths(), options("rate", "2", "seed", "8")));
    assertEquals(a, b);
    assertEquals(List.of(74, 290, 5), a.stream().map(Request::promptTokens).toList());
    assertEquals(List.of(918, 905, 1), a.stream().map(Request::outputTokens).toList());
    assertTrue(a.get(0).arrivalNanos() > 0, "the first request arrives after one gap");
    assertTrue(a.get(0).arrivalNanos() != c.get(0).arrivalNanos());
    assertNull(a.get(0).hashIds());
  }

  @Test
  void lengthTablesNeedARateAndTheirColumns() throws IOException {
    Path p = lengths();
    assertTrue(assertThrows(InputException.class, () -> new LengthTableReader(p, options())).getMessage().contains("option rate='': required"));
    Path q = file("q.csv", "prompt,num_decode_tokens\n1,2\n");
    InputException e = assertThrows(InputException.class, () -> new LengthTableReader(q, options("rate", "1")));
    assertTrue(e.getMessage().startsWith(q + ":1: num_prefill_tokens: no such column"), e.getMessage());
  }

  private static Request strip(Request r) {
    return Request.of(r.id(), r.arrivalNanos(), r.promptTokens(), r.outputTokens());
  }

  // Found by ReaderFuzzTest: a value holding an escaped line break made a two-line message.
  @Test
  void aLineBreakInAMooncakeValueStaysOnTheMessagesOneLine() throws IOException {
    InputException e = mooncakeFails("{\"timestamp\":6,\"input_length\":\"\\n\"}\n");
    assertEquals(dir.resolve("mc.jsonl") + ":1: input_length: must be an integer, got \\n", e.getMessage());
  }

  // Found probing the readers beside ReaderFuzzTest: rows 1677 and 2262 apart are more than 2^63 ns apart; the difference
  // wrapped to a negative time and the row was silently left out as before the window.
  @Test
  void rowsMoreThan292YearsAfterTheFirstAreRefused() throws IOException {
    InputException e = azureFails("1677-09-22 00:00:00,1,1\n2262-04-11 00:00:00,1,1\n");
    assertEquals(dir.resolve("azure.csv") + ":3: TIMESTAMP: more than 2^63 ns (292 years) after the first row", e.getMessage());
    // Spread rows at the last representable time would pass 2^63 ns.
    e = azureFails("2262-04-11 23:47:16.854775807,1,1\n2262-04-11 23:47:16.854775807,1,1\n", "spread", "1");
    assertEquals(dir.resolve("azure.csv") + ":3: TIMESTAMP: spread=1.0 s spreads this row past 2^63 ns", e.getMessage());
  }

  // Found probing the readers beside ReaderFuzzTest: offsets past 18 hours and minutes past 59 were taken as they came.
  @Test
  void offsetsOutsideTheClockAreRefused() throws IOException {
    assertTrue(azureFails("2023-01-01 00:00:00+24:00,1,1\n").getMessage()
        .endsWith(":2: TIMESTAMP: not a valid time: '2023-01-01 00:00:00+24:00' (offset +24:00 is outside -18:00 to +18:00)"));
    assertTrue(azureFails("2023-01-01 00:00:00-05:60,1,1\n").getMessage().contains("(offset -05:60 is outside"));
  }

  // Found by ReaderFuzzTest (an accepted mutant): a field given twice silently kept its last value.
  @Test
  void aMooncakeFieldGivenTwiceIsRefused() throws IOException {
    InputException e = mooncakeFails("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 7, \"hash_ids\": [0], \"timestamp\": 9}\n");
    assertEquals(dir.resolve("mc.jsonl") + ":1: timestamp: given twice in one line; a field is given once", e.getMessage());
  }
}

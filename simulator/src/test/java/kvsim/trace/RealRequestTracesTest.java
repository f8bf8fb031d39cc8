package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import kvsim.core.OptionMap;
import kvsim.testing.SharedData;
import org.junit.jupiter.api.Test;

/**
 * Imports the real request logs of ../shared/data/serving-traces completely (skipped when absent)
 * and checks counts, token totals and spans against that folder's STATS.md (n, means times n, span).
 */
class RealRequestTracesTest {

  private record Totals(long requests, long prompt, long output, long lastNanos, long hashes) {}

  private static Totals read(RequestSource s) throws IOException {
    long n = 0;
    long in = 0;
    long out = 0;
    long last = 0;
    long hashes = 0;
    try (s) {
      Request r;
      while ((r = s.next()) != null) {
        n++;
        in += r.promptTokens();
        out += r.outputTokens();
        last = r.arrivalNanos();
        hashes += r.hashIds() == null ? 0 : r.hashIds().length;
      }
    }
    return new Totals(n, in, out, last, hashes);
  }

  private static OptionMap none() {
    return new OptionMap("import", Map.of());
  }

  @Test
  void azureConversation() throws IOException {
    Path f = SharedData.require("serving-traces/AzureLLMInferenceTrace_conv.csv");
    Totals t = read(new AzureTraceReader(f, none()));
    // STATS.md: n 19,366, input mean 1,154.7, output mean 211.1, span 3,501.7 s.
    assertEquals(new Totals(19_366, 22_361_870, 4_088_665, 3_501_721_937_000L, 0), t);
  }

  @Test
  void azureCode() throws IOException {
    Path f = SharedData.require("serving-traces/AzureLLMInferenceTrace_code.csv");
    Totals t = read(new AzureTraceReader(f, none()));
    // STATS.md: n 8,819, input mean 2,047.8, output mean 27.9, span 3,435.9 s.
    assertEquals(8_819, t.requests());
    assertEquals(18_059_974, t.prompt());
    assertEquals(245_896, t.output());
    assertEquals(3_435.9, t.lastNanos() / 1e9, 0.05);
  }

  @Test
  void mooncakeConversation() throws IOException {
    Path f = SharedData.require("serving-traces/conversation_trace.jsonl");
    Totals t = read(new MooncakeTraceReader(f, none()));
    // STATS.md: n 12,031, input mean 12,035.1, output mean 342.6, 288,500 block references, span 3,537.0 s.
    assertEquals(12_031, t.requests());
    assertEquals(144_793_823, t.prompt());
    assertEquals(4_122_048, t.output());
    assertEquals(288_500, t.hashes());
    assertEquals(3_537.0, t.lastNanos() / 1e9, 0.05);
  }

  @Test
  void shareGptLengthTable() throws IOException {
    Path f = SharedData.require("serving-traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv");
    Totals t = read(new LengthTableReader(f, new OptionMap("import", Map.of("rate", "5"))));
    // STATS.md: n 30,731, input mean 2,340.0, output mean 438.7.
    assertEquals(30_731, t.requests());
    assertEquals(71_911_571, t.prompt());
    assertEquals(13_481_988, t.output());
  }
}

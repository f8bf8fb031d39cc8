package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.report.ServingResults;
import kvsim.report.ServingResultsReader;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim serving --slo}: attainment and goodput per system in the table, summary.json and the
 * report; rejected requests miss the SLO; without {@code --slo} the summary is the one written
 * before; bad targets are exit 2 with one line and nothing written.
 */
class ServingSloTest {
  @TempDir Path dir;

  /** A trace of 20 requests every 0.5 s, prompts 200 to 390 tokens, 50 output tokens but request 3's one; request 7's prompt {@code longPrompt} tokens. */
  private Path trace(String name, int longPrompt) throws IOException {
    StringBuilder sb = new StringBuilder("{\"format\":\"kvsim-requests\",\"version\":1}\n");
    for (int i = 0; i < 20; i++) {
      sb.append("{\"id\":").append(i).append(",\"t\":").append(i * 500_000_000L).append(",\"prompt_tokens\":").append(i == 7 ? longPrompt : 200 + 10 * i)
          .append(",\"output_tokens\":").append(i == 3 ? 1 : 50).append("}\n");
    }
    Path p = dir.resolve(name);
    Files.writeString(p, sb.toString());
    return p;
  }

  private JsonNode slo(Path out, int system) throws IOException {
    return new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems").get(system).get("slo");
  }

  @Test
  void aTightTtftMissesSomeRequestsALooseOneMeetsAllAndTheSummaryIsOtherwiseUnchanged() throws IOException {
    Path t = trace("t.jsonl", 280);
    Path plain = dir.resolve("plain");
    Path tight = dir.resolve("tight");
    Path loose = dir.resolve("loose");
    String[] common = {"serving", t.toString(), "--model", "opt-13b", "--system", "vllm,orca-max", "-q"};
    CliRun.of(concat(common, "-o", plain.toString())).ok();
    CliRun tightRun = CliRun.of(concat(common, "--slo", "ttft<=30ms", "--slo", "e2e.p50<=100s", "-o", tight.toString())).ok();
    CliRun.of(concat(common, "--slo", "ttft<=1000s", "--slo", "attainment>=0.95", "-o", loose.toString())).ok();
    for (int s = 0; s < 2; s++) {
      JsonNode l = slo(loose, s);
      assertEquals(1.0, l.get("attainment").asDouble());
      assertEquals(20, l.get("requests_met").asLong());
      assertEquals(0, l.get("requests_missed").asLong());
      assertTrue(l.get("per_target").get("attainment>=0.95").get("met").asBoolean());
      assertTrue(l.get("met").asBoolean());
      JsonNode n = slo(tight, s);
      double a = n.get("attainment").asDouble();
      assertTrue(a > 0 && a < 1, n.toString());
      assertEquals(a, n.get("per_target").get("ttft<=30ms").get("share_met").asDouble(), 1e-12);
      assertEquals(20, n.get("requests_met").asLong() + n.get("requests_missed").asLong());
      assertTrue(n.get("per_target").get("e2e.p50<=100s").get("met").asBoolean(), n.toString());
      assertEquals(List.of("ttft<=30ms", "e2e.p50<=100s"), List.of(n.get("targets").get(0).asText(), n.get("targets").get(1).asText()));
    }
    // Goodput: the requests met over the run's span; with every request met, the throughput.
    JsonNode entry = new ObjectMapper().readTree(loose.resolve("summary.json").toFile()).get("systems").get(0);
    assertEquals(entry.get("throughput_requests_per_second").asDouble(), entry.get("slo").get("goodput_rps").asDouble(), 1e-9);
    assertEquals(entry.get("throughput_tokens_per_second").asDouble(), entry.get("slo").get("goodput_tokens_per_second").asDouble(), 1e-9);
    JsonNode tightEntry = new ObjectMapper().readTree(tight.resolve("summary.json").toFile()).get("systems").get(0);
    assertEquals(tightEntry.get("slo").get("requests_met").asDouble() / tightEntry.get("span_seconds").asDouble(),
        tightEntry.get("slo").get("goodput_rps").asDouble(), 1e-9);
    // Without --slo: no slo object; with it, every other field as without.
    JsonNode without = new ObjectMapper().readTree(plain.resolve("summary.json").toFile());
    assertFalse(Files.readString(plain.resolve("summary.json")).contains("\"slo\""));
    JsonNode with = new ObjectMapper().readTree(tight.resolve("summary.json").toFile());
    for (JsonNode s : with.get("systems")) {
      ((ObjectNode) s).remove("slo");
    }
    assertEquals(without, with);
    // The table: attainment and goodput columns, and a line per system with each target.
    List<String> lines = tightRun.out().lines().toList();
    assertTrue(lines.get(1).contains("SLO attain.") && lines.get(1).contains("goodput req/s") && lines.get(1).contains("goodput tok/s"), lines.get(1));
    assertTrue(tightRun.out().contains("system    met  missed  ttft<=30ms  e2e.p50<=100s"), tightRun.out());
    assertTrue(tightRun.out().matches("(?s).*\nvllm +[0-9]+ +[0-9]+ +[0-9.]+ % +[0-9.]+ m?s: met +yes\n.*"), tightRun.out());
    // Read back typed, and in the report.
    ServingResults back = ServingResultsReader.read(tight);
    ServingResults.Slo typed = back.entries().get(0).slo();
    assertEquals(slo(tight, 0).get("attainment").asDouble(), typed.attainment());
    assertEquals(Boolean.TRUE, typed.met(), "the aggregate target is the only one with a verdict, and it is met");
    assertNull(ServingResultsReader.read(plain).entries().get(0).slo());
    String html = Files.readString(tight.resolve("report.html"));
    assertTrue(html.contains(">SLO attain.</th>") && html.contains(">ttft&lt;=30ms</th>"), "the report's SLO table");
  }

  @Test
  void aRequestRejectedForLengthMissesTheSlo() throws IOException {
    // opt-13b's max_model_len is 2,048: request 7 (3,000 prompt tokens) is rejected on arrival.
    Path t = trace("long.jsonl", 3000);
    Path out = dir.resolve("rej");
    CliRun.of("serving", t.toString(), "--model", "opt-13b", "--system", "vllm", "--slo", "ttft<=1000s", "--slo", "tpot<=1ms",
        "--slo", "rejected.fraction<=0", "-q", "-o", out.toString()).ok();
    JsonNode s = slo(out, 0);
    assertEquals(1, s.get("requests_met").asLong(), s.toString());
    JsonNode per = s.get("per_target");
    assertEquals(19 / 20.0, per.get("ttft<=1000s").get("share_met").asDouble(), 1e-12);
    // Only request 3 (one output token: no TPOT, which meets any TPOT target as vLLM counts it) is within 1 ms per token.
    assertEquals(1 / 20.0, per.get("tpot<=1ms").get("share_met").asDouble(), 1e-12);
    assertEquals(1 / 20.0, s.get("attainment").asDouble(), 1e-12);
    assertEquals(19, s.get("requests_missed").asLong());
    assertEquals(1 / 20.0, per.get("rejected.fraction<=0").get("value").asDouble(), 1e-12);
    assertFalse(per.get("rejected.fraction<=0").get("met").asBoolean());
    assertFalse(s.get("met").asBoolean());
  }

  @Test
  void badTargetsAreExitTwoWithOneLineAndWriteNothing() throws IOException {
    Path t = trace("t.jsonl", 280);
    Path out = dir.resolve("bad");
    String[][] cases = {
      {"ttft<1s", "--slo: 'ttft<1s' is not a target: expected METRIC<=VALUE"},
      {"latency<=1s", "--slo: 'latency<=1s' is not a target: latency is no per-request metric"},
      {"ttft<=5", "--slo: 'ttft<=5' is not a target"},
      {"attainment>=0.9", "--slo: 'attainment>=0.9' needs a per-request target to count against"},
      {"attainment>=90", "--slo: 'attainment>=90' is not attainment>=A with A in (0, 1]"},
      {"rejected.fraction<=-1", "--slo: 'rejected.fraction<=-1' is not rejected.fraction<=F with F in [0, 1]"},
    };
    for (String[] c : cases) {
      CliRun run = CliRun.of("serving", t.toString(), "--model", "opt-13b", "--slo", c[0], "-q", "-o", out.toString());
      assertEquals(2, run.exitCode(), c[0]);
      assertTrue(run.err().startsWith("kvsim: error: " + c[1]), run.err());
      assertEquals(1, run.err().strip().lines().count(), run.err());
      assertFalse(Files.exists(out));
    }
  }

  private static String[] concat(String[] a, String... b) {
    String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }
}

package kvsim.regress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.report.ResultsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A baseline file: what is written reads back equal, the committed ones read back as their own bytes, and a malformed one is refused naming its field. */
class BaselineTest {
  @TempDir Path dir;

  private static Baseline sample() {
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("oom_count", 0L);
    a.put("external_fragmentation.peak", 0.0712);
    a.put("reserved_bytes.peak", 85_899_345_920L);
    a.put("ttft_seconds.p50", null);
    Map<String, Map<String, Object>> values = new LinkedHashMap<>();
    values.put("first-fit", a);
    values.put("best-fit", Map.of("oom_count", 3L));
    return new Baseline("0.1.0", "tiny", 2, "churn", "allocators", "sha256:00", values);
  }

  @Test
  void whatIsWrittenReadsBackEqual() throws IOException {
    Path f = sample().write(dir);
    assertEquals(dir.resolve("churn.json"), f);
    assertEquals(sample(), Baseline.read(f));
  }

  @Test
  void theCommittedBaselinesReadBackAsTheirOwnBytes() throws IOException {
    Path committed = Path.of("..", "results", "baselines", "default");
    List<Path> files;
    try (var s = Files.list(committed)) {
      files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    assertTrue(files.size() >= 5, files.toString());
    for (Path f : files) {
      Baseline b = Baseline.read(f);
      assertEquals(Files.readString(f), ResultsWriter.json().writeValueAsString(b.toTree()) + "\n", f.toString());
    }
  }

  private String refusal(String json) throws IOException {
    Path f = dir.resolve("bad.json");
    Files.writeString(f, json);
    InputException e = assertThrows(InputException.class, () -> Baseline.read(f));
    assertTrue(!e.getMessage().contains("\n") && e.getMessage().startsWith(f.toString()), e.getMessage());
    return e.getMessage();
  }

  @Test
  void aMalformedBaselineIsRefusedNamingTheField() throws IOException {
    String head = "{\"format\":\"kvsim-baseline\",\"version\":1,\"kvsim_version\":\"0.1.0\",\"suite\":\"s\",\"suite_version\":1,\"scenario\":\"c\","
        + "\"kind\":\"allocators\",\"scenario_digest\":\"d\",";
    assertTrue(refusal(head + "\"runs\":[{\"name\":\"a\",\"metrics\":{\"m\":\"x\"}}]}").contains("runs[0].metrics.m: not a number"));
    assertTrue(refusal(head + "\"runs\":[{\"name\":\"a\",\"metrics\":{}},{\"name\":\"a\",\"metrics\":{}}]}").contains("runs[1].name"));
    assertTrue(refusal(head + "\"runs\":[{\"name\":\"a\",\"metrics\":[]}]}").contains("runs[0].metrics"));
    assertTrue(refusal(head + "\"runs\":{}}").contains("runs"));
    assertTrue(refusal(head.replace("\"suite_version\":1", "\"suite_version\":\"1\"") + "\"runs\":[]}").contains("suite_version"));
    assertTrue(refusal(head + "\"runs\":[],\"extra\":1}").contains("extra: unknown field"));
    assertTrue(refusal("{\"format\":\"kvsim-reproduction\",\"version\":1}").contains("format"));
  }
}

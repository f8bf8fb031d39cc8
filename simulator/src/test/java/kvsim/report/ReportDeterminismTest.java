package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The same inputs give byte-identical memory maps, charts and reports; a capacity search has its report too. */
class ReportDeterminismTest {
  @TempDir Path tmp;

  @Test
  void twoRunsWriteTheSameBytes() throws Exception {
    for (String name : new String[] {"a", "b"}) {
      CliRun.of("replay", "churn:ops=800,seed=5", "-a", "first-fit,vattention,slab", "--quiet", "-o", tmp.resolve(name).toString()).ok();
    }
    for (String f : new String[] {"memory-map.json", "memory-map.svg", "memory-map.png", "report.html"}) {
      assertArrayEquals(Files.readAllBytes(tmp.resolve("a").resolve(f)), Files.readAllBytes(tmp.resolve("b").resolve(f)), f);
    }
  }

  @Test
  void aCapacitySearchWritesItsReport() throws Exception {
    Path dir = tmp.resolve("cap");
    CliRun.of("capacity", "requests:preset=sharegpt,count=60", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40",
        "--kv-memory", "12GiB", "--slo", "normalized_latency.mean<=0.5s", "--max-rate", "4", "--steps", "2", "-o", dir.toString()).ok();
    String html = Files.readString(dir.resolve(HtmlReport.FILE));
    assertTrue(html.contains("Capacity search") && html.contains("<svg") && html.contains("role=\"img\""), "the capacity report with its chart");
    assertTrue(html.contains(">not finished</th>") && html.contains("misses rejected.fraction&lt;=0"), "rejections shown beside the rate");
  }
}

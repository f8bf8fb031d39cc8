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
  void aSweepsReportAndChartsAndALabelledComparisonAreTheSameBytesTwice() throws Exception {
    Path grid = tmp.resolve("grid.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, slab]\nseeds: 1..2\n");
    for (String name : new String[] {"s1", "s2"}) {
      CliRun.of("sweep", grid.toString(), "-q", "-o", tmp.resolve(name).resolve("sweep").toString()).ok();
    }
    for (String f : new String[] {"report.html", "sweep-external_fragmentation.peak.svg", "sweep-reserved_bytes.peak.svg"}) {
      assertArrayEquals(Files.readAllBytes(tmp.resolve("s1/sweep").resolve(f)), Files.readAllBytes(tmp.resolve("s2/sweep").resolve(f)), f);
    }
    String html = Files.readString(tmp.resolve("s1/sweep").resolve("report.html"));
    assertTrue(html.contains("<p class=\"headline\">Best of 4 cells: lowest peak external fragmentation"), "the sweep's headline");
    for (String name : new String[] {"a", "b"}) {
      CliRun.of("replay", "churn:ops=400,seed=" + (name.equals("a") ? 1 : 2), "-a", "first-fit,slab", "--quiet", "-o", tmp.resolve("r" + name).toString())
          .ok();
    }
    for (String out : new String[] {"x.html", "y.html"}) {
      CliRun.of("report", tmp.resolve("ra").toString(), tmp.resolve("rb").toString(), "--label", "base,new", "-o", tmp.resolve(out).toString()).ok();
    }
    assertArrayEquals(Files.readAllBytes(tmp.resolve("x.html")), Files.readAllBytes(tmp.resolve("y.html")), "the labelled comparison");
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

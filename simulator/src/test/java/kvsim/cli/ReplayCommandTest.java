package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * generate → replay writes the result folder of {@code results/SCHEMA.md} with the metric names of
 * README's "Metrics", deterministically.
 */
class ReplayCommandTest {
  @TempDir Path tmp;

  private static final List<String> METRICS =
      List.of(
          "reserved_bytes", "allocated_bytes", "requested_bytes", "free_bytes", "largest_free_bytes",
          "internal_fragmentation", "external_fragmentation");

  @Test
  void generateThenReplayWritesSummaryTimeseriesTimingAndCharts() throws IOException {
    Path trace = tmp.resolve("t.jsonl");
    CliRun.of("generate", "churn", "--ops", "1000", "--seed", "1", "-o", trace.toString()).ok();
    assertTrue(Files.readAllLines(trace).size() == 1001, "header + 1000 events");
    Path out = tmp.resolve("run");
    CliRun run = CliRun.of("replay", trace.toString(), "--allocator", "first-fit,slab,multi-slab,paged", "-o", out.toString(), "--quiet").ok();
    assertTrue(run.out().contains("first-fit"), run.out());
    for (String f : List.of("summary.json", "timeseries.csv", "timing.json", "fragmentation.png", "fragmentation.svg")) {
      assertTrue(Files.size(out.resolve(f)) > 0, f);
    }
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    assertEquals(4, summary.get("allocators").size());
    for (JsonNode a : summary.get("allocators")) {
      assertEquals(1000, a.get("events").asLong());
      for (String m : METRICS) {
        JsonNode s = a.get("metrics").get(m);
        assertTrue(s != null && s.has("peak") && s.has("mean") && s.has("final"), a.get("allocator") + " lacks " + m);
      }
      assertTrue(a.has("oom_count") && a.has("fragmentation_oom_count") && a.has("modelled_allocator_nanos"));
      assertEquals(
          a.get("alloc_count").asLong() + a.get("free_count").asLong() + a.get("oom_count").asLong() + a.get("frees_of_refused_count").asLong(),
          1000);
    }
    List<String> csv = Files.readAllLines(out.resolve("timeseries.csv"));
    assertTrue(csv.get(0).startsWith("allocator,event,t_ns,reserved_bytes"), csv.get(0));
    assertTrue(csv.stream().anyMatch(l -> l.startsWith("paged,1000,")), "series ends at the last event");
    byte[] png = Files.readAllBytes(out.resolve("fragmentation.png"));
    assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, java.util.Arrays.copyOf(png, 4));
  }

  @Test
  void theSameSeedGivesByteIdenticalSummaries() throws IOException {
    Path a = tmp.resolve("a");
    Path b = tmp.resolve("b");
    String all = String.join(",", AllocatorRegistry.names());
    CliRun.of("replay", "churn:ops=3000,seed=9", "--allocator", all, "-o", a.toString(), "--quiet").ok();
    CliRun.of("replay", "churn:ops=3000,seed=9", "--allocator", all, "-o", b.toString(), "--quiet").ok();
    assertArrayEquals(Files.readAllBytes(a.resolve("summary.json")), Files.readAllBytes(b.resolve("summary.json")));
    assertArrayEquals(Files.readAllBytes(a.resolve("timeseries.csv")), Files.readAllBytes(b.resolve("timeseries.csv")));
    Path c = tmp.resolve("c");
    CliRun.of("replay", "churn:ops=3000,seed=10", "--allocator", all, "-o", c.toString(), "--quiet").ok();
    assertFalse(java.util.Arrays.equals(Files.readAllBytes(a.resolve("summary.json")), Files.readAllBytes(c.resolve("summary.json"))));
  }

  @Test
  void aFileAndTheGeneratorItCameFromAgreeWhileNothingIsRefused() throws IOException {
    Path trace = tmp.resolve("t.jsonl");
    CliRun.of("generate", "churn", "--ops", "800", "--seed", "4", "-o", trace.toString()).ok();
    CliRun.of("replay", trace.toString(), "-a", "first-fit", "-o", tmp.resolve("f").toString(), "--quiet").ok();
    CliRun.of("replay", "churn:ops=800,seed=4", "-a", "first-fit", "-o", tmp.resolve("g").toString(), "--quiet").ok();
    JsonNode f = new ObjectMapper().readTree(tmp.resolve("f/summary.json").toFile()).get("allocators").get(0);
    JsonNode g = new ObjectMapper().readTree(tmp.resolve("g/summary.json").toFile()).get("allocators").get(0);
    assertEquals(0, f.get("oom_count").asLong());
    assertEquals(f.get("metrics"), g.get("metrics"));
  }

  @Test
  void aSeedSweepPrintsMedianAndPercentilesForEachAllocator() throws IOException {
    Path out = tmp.resolve("sweep");
    CliRun run = CliRun.of("replay", "churn:ops=500", "--seeds", "1..20", "-a", "first-fit,paged", "-o", out.toString(), "--quiet").ok();
    assertTrue(run.out().contains("external_fragmentation.peak"), run.out());
    assertTrue(run.out().contains("20/20"), run.out());
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    JsonNode ff = summary.get("allocators").get(0);
    assertEquals(20, ff.get("per_seed").size());
    JsonNode st = ff.get("sweep").get("external_fragmentation.peak");
    assertTrue(st.get("p10").asDouble() <= st.get("median").asDouble() && st.get("median").asDouble() <= st.get("p90").asDouble());
  }

  @Test
  void compareRunsEveryRegisteredAllocatorOnTheDefaultWorkload() {
    CliRun run = CliRun.of("compare", "-o", tmp.resolve("cmp").toString(), "--quiet").ok();
    for (String name : AllocatorRegistry.names()) {
      assertTrue(run.out().lines().anyMatch(l -> l.startsWith(name + " ")), "no row for " + name + "\n" + run.out());
    }
  }

  @Test
  void unsplittableRequestsGoToTheActivationsRegionWhenThePlanHasOne() throws IOException {
    Path out = tmp.resolve("plan");
    CliRun.of("replay", "kv:requests=300,seed=3", "-a", "paged", "--activations", "8GiB", "-o", out.toString(), "--quiet").ok();
    JsonNode a = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("allocators").get(0);
    assertEquals(0, a.get("too_large_oom_count").asLong(), "activations no longer reach the paged model");
    assertEquals(300, a.get("alloc_count").asLong(), "only KV buffers are counted in the region under test");
    Path without = tmp.resolve("noplan");
    CliRun.of("replay", "kv:requests=300,seed=3", "-a", "paged", "-o", without.toString(), "--quiet").ok();
    JsonNode b = new ObjectMapper().readTree(without.resolve("summary.json").toFile()).get("allocators").get(0);
    assertEquals(300, b.get("too_large_oom_count").asLong(), "without the region, activations are too large for pages");
  }

  /**
   * The bug report's trace: a request just below 2^63 B used to be served by paged as one 8 MiB
   * page (mean internal fragmentation −1.1·10^12), and 2^63 − 2^23 + 1 B ended the run with an
   * ArrayIndexOutOfBoundsException. Both are refusals now, counted as too_large.
   */
  @Test
  void sizesNearTwoToTheSixtyThirdAreTooLargeForPagedNotAnOverflow() throws IOException {
    Path trace = tmp.resolve("huge.jsonl");
    Files.writeString(
        trace,
        "{\"format\":\"kvsim-l1\",\"version\":1}\n"
            + "{\"t\":0,\"op\":\"alloc\",\"id\":0,\"size\":9223372036854775000,\"tag\":\"kv\"}\n");
    Path out = tmp.resolve("huge");
    CliRun.of("replay", trace.toString(), "-a", "paged", "-o", out.toString(), "--quiet").ok();
    JsonNode a = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("allocators").get(0);
    assertEquals(1, a.get("too_large_oom_count").asLong());
    assertEquals(0, a.get("alloc_count").asLong());
    assertFractionOrNull(a, "internal_fragmentation");

    // Both reported sizes and Long.MAX_VALUE among normal requests, on every model, with the
    // invariant checker after each event: every model refuses them and its ratios stay in [0, 1].
    Files.writeString(
        trace,
        "{\"format\":\"kvsim-l1\",\"version\":1}\n"
            + "{\"t\":0,\"op\":\"alloc\",\"id\":0,\"size\":1000000,\"tag\":\"kv\"}\n"
            + "{\"t\":10,\"op\":\"alloc\",\"id\":1,\"size\":9223372036854775000,\"tag\":\"kv\"}\n"
            + "{\"t\":20,\"op\":\"alloc\",\"id\":2,\"size\":9223372036846387201,\"tag\":\"kv\"}\n"
            + "{\"t\":30,\"op\":\"alloc\",\"id\":3,\"size\":9223372036854775807,\"tag\":\"activation\"}\n"
            + "{\"t\":40,\"op\":\"free\",\"id\":1}\n"
            + "{\"t\":9223372036854775807,\"op\":\"alloc\",\"id\":4,\"size\":3000000,\"tag\":\"kv\"}\n");
    Path all = tmp.resolve("huge-all");
    CliRun.of("replay", trace.toString(), "-a", String.join(",", AllocatorRegistry.names()), "--check", "-o", all.toString(), "--quiet").ok();
    for (JsonNode r : new ObjectMapper().readTree(all.resolve("summary.json").toFile()).get("allocators")) {
      String name = r.get("allocator").asText();
      assertEquals(2, r.get("alloc_count").asLong(), name);
      assertEquals(3, r.get("oom_count").asLong(), name);
      assertEquals(1, r.get("frees_of_refused_count").asLong(), name);
      assertFractionOrNull(r, "internal_fragmentation");
      assertFractionOrNull(r, "external_fragmentation");
    }
  }

  private static void assertFractionOrNull(JsonNode allocator, String metric) {
    JsonNode m = allocator.get("metrics").get(metric);
    for (String stat : List.of("peak", "mean", "final")) {
      JsonNode v = m.get(stat);
      assertTrue(
          v.isNull() || (v.asDouble() >= 0 && v.asDouble() <= 1),
          allocator.get("allocator").asText() + " " + metric + "." + stat + " = " + v);
    }
  }
}

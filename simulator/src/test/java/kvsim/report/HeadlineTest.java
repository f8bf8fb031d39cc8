package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The headline sentences are computed from the results given, and the report's subject from the configuration echo. */
class HeadlineTest {
  private static CapacityResults.SystemEntry capacity(String system, double maxRate, boolean upper) {
    CapacityResults.Probe p = new CapacityResults.Probe(maxRate > 0 ? maxRate : 0.1, maxRate > 0, 100, 100, 0, 0, 0.0, 1.0,
        Map.of());
    return new CapacityResults.SystemEntry(system, Map.of(), null, maxRate, upper, maxRate > 0 ? 1.0 : null, 100, 100, 0, 0, 0.0,
        maxRate > 0 ? List.of() : List.of("ttft.p50<=1s"), List.of(p));
  }

  @Test
  void capacityNamesTheHighestRateThenTheRestAndThoseMeetingNone() {
    CapacityResults c = new CapacityResults(Map.of(), List.of("ttft.p50<=1s"),
        List.of(capacity("orca-max", 0.8, false), capacity("vllm", 1.97, false), capacity("hf-naive", 0, false)));
    assertEquals("vllm sustains the highest rate meeting every target (1.97 req/s), then orca-max 0.800; hf-naive meets them at no rate probed.",
        Headline.capacity(c));
    CapacityResults none = new CapacityResults(Map.of(), List.of("ttft.p50<=1s"), List.of(capacity("vllm", 0, false)));
    assertTrue(Headline.capacity(none).startsWith("No system meets every target"), Headline.capacity(none));
  }

  @Test
  void aSweepTableNamesTheBestCellPerMetricInItsDirection() {
    SweepTableResults t = SweepTableResults.of(Map.of("grid", "g.yaml"), List.of(
        row("first-fit", "1", 0.5, 3, 2L << 30), row("best-fit", "1", 0.2, 5, 1L << 30), row("buddy", "1", 0.2, 0, 4L << 30)));
    String h = Headline.sweepTable(t, List.of("external_fragmentation.peak", "oom_count", "reserved_bytes.peak", "allocator_count"),
        r -> r.text("allocator"), 4);
    assertEquals("Best of 3 cells: lowest peak external fragmentation 0.2 (best-fit and buddy); lowest refusals (out-of-memory) 0 (buddy); "
        + "lowest peak reserved 1.00 GiB (best-fit).", h);
  }

  private static SweepTableResults.Row row(String allocator, String seed, double frag, long ooms, long reservedBytes) {
    Map<String, Object> v = new LinkedHashMap<>();
    v.put("allocator", allocator);
    v.put("seed", seed);
    v.put("external_fragmentation.peak", frag);
    v.put("oom_count", ooms);
    v.put("reserved_bytes.peak", reservedBytes);
    return new SweepTableResults.Row(v);
  }

  private static kvsim.metrics.AllocatorResult allocator(String name, double peakFrag, long ooms, double reservedBytes) {
    return new kvsim.metrics.AllocatorResult(name, Map.of(), Map.of("oom_count", ooms),
        Map.of("external_fragmentation", new kvsim.metrics.Gauge.Summary(peakFrag, peakFrag / 2, 0.0),
            "reserved_bytes", new kvsim.metrics.Gauge.Summary(reservedBytes, reservedBytes, reservedBytes)),
        0, 0, Map.of(), List.of());
  }

  @Test
  void allocatorsNameTheLowestPeakFragmentationTiesIncludedThenTheFewestRefusals() {
    assertEquals("slab and paged share the lowest peak external fragmentation (0), best-fit has the fewest refusals (398 out-of-memory).",
        Headline.allocators(List.of(allocator("first-fit", 0.9848, 432, 80.0 * (1L << 30)), allocator("best-fit", 0.9834, 398, 80.0 * (1L << 30)),
            allocator("slab", 0, 441, 80.0 * (1L << 30)), allocator("paged", 0, 461, 80.0 * (1L << 30)))));
    assertEquals("first-fit has the lowest peak external fragmentation (0.1), and best-fit reserves the least memory at the peak (1.00 GiB); "
            + "no allocator refused a request.",
        Headline.allocators(List.of(allocator("first-fit", 0.1, 0, 2.0 * (1L << 30)), allocator("best-fit", 0.2, 0, 1.0 * (1L << 30)))));
  }

  @Test
  void directionsOfMetrics() {
    assertTrue(Headline.lowerIsBetter("ttft_seconds.p50"));
    assertTrue(Headline.lowerIsBetter("kv_breakdown.external_fragmentation.mean"));
    assertFalse(Headline.lowerIsBetter("throughput_tokens_per_second"));
    assertNull(Headline.lowerIsBetter("batch_size_mean"), "no better direction: not ranked");
  }

  @Test
  void theSubjectNamesWorkloadModelAndDeviceFromTheEcho() {
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("workload", Map.of("spec", "churn", "params", new LinkedHashMap<>(Map.of("ops", 5000))));
    config.put("device", Map.of("name", "h100-80", "capacity_bytes", 1));
    config.put("model", Map.of("name", "llama-2-7b"));
    assertEquals("workload churn:ops=5000, model llama-2-7b, device h100-80", Headline.subject(config));
    assertEquals("workload requests:preset=sharegpt", Headline.subject(Map.of("workload", "requests:preset=sharegpt")));
    assertNull(Headline.subject(Map.of()));
  }

  @Test
  void namesAreJoinedAsASentence() {
    assertEquals("a", Headline.names(List.of("a")));
    assertEquals("a and b", Headline.names(List.of("a", "b")));
    assertEquals("a, b and c", Headline.names(List.of("a", "b", "c")));
  }
}

package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code serving --seeds … --slo …}: each seed's run is judged against the targets, the merged entry
 * holds the medians of the SLO fields with their intervals, and its verdicts are those of the
 * medians (not the first seed's), also for a target whose text holds a dot ({@code ttft.p90<=…}).
 */
class SeedsSloTest {
  @TempDir Path dir;

  @Test
  void theMergedEntryJudgesItsMediansAndKeepsDottedTargetsWhole() throws IOException {
    Path out = dir.resolve("s");
    CliRun run = CliRun.of("serving", "requests:preset=sharegpt,count=150", "--system", "vllm", "--seeds", "1..3", "--kv-memory", "4GiB",
        "--slo", "ttft<=1s", "--slo", "attainment>=0.5", "--slo", "ttft.p90<=30s", "-q", "-o", out.toString());
    run.ok();
    assertTrue(run.out().contains("SLO attain."), run.out());
    JsonNode vllm = new ObjectMapper().readTree(out.resolve("summary.json").toFile()).get("systems").get(0);
    JsonNode slo = vllm.get("slo");
    JsonNode intervals = vllm.get("intervals");
    assertEquals(intervals.get("slo.attainment").get("median").asDouble(), slo.get("attainment").asDouble(), 0);
    JsonNode p90 = slo.get("per_target").get("ttft.p90<=30s");
    double p90Median = intervals.get("slo.per_target.ttft.p90<=30s.value_seconds").get("median").asDouble();
    assertEquals(p90Median, p90.get("value_seconds").asDouble(), 0);
    assertEquals(p90Median <= 30, p90.get("met").asBoolean());
    JsonNode attainment = slo.get("per_target").get("attainment>=0.5");
    assertEquals(attainment.get("value").asDouble() >= 0.5, attainment.get("met").asBoolean());
    assertEquals(p90.get("met").asBoolean() && attainment.get("met").asBoolean(), slo.get("met").asBoolean());
    assertEquals(3, intervals.get("slo.goodput_rps").get("n").asInt());
  }
}

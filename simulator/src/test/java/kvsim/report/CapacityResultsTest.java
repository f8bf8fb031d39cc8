package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A capacity search's typed results: written and read back they are equal, a committed folder
 * written again from what was read gives the same bytes, and a bad field is refused by name.
 */
class CapacityResultsTest {
  @TempDir Path dir;

  private static final Path GALLERY = Path.of("..", "results", "gallery", "capacity-opt13b-sharegpt");

  private static Map<String, Double> values(String target, Double v) {
    Map<String, Double> m = new LinkedHashMap<>();
    m.put(target, v);
    m.put("ttft.p99<=500ms", v == null ? null : v / 2);
    return m;
  }

  /** A grid of two cells: one answered below the upper bound, one where no rate met the targets (a value undefined). */
  private static CapacityResults sample() {
    String t = "normalized_latency.mean<=0.2s";
    CapacityResults.Probe low = new CapacityResults.Probe(0.1, true, 100, 90, 10, 0, 0.1, 0.09, values(t, 0.05));
    CapacityResults.Probe high = new CapacityResults.Probe(10.0, false, 100, 88, 10, 2, 0.12, 8.8, values(t, 1.5));
    CapacityResults.Probe none = new CapacityResults.Probe(0.1, false, 100, 0, 100, 0, 1.0, 0.0, values(t, null));
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("workload", "requests:preset=sharegpt,count=100");
    config.put("min_rate_rps", 0.1);
    config.put("max_rate_rps", 10.0);
    return new CapacityResults(config, List.of(t, "rejected.fraction<=0.2", "ttft.p99<=500ms"), List.of(
        new CapacityResults.SystemEntry("vllm", Map.of("block-size", "16"), 12L << 30, 0.1, false, 0.09, 100, 90, 10, 0, 0.1, List.of(),
            List.of(low, high)),
        new CapacityResults.SystemEntry("vllm", Map.of("block-size", "32"), 12L << 30, 0, false, null, 100, 0, 100, 0, 1.0,
            List.of(t, "rejected.fraction<=0.2"), List.of(none))));
  }

  @Test
  void writtenThenReadBackIsEqualAndTheFilesSayWhatTheRecordsHold() throws IOException {
    CapacityResults written = sample();
    Path out = ResultsWriter.writeCapacity(ResultFolder.Target.at(dir.resolve("cap"), ResultFolder.Kind.CAPACITY, false).check(), written);
    CapacityResults read = CapacityResultsReader.read(out);
    assertEquals(written, read);
    assertEquals(ResultsReader.CAPACITY_FORMAT, ResultsReader.formatOf(out));
    List<String> probes = Files.readAllLines(out.resolve("probes.csv"));
    assertEquals("system,block-size,rate_rps,met,requests,finished,rejected,aborted,rejected_fraction,goodput_rps,"
        + "normalized_latency_mean_seconds,ttft_p99_seconds", probes.get(0));
    assertEquals("vllm,32,0.100000,false,100,0,100,0,1.000000,0.000000,,", probes.get(3), "an undefined value is an empty cell");
    assertEquals("vllm block-size=32: no rate meets the targets (100.0 % not finished at 0.100 req/s)", read.systems().get(1).legend());
    assertEquals("vllm block-size=16: 0.100 req/s, goodput 0.0900, 10.0 % not finished", read.systems().get(0).legend());
    assertEquals(0.2, CapacityResults.limitSeconds("normalized_latency.mean<=0.2s"));
    assertEquals(0.5, CapacityResults.limitSeconds("ttft.p99<=500ms"));
    assertTrue(Files.readString(out.resolve(CapacityChart.SVG_FILE)).contains("no rate meets the targets"), "the chart's legend");
  }

  @Test
  void theCommittedGalleryFolderWrittenAgainFromWhatWasReadIsByteIdentical() throws IOException {
    assumeTrue(Files.isDirectory(GALLERY), "the committed gallery folder is absent");
    CapacityResults read = CapacityResultsReader.read(GALLERY);
    assertEquals(4, read.systems().size());
    Path out = ResultsWriter.writeCapacity(ResultFolder.Target.at(dir.resolve("again"), ResultFolder.Kind.CAPACITY, false).check(), read);
    assertEquals(read, CapacityResultsReader.read(out));
    for (String f : List.of("summary.json", "probes.csv", CapacityChart.SVG_FILE, "report.html")) {
      assertArrayEquals(Files.readAllBytes(GALLERY.resolve(f)), Files.readAllBytes(out.resolve(f)), f);
    }
  }

  @Test
  void aFieldOfTheWrongTypeIsRefusedNamingFileAndField() throws IOException {
    Path out = ResultsWriter.writeCapacity(ResultFolder.Target.at(dir.resolve("bad"), ResultFolder.Kind.CAPACITY, false).check(), sample());
    Path summary = out.resolve("summary.json");
    Files.writeString(summary, Files.readString(summary).replaceFirst("\"met\" : true", "\"met\" : \"yes\""));
    InputException e = assertThrows(InputException.class, () -> CapacityResultsReader.read(out));
    assertEquals(summary + ": systems[0].probes[0].met: expected true or false, found \"yes\"", e.getMessage());
  }
}

package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kvsim.metrics.Interval;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The seed intervals in the charts of folders run over seeds: each error bar or band's {@code
 * data-interval} in the SVG holds the values of {@code summary.json}'s {@code intervals} (or of the
 * per-seed rows, for a sweep) and is followed by its drawing; a single run's charts have none;
 * the charts drawn from one seed's run say which; the titles name the workload, model and device;
 * a redraw gives the same bytes.
 */
class SeedChartsTest {
  private static final Pattern INTERVAL = Pattern.compile(
      "<g data-interval='([^']*) median=([-0-9.Ee]+) low=([-0-9.Ee]+) high=([-0-9.Ee]+) n=([0-9]+)'>(<[a-z]+)");

  @TempDir Path dir;

  /** One drawn interval: its name, median, low, high, n, and the first element drawn inside its group. */
  record Drawn(String name, double median, double low, double high, int n, String firstElement) {}

  static Map<String, Drawn> drawn(Path svg) throws IOException {
    Map<String, Drawn> out = new LinkedHashMap<>();
    Matcher m = INTERVAL.matcher(Files.readString(svg));
    while (m.find()) {
      out.put(m.group(1), new Drawn(m.group(1), Double.parseDouble(m.group(2)), Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4)),
          Integer.parseInt(m.group(5)), m.group(6)));
    }
    return out;
  }

  private static byte[][] chartBytes(Path folder) throws IOException {
    List<byte[]> out = new ArrayList<>();
    try (var files = Files.list(folder)) {
      for (Path p : files.filter(p -> p.toString().endsWith(".svg") || p.toString().endsWith(".png")).sorted().toList()) {
        out.add(Files.readAllBytes(p));
      }
    }
    return out.toArray(new byte[0][]);
  }

  @Test
  void aServingFolderOverSeedsDrawsEachShareWithItsInterval() throws IOException {
    Path out = dir.resolve("serving");
    CliRun.of("serving", "requests:preset=sharegpt,count=60", "--system", "vllm,orca-max", "--seeds", "1..3", "-q", "-o", out.toString()).ok();
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    Map<String, Drawn> bars = drawn(out.resolve(ServingCharts.BARS_FILE + ".svg"));
    int expected = 0;
    for (JsonNode system : summary.get("systems")) {
      String name = system.get("system").asText();
      for (String field : List.of("kv_breakdown", "kv_breakdown_steady")) {
        String bar = name + (field.equals("kv_breakdown") ? " (whole run)" : " (steady)");
        for (int c = 0; c < ServingCharts.CURRENT.size(); c++) {
          JsonNode in = system.get("intervals").get(field + "." + ServingCharts.CURRENT.names().get(c) + ".mean");
          assertNotNull(in, field + " " + c);
          Drawn d = bars.get(bar + ": " + ServingCharts.CURRENT.labels().get(c) + " (%)");
          assertNotNull(d, bar + " " + c + " in " + bars.keySet());
          assertEquals(in.get("median").asDouble() * 100, d.median(), 1e-9);
          assertEquals(in.get("low").asDouble() * 100, d.low(), 1e-9);
          assertEquals(in.get("high").asDouble() * 100, d.high(), 1e-9);
          assertEquals(3, d.n());
          assertEquals("<line", d.firstElement(), "the group holds the error bar's lines");
          expected++;
        }
      }
    }
    assertEquals(expected, bars.size());
    String barsSvg = Files.readString(out.resolve(ServingCharts.BARS_FILE + ".svg"));
    assertTrue(barsSvg.contains("error bars: 95 % interval of the median over 3 seeds"), "the caption says what the bars are");
    // The charts of one seed's run say which, and every chart names the workload, model and device.
    for (String chart : List.of(ServingCharts.CDF_FILE, ServingCharts.BATCH_FILE, "kv-breakdown")) {
      String svg = Files.readString(out.resolve(chart + ".svg"));
      assertTrue(svg.contains("(seed 1)</text>"), chart);
      assertTrue(svg.contains(">workload requests:preset=sharegpt,count=60, model llama-2-7b, device h100-80</text>"), chart);
    }
    assertFalse(barsSvg.contains("(seed 1)"), "the bars are the medians over the seeds, not one seed's");
    // Redrawn from the folder's files alone: the same bytes.
    byte[][] before = chartBytes(out);
    assertEquals(8, ResultCharts.redraw(List.of(out)));
    assertArrayEquals(before, chartBytes(out));
  }

  @Test
  void aSingleServingRunDrawsNoIntervalAndNamesNoSeed() throws IOException {
    Path out = dir.resolve("one");
    CliRun.of("serving", "requests:preset=sharegpt,count=40", "--system", "vllm", "-q", "-o", out.toString()).ok();
    for (String chart : List.of(ServingCharts.BARS_FILE, ServingCharts.CDF_FILE, ServingCharts.BATCH_FILE, "kv-breakdown")) {
      String svg = Files.readString(out.resolve(chart + ".svg"));
      assertFalse(svg.contains("data-interval"), chart);
      assertFalse(svg.contains("95 % interval"), chart);
      assertFalse(svg.contains("(seed "), chart);
      assertTrue(svg.contains(">workload requests:preset=sharegpt,count=40, model llama-2-7b, device h100-80</text>"), chart);
    }
  }

  @Test
  void aCapacitySearchOverSeedsShadesEachSystemsRateInterval() throws IOException {
    Path out = dir.resolve("cap");
    CliRun.of("capacity", "requests:preset=sharegpt,count=100", "--seeds", "1..3", "--slo", "ttft.p90<=2s", "--slo", "rejected.fraction<=0.3",
        "--system", "vllm,orca-max", "--kv-memory", "4GiB", "--steps", "2", "--max-rate", "8", "-q", "-o", out.toString()).ok();
    JsonNode summary = new ObjectMapper().readTree(out.resolve("summary.json").toFile());
    Map<String, Drawn> bands = drawn(out.resolve(CapacityChart.SVG_FILE));
    assertEquals(2, bands.size(), bands.keySet().toString());
    for (JsonNode system : summary.get("systems")) {
      JsonNode in = system.get("intervals").get("max_rate_rps");
      Drawn d = bands.get(system.get("system").asText() + ": max rate (req/s)");
      assertNotNull(d, bands.keySet().toString());
      assertEquals(in.get("median").asDouble(), d.median(), 1e-12);
      assertEquals(in.get("low").asDouble(), d.low(), 1e-12);
      assertEquals(in.get("high").asDouble(), d.high(), 1e-12);
      assertEquals(in.get("n").asInt(), d.n());
    }
    assertTrue(Files.readString(out.resolve(CapacityChart.SVG_FILE)).contains("Shaded bands: 95 % interval of the median over 3 seeds"));
    // The reader keeps the intervals: written again, the same summary.json.
    CapacityResults r = CapacityResultsReader.read(out);
    assertEquals(Interval.class, r.intervals().get("vllm").get("max_rate_rps").getClass());
    assertEquals(ResultsWriter.json().readTree(out.resolve("summary.json").toFile()).toString(),
        ResultsWriter.json().valueToTree(ResultsWriter.capacitySummary(r)).toString());
    byte[][] before = chartBytes(out);
    ResultCharts.redraw(List.of(out));
    assertArrayEquals(before, chartBytes(out));
  }

  @Test
  void aSweepOverSeedsDrawsEachGroupsIntervalOfTheMedian() throws IOException {
    Path grid = dir.resolve("g.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, buddy]\nseeds: 1..5\n");
    Path out = dir.resolve("sweep");
    CliRun.of("sweep", grid.toString(), "-q", "-o", out.toString()).ok();
    SweepTableResults t = SweepTable.read(out);
    String metric = SweepChart.metrics(t).get(0);
    Map<String, Drawn> bars = drawn(out.resolve(SweepChart.fileOf(metric) + ".svg"));
    List<SweepChart.Group> groups = SweepChart.groups(t, metric);
    assertEquals(groups.size(), bars.size(), bars.keySet().toString());
    for (SweepChart.Group g : groups) {
      Interval in = Interval.of(g.values());
      Drawn d = bars.get(g.name() + ": " + Headline.metricName(metric));
      assertNotNull(d, bars.keySet().toString());
      assertEquals(5, d.n());
      assertEquals(in.median(), d.median(), 1e-12);
      assertEquals(in.low(), d.low(), 1e-12);
      assertEquals(in.high(), d.high(), 1e-12);
    }
    // The same interval as sweep-seeds.csv's .low and .high of the metric (as written there, to a few significant digits).
    List<String> csv = Files.readAllLines(out.resolve("sweep-seeds.csv"));
    List<String> header = List.of(csv.get(0).split(","));
    String[] first = csv.get(1).split(",");
    Drawn d = bars.get(groups.get(0).name() + ": " + Headline.metricName(metric));
    assertEquals(Double.parseDouble(first[header.indexOf(metric + ".low")]), d.low(), 1e-4 * Math.abs(d.low()));
    assertEquals(Double.parseDouble(first[header.indexOf(metric + ".high")]), d.high(), 1e-4 * Math.abs(d.high()));
  }

  @Test
  void aMalformedIntervalIsAnInputErrorNamingTheField() throws IOException {
    Path out = dir.resolve("cap");
    CliRun.of("capacity", "requests:preset=sharegpt,count=60", "--seeds", "1..2", "--slo", "ttft.p90<=2s", "--slo", "rejected.fraction<=0.5",
        "--system", "vllm", "--kv-memory", "4GiB", "--steps", "1", "--max-rate", "4", "-q", "-o", out.toString()).ok();
    Path summary = out.resolve("summary.json");
    String text = Files.readString(summary);
    Files.writeString(summary, text.replaceFirst("\"n\" : 2", "\"n\" : 0"));
    CliRun r = CliRun.of("report", out.toString(), "--redraw-charts");
    assertEquals(2, r.exitCode(), r.err());
    assertTrue(r.err().contains("summary.json") && r.err().contains("systems[0].intervals.") && r.err().contains(".n: expected a positive integer, found 0"),
        r.err());
  }
}

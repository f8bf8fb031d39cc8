package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import kvsim.core.InputException;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.Gauge;
import kvsim.metrics.RunMetrics;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A result folder read back and written again gives the same bytes; charts are drawn from the
 * folder alone; a damaged or foreign folder is refused with the file, line and field named.
 */
class ResultsReaderTest {
  @TempDir Path tmp;

  private static final List<String> FILES =
      List.of("summary.json", "timeseries.csv", "timing.json", "fragmentation.png", "fragmentation.svg");

  private Path replay(String name, String... args) {
    Path dir = tmp.resolve(name);
    List<String> all = new ArrayList<>(List.of("replay"));
    all.addAll(List.of(args));
    all.addAll(List.of("-o", dir.toString(), "--quiet"));
    CliRun.of(all.toArray(String[]::new)).ok();
    return dir;
  }

  private static void assertSameBytes(Path a, Path b, List<String> files) throws IOException {
    for (String f : files) {
      assertArrayEquals(Files.readAllBytes(a.resolve(f)), Files.readAllBytes(b.resolve(f)), f + " differs after a read and a write");
    }
  }

  private Path rewrite(Path dir, String name) throws IOException {
    Path again = tmp.resolve(name);
    ResultsWriter.write(ResultFolder.Target.at(again, ResultFolder.Kind.REPLAY, false), ResultsReader.read(dir));
    return again;
  }

  @Test
  void aChurnRunOfEveryAllocatorReadBackAndWrittenAgainGivesTheSameFiles() throws IOException {
    Path run = replay("churn", "churn:ops=2000", "-a", "first-fit,slab,paged,pytorch-caching,multi-slab");
    RunResults read = ResultsReader.read(run);
    assertEquals(
        List.of("first-fit", "slab", "paged", "pytorch-caching", "multi-slab"),
        read.results().stream().map(AllocatorResult::allocator).toList());
    assertEquals("churn:ops=2000", ((Map<?, ?>) read.config().get("workload")).get("spec"));
    assertFalse(read.config().containsKey("format"), "the marker is not part of the config echo");
    for (AllocatorResult r : read.results()) {
      assertEquals(2000L, r.counters().get("events"));
      assertEquals(2000.0, r.samples().get(r.samples().size() - 1)[0], "the series ends at the last event");
    }
    assertSameBytes(run, rewrite(run, "churn-again"), FILES);
  }

  @Test
  void aKvRunWithAnActivationsRegionRoundTripsToo() throws IOException {
    Path run = replay("kv", "kv:requests=300,seed=3", "-a", "first-fit,paged,pytorch-caching", "--activations", "8GiB");
    RunResults read = ResultsReader.read(run);
    assertEquals("first-fit", ((Map<?, ?>) read.config().get("plan")).get("activations_allocator"));
    assertSameBytes(run, rewrite(run, "kv-again"), FILES);
  }

  @Test
  void aRunOfATraceFileRoundTripsWithItsHeaderDescription() throws IOException {
    Path trace = tmp.resolve("t.jsonl");
    CliRun.of("generate", "churn", "--ops", "500", "--seed", "4", "-o", trace.toString()).ok();
    Path run = replay("trace", trace.toString(), "-a", "first-fit,slab", "--sample-every", "7");
    assertSameBytes(run, rewrite(run, "trace-again"), FILES);
  }

  @Test
  void aSeedSweepRoundTripsThroughItsOwnFormat() throws IOException {
    Path run = tmp.resolve("sweep");
    CliRun.of("compare", "churn:ops=500", "-a", "first-fit,paged", "--seeds", "1..3", "-o", run.toString(), "--quiet").ok();
    SweepResults read = ResultsReader.readSweep(run);
    assertEquals(List.of(1L, 2L, 3L), read.seeds());
    assertEquals(3, read.entries().get(0).perSeed().size());
    Path again = tmp.resolve("sweep-again");
    ResultsWriter.writeSweep(ResultFolder.Target.at(again, ResultFolder.Kind.REPLAY, false), read);
    assertSameBytes(run, again, List.of("summary.json"));
    InputException e = assertThrows(InputException.class, () -> ResultsReader.read(run));
    assertTrue(e.getMessage().contains("summary.json: format: expected \"kvsim-summary\", found \"kvsim-sweep-summary\""), e.getMessage());
  }

  /** One allocator result with awkward values: undefined ratios, fractions with many digits, extra metrics. */
  private static AllocatorResult awkward(String name, long seed) {
    Random rnd = new Random(seed);
    Map<String, Long> counters = new LinkedHashMap<>();
    for (String c : RunMetrics.COUNTERS) {
      counters.put(c, (long) rnd.nextInt(1_000_000));
    }
    Map<String, Gauge.Summary> summaries = new LinkedHashMap<>();
    for (String g : RunMetrics.GAUGES) {
      if (g.endsWith("fragmentation")) {
        summaries.put(g, g.startsWith("internal") ? new Gauge.Summary(null, null, null) : new Gauge.Summary(rnd.nextDouble(), rnd.nextDouble(), null));
      } else {
        double peak = (double) (rnd.nextLong() >>> 28);
        summaries.put(g, new Gauge.Summary(peak, peak * rnd.nextDouble(), (double) (rnd.nextLong() >>> 30)));
      }
    }
    List<double[]> samples = new ArrayList<>();
    for (int e = 1; e <= 50; e++) {
      double[] row = new double[2 + RunMetrics.SAMPLE_COLUMNS.size()];
      row[0] = e;
      row[1] = e * 1000L;
      for (int i = 2; i < row.length; i++) {
        boolean fraction = RunMetrics.SAMPLE_COLUMNS.get(i - 2).endsWith("fragmentation");
        row[i] = fraction ? (e % 5 == 0 ? Double.NaN : rnd.nextDouble()) : rnd.nextInt(1 << 30);
      }
      samples.add(row);
    }
    Map<String, Object> options = new LinkedHashMap<>();
    options.put("block-size", 2097152L);
    options.put("ratio", 0.1 + rnd.nextDouble());
    options.put("name", "x,y \"quoted\"");
    return new AllocatorResult(name, options, counters, summaries, rnd.nextLong() >>> 1, rnd.nextInt(10), Map.of("free_extents", 312L), samples);
  }

  @Test
  void summaryValuesComeBackExactlyAndSamplesAsTheCsvWroteThem() throws IOException {
    List<AllocatorResult> results = List.of(awkward("a", 1), awkward("b", 2));
    Random rnd = new Random(3);
    List<AllocatorResult.Timing> timings =
        List.of(new AllocatorResult.Timing("a", 50, rnd.nextLong() >>> 14), new AllocatorResult.Timing("b", 50, 1));
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("kvsim_version", "test");
    config.put("check", true);
    Path dir = ResultsWriter.write(ResultFolder.Target.at(tmp.resolve("awkward"), ResultFolder.Kind.REPLAY, false), config, results, timings);
    RunResults read = ResultsReader.read(dir);
    assertEquals(config, read.config());
    assertEquals(timings, read.timings());
    for (int k = 0; k < results.size(); k++) {
      AllocatorResult want = results.get(k);
      AllocatorResult got = read.results().get(k);
      assertEquals(want.allocator(), got.allocator());
      assertEquals(want.options().toString(), got.options().toString());
      assertEquals(want.counters(), got.counters());
      assertEquals(want.summaries(), got.summaries(), "summaries are exact");
      assertEquals(want.modelledAllocatorNanos(), got.modelledAllocatorNanos());
      assertEquals(want.activationOomCount(), got.activationOomCount());
      assertEquals(want.extra(), got.extra());
      assertEquals(want.samples().size(), got.samples().size());
      for (int r = 0; r < want.samples().size(); r++) {
        double[] w = want.samples().get(r);
        double[] g = got.samples().get(r);
        for (int i = 0; i < w.length; i++) {
          boolean fraction = i >= 2 && RunMetrics.SAMPLE_COLUMNS.get(i - 2).endsWith("fragmentation");
          if (fraction && Double.isNaN(w[i])) {
            assertTrue(Double.isNaN(g[i]), "an undefined ratio stays undefined");
          } else if (fraction) {
            assertEquals(Double.parseDouble(String.format(Locale.ROOT, "%.6f", w[i])), g[i], "a ratio comes back as written, to 6 decimals");
          } else {
            assertEquals(w[i], g[i]);
          }
        }
      }
    }
    assertNull(read.results().get(0).summaries().get("internal_fragmentation").mean(), "null stays null");
    assertSameBytes(dir, rewrite(dir, "awkward-again"), FILES);
  }

  @Test
  void wallClockNanosecondsSurviveTheirTripThroughSeconds() {
    Random rnd = new Random(11);
    for (int i = 0; i < 100_000; i++) {
      long nanos = rnd.nextLong() >>> (13 + rnd.nextInt(50)); // below 2^51
      assertEquals(nanos, Math.round(nanos / 1e9 * 1e9), "nanos " + nanos);
    }
  }

  @Test
  void theChartIsDrawnAgainFromTheFolderAlone() throws IOException {
    Path run = replay("chart", "churn:ops=1000", "-a", "first-fit,paged");
    byte[] png = Files.readAllBytes(run.resolve("fragmentation.png"));
    byte[] svg = Files.readAllBytes(run.resolve("fragmentation.svg"));
    Files.delete(run.resolve("fragmentation.png"));
    Files.delete(run.resolve("fragmentation.svg"));
    FragmentationChart.redraw(run);
    byte[] png2 = Files.readAllBytes(run.resolve("fragmentation.png"));
    assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, java.util.Arrays.copyOf(png2, 4));
    String svg2 = Files.readString(run.resolve("fragmentation.svg"));
    assertTrue(svg2.startsWith("<?xml") && svg2.contains("<svg") && svg2.contains("first-fit"), "an SVG naming the allocators");
    assertArrayEquals(png, png2, "the run's chart and the redrawn one are the same");
    assertArrayEquals(svg, svg2.getBytes(StandardCharsets.UTF_8), "the run's chart and the redrawn one are the same");
    assertTrue(ResultFolder.isResultFolder(run));
  }

  // ---- bad input: the message names the file, the line where there is one, and the field

  private Path folder(String name) throws IOException {
    Path run = replay(name, "churn:ops=300", "-a", "first-fit,slab");
    return run;
  }

  private static String refused(Path dir) {
    return assertThrows(InputException.class, () -> ResultsReader.read(dir)).getMessage();
  }

  private static void edit(Path file, String from, String to) throws IOException {
    String s = Files.readString(file);
    assertTrue(s.contains(from), from);
    Files.writeString(file, s.replaceFirst(java.util.regex.Pattern.quote(from), java.util.regex.Matcher.quoteReplacement(to)));
  }

  @Test
  void aMissingFileIsNamed() throws IOException {
    for (String f : List.of("summary.json", "timeseries.csv", "timing.json")) {
      Path run = folder("missing-" + f);
      Files.delete(run.resolve(f));
      String m = refused(run);
      assertTrue(m.startsWith(run.resolve(f) + ": missing"), m);
    }
    String m = refused(tmp.resolve("nowhere"));
    assertTrue(m.contains("nowhere: no such folder"), m);
  }

  @Test
  void anotherVersionOrASummaryWithoutTheMarkerIsRefused() throws IOException {
    Path run = folder("v2");
    edit(run.resolve("summary.json"), "\"version\" : 1", "\"version\" : 2");
    assertEquals(run.resolve("summary.json") + ": version: 2 is not supported; this kvsim reads version 1", refused(run));

    Path old = folder("old");
    edit(old.resolve("summary.json"), "  \"format\" : \"kvsim-summary\",\n  \"version\" : 1,\n", "");
    String m = refused(old);
    assertTrue(m.startsWith(old.resolve("summary.json") + ": format: missing"), m);

    Path timing = folder("timing-v0");
    edit(timing.resolve("timing.json"), "\"version\" : 1", "\"version\" : 0");
    m = refused(timing);
    assertTrue(m.startsWith(timing.resolve("timing.json") + ": version: 0 is not supported"), m);

    Path foreign = tmp.resolve("foreign");
    Files.createDirectories(foreign);
    Files.writeString(foreign.resolve("summary.json"), "[1, 2]\n");
    assertEquals(foreign.resolve("summary.json") + ": expected a JSON object", refused(foreign));
    Files.writeString(foreign.resolve("summary.json"), "{\n  \"format\": \"kvsim-summary\",\n  \"version\": 1,\n  oops\n}\n");
    m = refused(foreign);
    assertTrue(m.startsWith(foreign.resolve("summary.json") + ":4: not valid JSON"), m);
  }

  @Test
  void theFormatIsFoundWhereverItStandsAndAFileBrokenAfterItIsStillRefused() throws IOException {
    Path dir = tmp.resolve("format");
    Files.createDirectories(dir);
    Path summary = dir.resolve("summary.json");
    Files.writeString(summary, "{\"config\": {\"a\": [1, {\"format\": \"x\"}]}, \"format\": \"kvsim-sweep-summary\"}\n");
    assertEquals(ResultsReader.SWEEP_FORMAT, ResultsReader.formatOf(dir), "a nested format is not the file's");
    Files.writeString(summary, "{\"config\": {\"format\": \"kvsim-summary\"}}\n");
    String m = assertThrows(InputException.class, () -> ResultsReader.formatOf(dir)).getMessage();
    assertTrue(m.startsWith(summary + ": format: missing"), m);
    Files.writeString(summary, "{\"config\": oops, \"format\": \"kvsim-summary\"}\n");
    m = assertThrows(InputException.class, () -> ResultsReader.formatOf(dir)).getMessage();
    assertTrue(m.startsWith(summary + ":1: not valid JSON"), m);
    // Broken after the format: the report, which reads the whole file next, refuses it.
    Files.writeString(summary, "{\"format\": \"kvsim-sweep-summary\",\n\"version\": 1,\noops\n}\n");
    assertEquals(ResultsReader.SWEEP_FORMAT, ResultsReader.formatOf(dir));
    m = assertThrows(InputException.class, () -> HtmlReport.write(tmp.resolve("r.html"), List.of(dir), false)).getMessage();
    assertTrue(m.startsWith(summary + ":3: not valid JSON"), m);
    assertFalse(Files.exists(tmp.resolve("r.html")));
  }

  @Test
  void aMissingOrMistypedOrUnknownSummaryFieldIsNamed() throws IOException {
    Path run = folder("fields");
    Path summary = run.resolve("summary.json");
    String original = Files.readString(summary);
    edit(summary, "\"largest_free_bytes\" : {\n        \"peak\"", "\"largest_free_bytes\" : {\n        \"top\"");
    assertEquals(summary + ": allocators[0].metrics.largest_free_bytes.top: not a field of format version 1", refused(run));

    Files.writeString(summary, original);
    edit(summary, "\"free_count\" : ", "\"free_count\" : -");
    assertEquals(summary + ": allocators[0].free_count: expected a non-negative integer, found -" + freeCount(original), refused(run));

    Files.writeString(summary, original);
    edit(summary, "\"peak\" : 85899345920", "\"peak\" : 8.5E10");
    assertEquals(summary + ": allocators[0].metrics.reserved_bytes.peak: expected an integer or null, found 8.5E10", refused(run));

    Files.writeString(summary, original);
    edit(summary, "\"allocator\" : \"slab\"", "\"allocator\" : \"first-fit\"");
    assertEquals(summary + ": allocators[1].allocator: 'first-fit' appears twice", refused(run));
  }

  private static String freeCount(String summary) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"free_count\" : (\\d+)").matcher(summary);
    assertTrue(m.find());
    return m.group(1);
  }

  @Test
  void aMalformedCsvLineIsNamedWithItsLineAndColumn() throws IOException {
    Path run = folder("csv");
    Path csv = run.resolve("timeseries.csv");
    List<String> original = Files.readAllLines(csv);

    List<String> lines = new ArrayList<>(original);
    String[] f = lines.get(4).split(",", -1);
    f[6] = "12x"; // free_bytes
    lines.set(4, String.join(",", f));
    Files.write(csv, lines);
    assertEquals(csv + ":5: free_bytes: expected a non-negative integer, found '12x'", refused(run));

    lines = new ArrayList<>(original);
    lines.set(2, lines.get(2) + ",7");
    Files.write(csv, lines);
    assertEquals(csv + ":3: expected 11 comma-separated fields, found 12", refused(run));

    lines = new ArrayList<>(original);
    lines.set(3, lines.get(3).replaceFirst("^first-fit,", "best-fit,"));
    Files.write(csv, lines);
    assertTrue(refused(run).startsWith(csv + ":4: allocator: 'best-fit' is not among the allocators of summary.json"));

    lines = new ArrayList<>(original);
    lines.add(original.get(1)); // a first-fit row after the slab rows
    Files.write(csv, lines);
    assertTrue(refused(run).startsWith(csv + ":" + lines.size() + ": allocator: the rows of 'first-fit' must come together"));

    lines = new ArrayList<>(original);
    f = lines.get(2).split(",", -1);
    f[9] = "NaN"; // external_fragmentation: undefined is written empty
    lines.set(2, String.join(",", f));
    Files.write(csv, lines);
    assertEquals(csv + ":3: external_fragmentation: expected a decimal number, or nothing where undefined, found 'NaN'", refused(run));

    lines = new ArrayList<>(original);
    lines.set(0, lines.get(0).replace("t_ns", "time"));
    Files.write(csv, lines);
    assertTrue(refused(run).startsWith(csv + ":1: header: expected allocator,event,t_ns,"));

    lines = new ArrayList<>(original);
    lines.set(2, original.get(1));
    Files.write(csv, lines);
    assertTrue(refused(run).startsWith(csv + ":3: event: 1 does not follow 1"));
  }

  @Test
  void timingsOfOtherAllocatorsAreRefused() throws IOException {
    Path run = folder("timing");
    edit(run.resolve("timing.json"), "\"allocator\" : \"slab\"", "\"allocator\" : \"paged\"");
    assertEquals(run.resolve("timing.json") + ": runs[1].allocator: 'paged', but summary.json lists 'slab' here", refused(run));
  }
}

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
import java.util.stream.Stream;
import kvsim.report.ServingResults;
import kvsim.report.ServingResultsReader;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code serving --seeds} and {@code kvsim diff}: a folder over seeds reads back with medians and
 * intervals, is byte-identical for the same seeds, and diff tells a real change (a higher request
 * rate) from a seed-only change (seeds 1..5 against 6..10); bad inputs are exit 2 with one line.
 */
class DiffCommandTest {
  @TempDir static Path dir;

  private static final String WORKLOAD = "requests:preset=sharegpt,count=150";

  private static Path seeds15;
  private static Path seeds610;
  private static Path slowerRate;

  @BeforeAll
  static void runFolders() {
    seeds15 = serving("a", WORKLOAD, "1..5");
    seeds610 = serving("b", WORKLOAD, "6..10");
    slowerRate = serving("c", WORKLOAD + ",rate=0.5", "1..5");
  }

  private static Path serving(String name, String workload, String seeds) {
    Path out = dir.resolve(name);
    CliRun.of("serving", workload, "--seeds", seeds, "--kv-memory", "4GiB", "-q", "-o", out.toString()).ok();
    return out;
  }

  @Test
  void aFolderOverSeedsReadsBackWithMediansIntervalsAndPerSeedRows() throws IOException {
    ServingResults r = ServingResultsReader.read(seeds15);
    assertEquals(List.of(1, 2, 3, 4, 5), new ObjectMapper().convertValue(r.config().get("seeds"), List.class));
    assertEquals(WORKLOAD, r.config().get("workload"));
    ServingResults.Entry vllm = r.entries().get(0);
    JsonNode in = new ObjectMapper().valueToTree(vllm.optional().get("intervals"));
    JsonNode tput = in.get("throughput_tokens_per_second");
    assertEquals(5, tput.get("n").asInt());
    assertEquals(0.9375, tput.get("coverage").asDouble());
    assertEquals(vllm.number("throughput_tokens_per_second"), tput.get("median").asDouble());
    assertTrue(tput.get("low").asDouble() <= tput.get("median").asDouble() && tput.get("median").asDouble() <= tput.get("high").asDouble());
    List<String> perSeed = Files.readAllLines(seeds15.resolve("per_seed.csv"));
    assertEquals(1 + 5, perSeed.size());
    assertTrue(perSeed.get(0).startsWith("system,seed,requests_arrived,"), perSeed.get(0));
    // The median of the five per-seed throughputs is the summary's.
    int col = List.of(perSeed.get(0).split(",")).indexOf("throughput_tokens_per_second");
    double[] v = perSeed.subList(1, 6).stream().mapToDouble(l -> Double.parseDouble(l.split(",")[col])).sorted().toArray();
    assertEquals(v[2], tput.get("median").asDouble(), 1e-6);
    assertEquals(v[0], tput.get("low").asDouble(), 1e-6);
    assertEquals(v[4], tput.get("high").asDouble(), 1e-6);
  }

  @Test
  void theSameSeedsWriteTheSameFolder() throws IOException {
    Path again = serving("a-again", WORKLOAD, "1..5");
    List<String> files;
    try (Stream<Path> s = Files.list(seeds15)) {
      files = s.map(p -> p.getFileName().toString()).filter(f -> !f.equals("timing.json") && !f.equals("report.html") && !f.endsWith(".png"))
          .sorted().toList();
    }
    assertTrue(files.contains("per_seed.csv") && files.contains("summary.json"), files.toString());
    for (String f : files) {
      if (Files.isRegularFile(seeds15.resolve(f))) {
        assertArrayEquals(Files.readAllBytes(seeds15.resolve(f)), Files.readAllBytes(again.resolve(f)), f);
      }
    }
  }

  @Test
  void aSeedOnlyChangeIsNoise() {
    CliRun r = CliRun.of("diff", seeds15.toString(), seeds610.toString()).ok();
    assertTrue(r.out().contains(" 0 exceed noise"), r.out());
    assertTrue(r.out().lines().anyMatch(l -> l.startsWith("vllm") && l.contains("throughput_tokens_per_second") && l.endsWith("noise")), r.out());
  }

  @Test
  void aRealChangeExceedsNoise() throws IOException {
    CliRun r = CliRun.of("diff", seeds15.toString(), slowerRate.toString(), "--json").ok();
    JsonNode rows = new ObjectMapper().readTree(r.out()).get("rows");
    boolean found = false;
    for (JsonNode row : rows) {
      if (row.get("metric").asText().equals("throughput_requests_per_second")) {
        found = true;
        assertEquals("exceeds noise", row.get("verdict").asText(), row.toString());
        assertTrue(row.get("b").asDouble() < row.get("a").asDouble(), row.toString()); // 0.5 req/s arrive slower than the preset's own rate
      }
    }
    assertTrue(found, r.out());
  }

  @Test
  void singleRunsHaveNoNoiseEstimateAndThePageIsWritten() throws IOException {
    Path one = dir.resolve("single");
    CliRun.of("serving", WORKLOAD, "--seed", "1", "--kv-memory", "4GiB", "-q", "-o", one.toString()).ok();
    Path page = dir.resolve("d.html");
    CliRun r = CliRun.of("diff", one.toString(), slowerRate.toString(), "-o", page.toString(), "--all").ok();
    assertTrue(r.out().contains("no noise estimate"), r.out());
    assertFalse(r.out().contains(" exceeds noise"), r.out());
    String html = Files.readString(page);
    assertTrue(html.startsWith("<!DOCTYPE html>\n<!-- kvsim diff -->"), html);
    assertTrue(html.contains("throughput_tokens_per_second"), html);
    // -o an existing folder: diff.html in it.
    Path pages = Files.createDirectories(dir.resolve("pages"));
    CliRun.of("diff", one.toString(), slowerRate.toString(), "-o", pages.toString()).ok();
    assertTrue(Files.readString(pages.resolve("diff.html")).startsWith("<!DOCTYPE html>\n<!-- kvsim diff -->"));
    // A page kvsim wrote may be replaced; another file needs --force.
    CliRun.of("diff", one.toString(), slowerRate.toString(), "-o", page.toString()).ok();
    Path mine = dir.resolve("mine.html");
    Files.writeString(mine, "<p>mine</p>");
    CliRun refused = CliRun.of("diff", one.toString(), slowerRate.toString(), "-o", mine.toString());
    assertEquals(2, refused.exitCode());
    assertEquals("<p>mine</p>", Files.readString(mine));
  }

  @Test
  void badInputsAreOneLineAndExitTwo() throws IOException {
    Path replay = dir.resolve("replay");
    CliRun.of("replay", "churn:ops=200", "-a", "first-fit", "--quiet", "-o", replay.toString()).ok();
    Path empty = Files.createDirectories(dir.resolve("empty"));
    String[][] cases = {
      {"diff", seeds15.toString(), replay.toString()},
      {"diff", seeds15.toString(), dir.resolve("nowhere").toString()},
      {"diff", empty.toString(), seeds15.toString()},
      {"diff", seeds15.toString(), seeds610.toString(), "-o", seeds15.resolve("summary.json").toString()},
      {"serving", "requests:preset=sharegpt,count=10", "--seeds", "1..3", "--seed", "2", "-q", "-o", dir.resolve("x").toString()},
      {"serving", "requests:preset=sharegpt,count=10", "--seeds", "3..1", "-q", "-o", dir.resolve("x").toString()},
      {"serving", "requests:preset=sharegpt,count=10", "--seeds", "1,2,1", "-q", "-o", dir.resolve("x").toString()},
      {"serving", "requests:preset=sharegpt,count=10,seed=4", "--seeds", "1..3", "-q", "-o", dir.resolve("x").toString()},
    };
    String[] expected = {
      "is a serving result and", "no such folder", "not a kvsim result folder", "is also an input of this command", "give --seed or --seeds, not both",
      "expected A..B with A <= B", "the seed 1 is given twice", "fixes its own seed",
    };
    for (int i = 0; i < cases.length; i++) {
      CliRun r = CliRun.of(cases[i]);
      assertEquals(2, r.exitCode(), String.join(" ", cases[i]) + "\n" + r.err());
      assertEquals(1, r.err().strip().lines().count(), r.err());
      assertTrue(r.err().contains(expected[i]), r.err());
      assertFalse(Files.exists(dir.resolve("x")));
    }
  }

  @Test
  void seedsOnARecordedTraceAreRefused() throws IOException {
    Path trace = dir.resolve("t.jsonl");
    CliRun.of("generate", "requests", "--preset", "sharegpt", "--count", "10", "-o", trace.toString()).ok();
    CliRun r = CliRun.of("serving", trace.toString(), "--seeds", "1..3", "-q", "-o", dir.resolve("y").toString());
    assertEquals(2, r.exitCode(), r.err());
    assertTrue(r.err().startsWith("kvsim: error: --seeds: has no effect on the recorded trace"), r.err());
    assertEquals(1, r.err().strip().lines().count(), r.err());
  }
}

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
import kvsim.testing.CliRun;
import kvsim.testing.SharedData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim tune}: it finds the setting that removes a constructed fragmentation OOM, keeps its
 * cells for a rerun, writes the same bytes twice, and refuses bad input in one line with nothing
 * written.
 */
class TuneCommandTest {
  @TempDir Path dir;

  /**
   * A 400 MiB block freed, a 50 MiB block that splits its cached segment, then 400 MiB again: on a
   * 700 MiB device the default caching allocator cannot release the split segment and OOMs (1 OOM,
   * as PyTorch would); max_split_size_mb keeps the 50 MiB request off the large free block, and
   * expandable segments map the 400 MiB after it, so both fit (450 and 460 MiB reserved).
   */
  private Path fragmentingTrace() throws IOException {
    Path t = dir.resolve("frag.jsonl");
    Files.writeString(t, String.join("\n",
        "{\"format\":\"kvsim-l1\",\"version\":1}",
        "{\"t\":0,\"op\":\"alloc\",\"id\":0,\"size\":419430400,\"tag\":\"temp\"}",
        "{\"t\":1000,\"op\":\"free\",\"id\":0}",
        "{\"t\":2000,\"op\":\"alloc\",\"id\":1,\"size\":52428800,\"tag\":\"temp\"}",
        "{\"t\":3000,\"op\":\"alloc\",\"id\":2,\"size\":419430400,\"tag\":\"temp\"}",
        "{\"t\":4000,\"op\":\"free\",\"id\":2}",
        "{\"t\":5000,\"op\":\"free\",\"id\":1}", ""));
    return t;
  }

  private static JsonNode json(Path f) throws IOException {
    return new ObjectMapper().readTree(f.toFile());
  }

  @Test
  void findsTheSettingThatRemovesAFragmentationOomAndItRunsWithoutOne() throws IOException {
    Path t = fragmentingTrace();
    Path out = dir.resolve("t");
    CliRun run = CliRun.of("tune", t.toString(), "--device", "700MiB", "-o", out.toString(), "-q").ok();
    JsonNode r = json(out.resolve("tune.json"));
    assertEquals("kvsim-tune", r.get("format").asText());
    assertEquals(1, r.get("default").get("oom_count").asInt(), r.get("default").toString());
    assertEquals("", r.get("default").get("conf").asText().replace("(defaults)", ""));
    JsonNode best = r.get("recommended");
    assertEquals(0, best.get("oom_count").asInt());
    // The least reserved without OOM: max_split_size_mb (450 MiB) beats expandable segments (460 MiB).
    assertEquals(450L << 20, best.get("peak_reserved_bytes").asLong());
    assertEquals("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20", best.get("paste").asText());
    assertTrue(run.out().contains("\nPYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20\n"), run.out());
    assertEquals(84, r.get("search").get("grid_cells").asInt());
    assertEquals(r.get("search").get("cells").asInt(), r.get("cells").size());
    assertTrue(r.get("front").size() >= 1);
    // Every cell of the front is without OOM, and the recommendation is on it.
    for (JsonNode i : r.get("front")) {
      assertEquals(0, r.get("cells").get(i.asInt()).get("oom_count").asInt());
    }
    assertTrue(best.get("on_front").asBoolean());
    // The recommended conf, given to replay, runs without an OOM; the default does not.
    String conf = best.get("conf").asText();
    CliRun.of("replay", t.toString(), "-a", "pytorch-caching", "--device", "700MiB", "--torch-alloc-conf", conf, "-o", dir.resolve("r").toString(), "-q").ok();
    assertEquals(0, json(dir.resolve("r/summary.json")).get("allocators").get(0).get("oom_count").asInt());
    for (String f : List.of("tune.csv", "tune-front.png", "tune-front.svg", "report.html")) {
      assertTrue(Files.size(out.resolve(f)) > 0, f);
    }
    String html = Files.readString(out.resolve("report.html"));
    assertTrue(html.indexOf("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:20") < html.indexOf("<svg"), "the recommendation comes before the chart");
    assertTrue(html.indexOf("<svg") < html.indexOf("Every cell, by rank"), "the chart comes before the cells");
  }

  @Test
  void aRerunRunsOnlyTheCellsWithoutAResultAndWritesTheSameBytes() throws IOException {
    Path t = fragmentingTrace();
    Path out = dir.resolve("t");
    String[] args = {"tune", t.toString(), "--device", "700MiB", "--values", "roundup_power2_divisions=unset,4", "--values",
        "max_split_size_mb=64,unset", "-o", out.toString(), "-q"};
    CliRun first = CliRun.of(args).ok();
    JsonNode r = json(out.resolve("tune.json"));
    int cells = r.get("search").get("cells").asInt();
    assertEquals(8, r.get("search").get("grid_cells").asInt()); // 2 x 2 x 2 x 1
    assertTrue(first.out().contains(", " + cells + " run now,"), first.out());
    byte[] json = Files.readAllBytes(out.resolve("tune.json"));
    byte[] csv = Files.readAllBytes(out.resolve("tune.csv"));
    CliRun again = CliRun.of(args).ok();
    assertTrue(again.out().contains(", 0 run now,"), again.out());
    Path someCell;
    try (Stream<Path> files = Files.list(out.resolve("cells"))) {
      someCell = files.sorted().findFirst().orElseThrow();
    }
    Files.delete(someCell);
    CliRun third = CliRun.of(args).ok();
    assertTrue(third.out().contains(", 1 run now,"), third.out());
    assertArrayEquals(json, Files.readAllBytes(out.resolve("tune.json")));
    // A second folder from scratch, on one thread: the same bytes.
    Path other = dir.resolve("u");
    args[args.length - 2] = other.toString();
    CliRun.of(java.util.stream.Stream.concat(Stream.of(args), Stream.of("--threads", "1")).toArray(String[]::new)).ok();
    assertArrayEquals(json, Files.readAllBytes(other.resolve("tune.json")));
    assertArrayEquals(csv, Files.readAllBytes(other.resolve("tune.csv")));
    assertArrayEquals(Files.readAllBytes(out.resolve("tune-front.svg")), Files.readAllBytes(other.resolve("tune-front.svg")));
  }

  @Test
  void otherAllocatorsSearchTheirDeclaredOptions() throws IOException {
    Path out = dir.resolve("b");
    CliRun run = CliRun.of("tune", "churn:ops=300", "-a", "buddy", "-o", out.toString(), "-q").ok();
    JsonNode r = json(out.resolve("tune.json"));
    assertEquals(6, r.get("search").get("cells").asInt(), run.out()); // min-block: 256KiB .. 8MiB
    assertEquals(0, r.get("search").get("refinement_cells").asInt()); // the grid is the whole ladder
    assertEquals("2MiB", r.get("default").get("setting").get("min-block").asText());
    String paste = r.get("recommended").get("paste").asText();
    assertTrue(paste.startsWith("--set buddy.min-block=") || paste.startsWith("keep buddy's defaults"), paste);
    // The recommendation ranks first: no other cell has fewer OOMs, then less reserved.
    long reserved = r.get("recommended").get("peak_reserved_bytes").asLong();
    for (JsonNode c : r.get("cells")) {
      assertTrue(c.get("oom_count").asLong() > 0 || c.get("peak_reserved_bytes").asLong() >= reserved, c.toString());
    }
  }

  @Test
  void badInputIsOneLineExitTwoAndWritesNothing() throws IOException {
    Path t = fragmentingTrace();
    Path notPickle = dir.resolve("x.pickle");
    Files.writeString(notPickle, "this is not a pickle\n");
    Path out = dir.resolve("never");
    List<List<String>> cases = List.of(
        List.of("--values", "max_split=64", "unknown key 'max_split' for pytorch-caching (known: expandable_segments, max_split_size_mb"),
        List.of("--values", "max_split_size_mb=abc", "--values max_split_size_mb=abc: "),
        List.of("--values", "expandable_segments=yes", "--values expandable_segments=yes: "),
        List.of("--values", "max_split_size_mb", "--values 'max_split_size_mb': write KEY=V1,V2"),
        List.of("-a", "nosuch", "unknown allocator 'nosuch'"),
        List.of("--grid", "huge", "--grid: 'huge' is not default or full"),
        List.of("--device", "lots", "--device: "));
    for (List<String> c : cases) {
      List<String> args = new java.util.ArrayList<>(List.of("tune", t.toString(), "-o", out.toString(), "-q"));
      args.addAll(c.subList(0, c.size() - 1));
      CliRun run = CliRun.of(args.toArray(String[]::new));
      assertEquals(2, run.exitCode(), c + ": " + run.err());
      assertTrue(run.err().startsWith("kvsim: error: ") && run.err().strip().lines().count() == 1, c + ": " + run.err());
      assertTrue(run.err().contains(c.get(c.size() - 1)), c + ": " + run.err());
      assertFalse(Files.exists(out), c.toString());
    }
    CliRun run = CliRun.of("tune", notPickle.toString(), "-o", out.toString(), "-q");
    assertEquals(2, run.exitCode(), run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + notPickle) && run.err().strip().lines().count() == 1, run.err());
    assertFalse(Files.exists(out));
    CliRun buddy = CliRun.of("tune", t.toString(), "-a", "buddy", "--values", "min-block=banana", "-o", out.toString(), "-q");
    assertEquals(2, buddy.exitCode(), buddy.err());
    assertTrue(buddy.err().contains("--values min-block=banana: "), buddy.err());
    assertFalse(Files.exists(out));
  }

  @Test
  void aRealSnapshotGetsTheDefaultsPeakAndARecommendationWithoutOom() throws IOException {
    Path snapshot = SharedData.require("torch-snapshots/cs336_wedsonlin_medium_128_inference.pickle");
    Path out = dir.resolve("s");
    CliRun.of("tune", snapshot.toString(), "--values", "max_split_size_mb=unset,128", "--values", "roundup_power2_divisions=unset,4", "-o",
        out.toString(), "-q").ok();
    JsonNode r = json(out.resolve("tune.json"));
    assertEquals("torch-snapshot", r.get("config").get("input_kind").asText());
    // As `kvsim replay` of the imported snapshot on pytorch-caching reports: 1.64 GiB reserved, no OOM.
    long peak = r.get("default").get("peak_reserved_bytes").asLong();
    assertTrue(peak > 1.6 * (1L << 30) && peak < 1.7 * (1L << 30), Long.toString(peak));
    assertEquals(0, r.get("recommended").get("oom_count").asInt());
    assertTrue(r.get("recommended").get("peak_reserved_bytes").asLong() <= peak);
  }

  @Test
  void aServingSearchPrintsTheBestSettingsAsAVllmCommandLineBesideTheRunnerUpAndTheDefault() throws IOException {
    Path out = dir.resolve("v");
    CliRun run = CliRun.of("tune", "requests:preset=sharegpt,count=60", "--system", "vllm", "--slo", "ttft.p50<=2s", "--slo", "rejected.fraction<=0.5",
        "--max-rate", "20", "--steps", "2",
        "-o", out.toString(), "-q").ok();
    JsonNode r = json(out.resolve("tune.json"));
    assertEquals("kvsim-tune", r.get("format").asText());
    assertEquals("serving", r.get("kind").asText());
    // One setting at a time: the default, 2 + 3 + 3 + 3 + 1 + 1 other values, and the combination when it is new.
    int cells = r.get("cells").size();
    assertTrue(cells == 14 || cells == 15, Integer.toString(cells));
    String best = r.get("recommended").get("vllm").asText();
    assertTrue(best.startsWith("vllm serve llama-2-7b --block-size "), best);
    assertTrue(run.out().contains("\n" + best + "\n"), run.out());
    assertTrue(run.out().contains("\ndefault:   vllm serve llama-2-7b --block-size 16 --gpu-memory-utilization 0.9 --max-num-seqs 256 "
        + "--max-num-batched-tokens 2048 --scheduler-reserve-full-isl --async-scheduling\n"), run.out());
    assertTrue(run.out().contains("\nrunner-up: vllm serve llama-2-7b "), run.out());
    // The recommendation sustains at least the default's rate: the default is one of the cells ranked.
    assertTrue(r.get("recommended").get("rate_rps").asDouble() >= r.get("default").get("rate_rps").asDouble());
    assertEquals(cells + 1, Files.readAllLines(out.resolve("tune.csv")).size());
    assertTrue(Files.readString(out.resolve("report.html")).contains(best));
  }

  @Test
  void withARateTheServingSearchFindsTheLeastKvMemoryThatMeetsIt() throws IOException {
    Path out = dir.resolve("w");
    CliRun.of("tune", "requests:preset=sharegpt,count=60", "--system", "orca-max", "--slo", "ttft.p50<=5s", "--slo", "rejected.fraction<=0.5", "--rate", "0.5",
        "-o", out.toString(), "-q").ok();
    JsonNode r = json(out.resolve("tune.json"));
    // orca-max reads neither block-size nor vLLM v1's scheduler settings: they are not searched.
    List<String> keys = new java.util.ArrayList<>();
    r.get("axes").forEach(a -> keys.add(a.get("key").asText()));
    assertEquals(List.of("gpu-memory-utilization", "max-num-seqs", "max-num-batched-tokens"), keys);
    JsonNode best = r.get("recommended");
    assertTrue(best.get("met").asBoolean());
    // No cell that meets the rate asks for a smaller share of the device.
    double share = best.get("setting").get("gpu-memory-utilization").asDouble();
    assertEquals(0.5, share); // the least of the values searched
    for (JsonNode c : r.get("cells")) {
      assertTrue(!c.get("met").asBoolean() || c.get("setting").get("gpu-memory-utilization").asDouble() >= share, c.toString());
    }
  }

  @Test
  void aServingSearchRefusesBadInputInOneLine() throws IOException {
    Path out = dir.resolve("never");
    List<List<String>> cases = List.of(
        List.of("--system", "vllm", "--slo is needed", "--slo: a serving search needs at least one latency target"),
        List.of("--system", "vllm", "--slo", "ttft<=2s", "--grid", "full", "--budget 40", "--budget 40: the full grid has 768 cells; raise --budget"),
        List.of("--system", "nosuch", "--slo", "ttft<=2s", "unknown system"),
        List.of("--system", "vllm", "--slo", "ttft<=fast", "ttft<=fast"),
        List.of("--slo", "ttft<=2s", "--slo: applies to a serving search (--system S)"));
    for (List<String> c : cases) {
      List<String> args = new java.util.ArrayList<>(List.of("tune", "requests:preset=sharegpt,count=20", "-o", out.toString(), "-q"));
      args.addAll(c.subList(0, c.size() - 1).stream().filter(a -> !a.contains(" ")).toList());
      CliRun run = CliRun.of(args.toArray(String[]::new));
      assertEquals(2, run.exitCode(), c + ": " + run.out() + run.err());
      assertTrue(run.err().startsWith("kvsim: error: ") && run.err().strip().lines().count() == 1, c + ": " + run.err());
      assertTrue(run.err().contains(c.get(c.size() - 1)), c + ": " + run.err());
      assertFalse(Files.exists(out), c.toString());
    }
  }
}

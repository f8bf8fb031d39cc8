package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code --no-report} (Note [Data files only] on {@code report.ResultFolder}): the data files byte
 * for byte as without it, no chart file and no {@code report.html}, the same table; {@code kvsim
 * report} draws them later, and the folder stays one that a later run replaces without {@code
 * --force}.
 */
class NoReportTest {
  @TempDir Path tmp;

  private static final String[] SERVING = {"serving", "requests:preset=sharegpt,rate=4,count=120", "--model", "llama-3-8b", "--kv-memory", "2GiB", "-q"};

  @Test
  void servingWritesTheSameDataFilesAndNoChartOrReport() throws IOException {
    Path full = tmp.resolve("full");
    Path data = tmp.resolve("data");
    CliRun withReport = CliRun.of(concat(SERVING, "-o", full.toString())).ok();
    CliRun without = CliRun.of(concat(SERVING, "-o", data.toString(), "--no-report")).ok();
    assertEquals(withReport.out().replace(full.toString(), "DIR"), without.out().replace(data.toString(), "DIR"), "the same table");
    assertDataOnly(full, data, List.of("summary.json", "timeseries.csv", "latency-quantiles.csv"));
  }

  @Test
  void aReportDrawnLaterHasTheRunsChartsAndTheFolderIsStillReplacedWithoutForce() throws IOException {
    Path full = tmp.resolve("full");
    Path data = tmp.resolve("data");
    CliRun.of(concat(SERVING, "-o", full.toString())).ok();
    CliRun.of(concat(SERVING, "-o", data.toString(), "--no-report")).ok();
    CliRun.of("report", data.toString(), "--redraw-charts").ok();
    for (String name : chartFiles(full)) {
      assertTrue(Files.exists(data.resolve(name)), name);
      if (name.endsWith(".svg")) {
        assertArrayEquals(Files.readAllBytes(full.resolve(name)), Files.readAllBytes(data.resolve(name)), name);
      }
    }
    assertTrue(Files.exists(data.resolve("report.html")));
    // the files the report added are kvsim's: a run replaces the folder without --force
    CliRun.of(concat(SERVING, "-o", data.toString(), "--no-report")).ok();
    assertEquals(List.of(), chartFiles(data));
    assertFalse(Files.exists(data.resolve("report.html")));
  }

  @Test
  void replayAndCompareWriteTheSameDataFilesAndNoChartOrReport() throws IOException {
    for (String command : List.of("replay", "compare")) {
      Path full = tmp.resolve(command + "-full");
      Path data = tmp.resolve(command + "-data");
      String[] args = {command, "churn:ops=400,seed=3", "-a", "first-fit,paged", "-q"};
      CliRun withReport = CliRun.of(concat(args, "-o", full.toString())).ok();
      CliRun without = CliRun.of(concat(args, "-o", data.toString(), "--no-report")).ok();
      assertEquals(withReport.out().replace(full.toString(), "DIR"), without.out().replace(data.toString(), "DIR"), command + ": the same table");
      assertDataOnly(full, data, List.of("summary.json", "timeseries.csv", "memory-map.json"));
    }
  }

  @Test
  void aSeedSweepWritesItsSummaryAndNoReport() throws IOException {
    Path full = tmp.resolve("full");
    Path data = tmp.resolve("data");
    String[] args = {"replay", "churn:ops=200", "--seeds", "1..3", "-a", "first-fit", "-q"};
    CliRun.of(concat(args, "-o", full.toString())).ok();
    CliRun.of(concat(args, "-o", data.toString(), "--no-report")).ok();
    assertDataOnly(full, data, List.of("summary.json"));
  }

  @Test
  void capacityWritesTheSameDataFilesAndNoChartOrReport() throws IOException {
    Path full = tmp.resolve("full");
    Path data = tmp.resolve("data");
    String[] args = {"capacity", "requests:preset=sharegpt,count=40", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40", "--kv-memory",
        "12GiB", "--slo", "normalized_latency.mean<=0.2s", "--slo", "rejected.fraction<=0.6", "--steps", "1", "-q"};
    CliRun withReport = CliRun.of(concat(args, "-o", full.toString())).ok();
    CliRun without = CliRun.of(concat(args, "-o", data.toString(), "--no-report")).ok();
    assertEquals(withReport.out().replace(full.toString(), "DIR"), without.out().replace(data.toString(), "DIR"));
    assertDataOnly(full, data, List.of("summary.json", "probes.csv"));
  }

  @Test
  void aSweepWritesItsTablesAndNoChartOrReportAndResumesAfterAReportWasAdded() throws IOException {
    Path g = tmp.resolve("grid.yaml");
    Files.writeString(g, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, best-fit]\nseeds: 1..2\n");
    Path full = tmp.resolve("full");
    Path data = tmp.resolve("data");
    CliRun withReport = CliRun.of("sweep", g.toString(), "-o", full.toString(), "-q").ok();
    CliRun without = CliRun.of("sweep", g.toString(), "-o", data.toString(), "-q", "--no-report").ok();
    assertTrue(withReport.out().contains(", report.html)") && !without.out().contains("report.html"), without.out());
    assertDataOnly(full, data, List.of("sweep.csv", "sweep.json"));
    CliRun.of("report", data.toString(), "--redraw-charts").ok();
    assertEquals(chartFiles(full), chartFiles(data));
    CliRun again = CliRun.of("sweep", g.toString(), "-o", data.toString(), "--no-report").ok(); // resumed, no --force
    assertTrue(again.err().contains("4 already done, 0 to run"), again.err());
  }

  @Test
  void everyCommandWritingAResultFolderTakesTheSameOption() {
    CommandLine root = KvSim.newCommandLine();
    String description = null;
    for (String name : List.of("replay", "compare", "serving", "capacity", "sweep")) {
      CommandLine.Model.OptionSpec o = root.getSubcommands().get(name).getCommandSpec().findOption("--no-report");
      assertTrue(o != null, name + " has --no-report");
      String text = String.join(" ", o.description());
      description = description == null ? text : description;
      assertEquals(description, text, name + ": the same help text");
    }
  }

  /** Asserts that {@code data} has {@code full}'s files minus charts and report, the named data files byte for byte. */
  private static void assertDataOnly(Path full, Path data, List<String> same) throws IOException {
    assertFalse(chartFiles(full).isEmpty() && !Files.exists(full.resolve("report.html")), "the full folder has a report");
    assertEquals(List.of(), chartFiles(data), "no chart file");
    assertFalse(Files.exists(data.resolve("report.html")), "no report");
    for (String name : same) {
      assertArrayEquals(Files.readAllBytes(full.resolve(name)), Files.readAllBytes(data.resolve(name)), name);
    }
    try (Stream<Path> files = Files.list(full)) {
      for (Path f : files.toList()) {
        String n = f.getFileName().toString();
        boolean drawn = n.endsWith(".png") || n.endsWith(".svg") || n.equals("report.html");
        assertEquals(!drawn, Files.exists(data.resolve(n)), n);
      }
    }
  }

  private static List<String> chartFiles(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".png") || n.endsWith(".svg")).sorted().toList();
    }
  }

  private static String[] concat(String[] a, String... b) {
    String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}

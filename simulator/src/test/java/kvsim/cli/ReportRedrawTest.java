package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim report} draws a serving and a capacity folder's charts from their data files: with
 * the PNG and SVG files deleted, the report is the same, and {@code --redraw-charts} writes the
 * charts again, SVG byte-identical to those the run wrote; a malformed file is exit 2 naming file
 * and field.
 */
class ReportRedrawTest {
  @TempDir Path dir;

  private static final Path GALLERY = Path.of("..", "results", "gallery");

  /** Copies a folder's files (no sub-folders) into {@code to}. */
  private static void copy(Path from, Path to) throws IOException {
    Files.createDirectories(to);
    try (Stream<Path> files = Files.list(from)) {
      for (Path f : files.toList()) {
        if (Files.isRegularFile(f)) {
          Files.copy(f, to.resolve(f.getFileName()));
        }
      }
    }
  }

  /** Deletes the folder's charts; returns the SVG files' names. */
  private static List<String> deleteCharts(Path folder) throws IOException {
    List<String> svgs;
    try (Stream<Path> files = Files.list(folder)) {
      List<Path> charts = files.filter(f -> f.toString().endsWith(".png") || f.toString().endsWith(".svg")).toList();
      svgs = charts.stream().map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".svg")).sorted().toList();
      for (Path c : charts) {
        Files.delete(c);
      }
    }
    return svgs;
  }

  private void redrawsTheFolder(Path original, Path copy, int svgCount) throws IOException {
    copy(original, copy);
    CliRun.of("report", copy.toString(), "-o", dir.resolve("before.html").toString()).ok();
    List<String> svgs = deleteCharts(copy);
    assertEquals(svgCount, svgs.size(), svgs.toString());
    CliRun run = CliRun.of("report", copy.toString(), "--redraw-charts", "-o", dir.resolve("after.html").toString()).ok();
    assertTrue(run.out().contains("charts: " + 2 * svgCount + " files redrawn"), run.out());
    assertArrayEquals(Files.readAllBytes(dir.resolve("before.html")), Files.readAllBytes(dir.resolve("after.html")), "the report needs no chart file");
    for (String svg : svgs) {
      assertArrayEquals(Files.readAllBytes(original.resolve(svg)), Files.readAllBytes(copy.resolve(svg)), svg);
      String png = svg.replace(".svg", ".png");
      assertTrue(Files.size(copy.resolve(png)) > 0, png);
    }
  }

  @Test
  void aServingFolderWithItsChartsDeletedGetsThemBackByteForByte() throws IOException {
    Path out = dir.resolve("serving");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=40", "--system", "vllm,orca-max", "-q", "-o", out.toString()).ok();
    redrawsTheFolder(out, dir.resolve("serving-copy"), 4);
  }

  @Test
  void theCommittedServingAndCapacityGalleryFoldersRedrawByteForByte() throws IOException {
    Path serving = GALLERY.resolve("serving-opt13b-sharegpt");
    Path capacity = GALLERY.resolve("capacity-opt13b-sharegpt");
    assumeTrue(Files.isDirectory(serving) && Files.isDirectory(capacity), "the committed gallery is absent");
    redrawsTheFolder(serving, dir.resolve("serving-copy"), 4);
    redrawsTheFolder(capacity, dir.resolve("capacity-copy"), 1);
  }

  @Test
  void aMalformedCapacitySummaryIsExit2WithFileAndFieldAndNothingIsRedrawn() throws IOException {
    Path out = dir.resolve("cap");
    CliRun.of("capacity", "requests:preset=sharegpt,count=30", "--system", "vllm", "--slo", "normalized_latency.mean<=0.2s", "--slo",
        "rejected.fraction<=0.5", "--max-rate", "4", "--steps", "1", "-o", out.toString()).ok();
    Path summary = out.resolve("summary.json");
    Files.writeString(summary, Files.readString(summary).replaceFirst("\"max_rate_rps\" : [0-9.]+,\n    \"at_upper_bound\"",
        "\"max_rate_rps\" : \"fast\",\n    \"at_upper_bound\""));
    Files.delete(out.resolve("capacity.svg"));
    CliRun run = CliRun.of("report", out.toString(), "--redraw-charts", "-o", dir.resolve("r.html").toString());
    assertEquals(2, run.exitCode());
    assertEquals("kvsim: error: " + summary + ": systems[0].max_rate_rps: expected a non-negative number, found \"fast\"\n", run.err());
    assertFalse(Files.exists(dir.resolve("r.html")));
    assertFalse(Files.exists(out.resolve("capacity.svg")));
  }
}

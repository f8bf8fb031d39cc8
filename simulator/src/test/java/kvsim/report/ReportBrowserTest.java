package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opens the reports of a churn run, serving runs (one with hf-naive), a capacity search, a sweep
 * folder and a comparison (with and without {@code --label}) in headless Chromium: no console
 * message, every chart an SVG with shapes, a title and its series' colours, no two series of a
 * chart alike, every table with rows, and a screenshot under
 * {@code target/browser/} to look at. Skipped with a message where {@code /usr/bin/chromium} is
 * absent ({@code .ci/run} installs it). Run alone with {@code mvn test -Dgroups=browser}.
 */
@Tag("browser")
class ReportBrowserTest {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Pattern SVG = Pattern.compile("<svg\\b[^>]*>(.*?)</svg>", Pattern.DOTALL);
  private static final Pattern SERIES = Pattern.compile("<svg\\b[^>]*\\bdata-series=\"([^\"]*)\"");
  private static final Pattern TABLE = Pattern.compile("<table\\b[^>]*>(.*?)</table>", Pattern.DOTALL);

  @TempDir static Path tmp;

  @BeforeAll
  static void needsChromium() {
    Assumptions.assumeTrue(Files.isExecutable(CHROMIUM), "skipped: no browser at " + CHROMIUM + " (apt-get install chromium)");
  }

  @Test
  void churnRunReportRenders() throws Exception {
    Path dir = tmp.resolve("churn");
    CliRun.of("replay", "churn:ops=3000,seed=1", "-a", "first-fit,best-fit,buddy,paged", "--quiet", "-o", dir.toString()).ok();
    check(dir.resolve("report.html"), "churn", 2);
  }

  @Test
  void servingRunReportRenders() throws Exception {
    Path dir = tmp.resolve("serving");
    CliRun.of("serving", "requests:preset=sharegpt,rate=2,count=300", "--system", "vllm,orca-max,orca-oracle", "--model", "opt-13b",
        "--device", "a100-40", "--kv-memory", "12GiB", "-o", dir.toString()).ok();
    // KV breakdown bars and over time, latency CDFs, batch size.
    check(dir.resolve("report.html"), "serving", 4);
  }

  @Test
  void comparisonReportRenders() throws Exception {
    Path a = tmp.resolve("cmp-a");
    Path b = tmp.resolve("cmp-b");
    CliRun.of("replay", "churn:ops=1500,seed=1", "-a", "first-fit,slab", "--quiet", "-o", a.toString()).ok();
    CliRun.of("replay", "churn:ops=1500,seed=2", "-a", "first-fit,slab", "--quiet", "-o", b.toString()).ok();
    Path html = tmp.resolve("cmp.html");
    CliRun.of("report", a.toString(), b.toString(), "-o", html.toString()).ok();
    // The comparison's chart, then each run's fragmentation chart and memory map.
    check(html, "comparison", 5);
    Path labelled = tmp.resolve("cmp-labelled.html");
    CliRun.of("report", a.toString(), b.toString(), "--label", "base,new", "-o", labelled.toString()).ok();
    String text = Files.readString(labelled);
    assertTrue(text.contains("base: first-fit") && text.contains("new: slab"), "series named by --label");
    check(labelled, "comparison-labelled", 5);
  }

  @Test
  void servingWithHfNaiveAndCapacityReportsRender() throws Exception {
    Path dir = tmp.resolve("serving-hf");
    CliRun.of("serving", "requests:preset=sharegpt,rate=2,count=60", "--system", "vllm,orca-max,hf-naive", "--model", "opt-13b",
        "--device", "a100-40", "--kv-memory", "12GiB", "-o", dir.toString()).ok();
    check(dir.resolve("report.html"), "serving-hf-naive", 4);
    Path cap = tmp.resolve("capacity");
    CliRun.of("capacity", "requests:preset=sharegpt,count=60", "--system", "vllm,orca-max", "--model", "opt-13b", "--device", "a100-40",
        "--kv-memory", "12GiB", "--slo", "normalized_latency.mean<=0.5s", "--slo", "rejected.fraction<=0.5", "--max-rate", "4", "--steps", "3",
        "-o", cap.toString()).ok();
    check(cap.resolve("report.html"), "capacity", 1);
  }

  @Test
  void sweepFolderReportRenders() throws Exception {
    Path grid = tmp.resolve("grid.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=500\"]\nallocators: [first-fit, best-fit, buddy, slab]\nseeds: 1..2\n");
    Path dir = tmp.resolve("sweep");
    CliRun.of("sweep", grid.toString(), "-q", "-o", dir.toString()).ok();
    // A chart per headline metric: peak and mean external fragmentation, refusals, peak reserved.
    check(dir.resolve("report.html"), "sweep", 4);
  }

  /** Opens {@code html}, checks the DOM and the console, and saves a screenshot as {@code name.png}. */
  private static void check(Path html, String name, int charts) throws Exception {
    assertTrue(Files.isRegularFile(html), html + " was not written");
    Path shots = Path.of("target", "browser");
    Files.createDirectories(shots);
    Chrome dom = chromium(html, "--dump-dom");
    List<String> console = new ArrayList<>();
    for (String line : dom.stderr.split("\n")) {
      if (line.contains(":CONSOLE")) {
        console.add(line);
      }
    }
    assertEquals(List.of(), console, "console messages while opening " + html);
    int svgs = 0;
    Matcher m = SVG.matcher(dom.stdout);
    while (m.find()) {
      svgs++;
      String body = m.group(1);
      assertTrue(body.contains("<title"), "an SVG without a title (text alternative) in " + html);
      assertTrue(body.contains("<path") || body.contains("<rect") || body.contains("<line"), "an empty SVG in " + html);
    }
    assertEquals(charts, svgs, "charts rendered in " + html);
    // Note [One colour per name] on Palette: no two series of one chart share a colour (nor, past the palette, a colour and dash).
    int styled = 0;
    Matcher series = SERIES.matcher(dom.stdout);
    while (series.find()) {
      styled++;
      List<String> colours = new ArrayList<>();
      List<String> looks = new ArrayList<>();
      for (String entry : series.group(1).replace("&amp;", "&").split("; ")) {
        String look = entry.substring(entry.lastIndexOf('=') + 1);
        assertTrue(look.startsWith("#"), "a series without a colour in " + html + ": " + entry);
        assertFalse(looks.contains(look), "two series drawn alike (" + look + ") in a chart of " + html + ": " + series.group(1));
        looks.add(look);
        colours.add(look.substring(0, 7));
      }
      if (colours.size() <= Palette.COLOURS.size()) {
        assertEquals(colours.size(), new java.util.HashSet<>(colours).size(), "two series share a colour in a chart of " + html + ": " + series.group(1));
      }
    }
    assertEquals(charts, styled, "every chart lists its series' colours (data-series) in " + html);
    int tables = 0;
    Matcher t = TABLE.matcher(dom.stdout);
    while (t.find()) {
      tables++;
      assertTrue(t.group(1).contains("<td"), "a table without data cells in " + html);
    }
    assertTrue(tables >= charts + 1, "expected a data table per chart and a summary in " + html + ", found " + tables);
    Path png = shots.resolve(name + ".png").toAbsolutePath();
    chromium(html, "--screenshot=" + png, "--window-size=1400,3000", "--hide-scrollbars");
    assertTrue(Files.size(png) > 10_000, "screenshot " + png + " is empty");
  }

  private record Chrome(String stdout, String stderr) {}

  private static Chrome chromium(Path html, String... extra) throws IOException, InterruptedException {
    Path profile = Files.createTempDirectory(tmp, "profile-");
    List<String> cmd = new ArrayList<>(List.of(CHROMIUM.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"));
    cmd.addAll(List.of(extra));
    cmd.add(html.toAbsolutePath().toUri().toString());
    Path out = Files.createTempFile(tmp, "out-", ".txt");
    Path err = Files.createTempFile(tmp, "err-", ".txt");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("chromium did not finish within 120 s on " + html);
    }
    String stderr = Files.readString(err, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), "chromium failed on " + html + ":\n" + stderr);
    return new Chrome(Files.readString(out, StandardCharsets.UTF_8), stderr);
  }
}

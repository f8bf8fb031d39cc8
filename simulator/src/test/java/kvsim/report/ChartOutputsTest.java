package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Charts off the critical path (Note [Charts off the critical path] on {@link ChartJobs}): drawn in
 * parallel, a folder's chart files are the same bytes run after run; the report that takes its
 * SVGs from the drawing jobs is the report drawn on its own (Note [One drawing, two SVGs]); the PNG
 * encoder keeps every pixel (Note [Chart PNGs]).
 */
class ChartOutputsTest {
  @TempDir Path tmp;

  @Test
  void parallelDrawingGivesTheSameChartFilesRunAfterRun() throws IOException {
    Path a = serving("a");
    Path b = serving("b");
    List<String> names = files(a);
    assertTrue(names.contains("kv-breakdown.png") && names.contains("latency-cdf.svg") && names.contains("report.html"), names.toString());
    assertEquals(names, files(b));
    for (String n : names) {
      if (!n.equals("timing.json")) {
        assertArrayEquals(Files.readAllBytes(a.resolve(n)), Files.readAllBytes(b.resolve(n)), n);
      }
    }
    // drawn again from the files, in parallel, over the first: the same bytes
    byte[] png = Files.readAllBytes(a.resolve("batch-size.png"));
    ServingCharts.redraw(a);
    assertArrayEquals(png, Files.readAllBytes(a.resolve("batch-size.png")));
    assertArrayEquals(Files.readAllBytes(b.resolve("kv-breakdown.svg")), Files.readAllBytes(a.resolve("kv-breakdown.svg")));
  }

  @Test
  void theReportTakingTheDrawnSvgsIsTheReportDrawnOnItsOwn() throws IOException {
    Path a = serving("a");
    byte[] written = Files.readAllBytes(a.resolve(HtmlReport.FILE));
    HtmlReport.writeInto(a, HtmlReport.titleOf(ResultsReader.readServing(a).config()));
    assertArrayEquals(written, Files.readAllBytes(a.resolve(HtmlReport.FILE)));

    Path r = tmp.resolve("replay");
    CliRun.of("replay", "churn:ops=300,seed=2", "-a", "first-fit,paged", "-q", "-o", r.toString()).ok();
    byte[] replay = Files.readAllBytes(r.resolve(HtmlReport.FILE));
    HtmlReport.writeInto(r, HtmlReport.titleOf(ResultsReader.read(r).config()));
    assertArrayEquals(replay, Files.readAllBytes(r.resolve(HtmlReport.FILE)));
    String html = new String(replay, java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(html.contains("<svg id=\"c1\"") || html.contains("<svg id='c1'"), "the first figure's id names its svg element");
    assertTrue(!html.contains("kvsim-ids") && !html.contains("kvsim-element-id"), "no placeholder left");
  }

  @Test
  void theSvgFileAndTheInlineCopyComeFromOneDrawingAsFromTwo() throws IOException {
    Path a = serving("a");
    ServingResults r = ServingResultsReader.read(a);
    org.jfree.chart.JFreeChart chart = ServingCharts.latencyCdf(r, "subject");
    ChartFiles.Svg once = ChartFiles.drawSvg(chart, 1200, 460);
    String document = new String(Files.readAllBytes(a.resolve("latency-cdf.svg")), java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(document.contains("kvsim-clip-0"), "the file's ids are prefixed kvsim-");
    // drawn twice, the old way: a fixed prefix each
    org.jfree.svg.SVGGraphics2D g = new org.jfree.svg.SVGGraphics2D(1200, 460);
    g.setGeomDoubleConverter(v -> String.valueOf(Math.round(v * 10) / 10.0));
    g.setDefsKeyPrefix("c7-");
    ServingCharts.latencyCdf(r, "subject").draw(g, new java.awt.Rectangle(0, 0, 1200, 460));
    String element = g.getSVGElement("c7", false, new org.jfree.svg.ViewBox(0, 0, 1200, 460), null, null);
    String inline = once.inline("c7", "text");
    assertEquals(element.substring(element.indexOf('>') + 1), inline.substring(inline.indexOf("</title>") + "</title>".length()));
    assertEquals(element.substring(0, element.indexOf('>')), inline.substring(0, element.indexOf('>')));
  }

  @Test
  void thePngEncoderKeepsEveryPixelOfAChartAndOfATranslucentImage() throws IOException {
    Path a = serving("a");
    BufferedImage chart = ServingCharts.batchSize(ServingResultsReader.read(a), "subject").createBufferedImage(1200, 460);
    assertSamePixels(chart, ImageIO.read(new ByteArrayInputStream(PngEncoder.encode(chart))));
    BufferedImage translucent = new BufferedImage(37, 23, BufferedImage.TYPE_INT_ARGB);
    Graphics2D g = translucent.createGraphics();
    g.setColor(new Color(200, 30, 60, 90));
    g.fillOval(3, 2, 30, 19);
    g.dispose();
    byte[] png = PngEncoder.encode(translucent);
    assertEquals(6, png[25], "colour type RGBA where a pixel is not opaque");
    assertSamePixels(translucent, ImageIO.read(new ByteArrayInputStream(png)));
    assertEquals(2, PngEncoder.encode(chart)[25], "colour type RGB where every pixel is opaque");
  }

  private static void assertSamePixels(BufferedImage expected, BufferedImage actual) {
    assertEquals(expected.getWidth(), actual.getWidth());
    assertEquals(expected.getHeight(), actual.getHeight());
    int w = expected.getWidth();
    int h = expected.getHeight();
    assertArrayEquals(expected.getRGB(0, 0, w, h, null, 0, w), actual.getRGB(0, 0, w, h, null, 0, w));
  }

  private Path serving(String name) {
    Path out = tmp.resolve(name);
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=120", "--system", "vllm,orca-max", "--model", "llama-3-8b", "--kv-memory", "2GiB",
        "-q", "-o", out.toString()).ok();
    return out;
  }

  private static List<String> files(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }
}

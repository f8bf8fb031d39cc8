package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.core.InputException;
import kvsim.metrics.MemoryMap;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code memory-map.json} round-trips and is read strictly; {@code kvsim report} writes and refuses as documented. */
class MemoryMapFileTest {
  @TempDir Path tmp;

  private static MemoryMap sample() {
    return new MemoryMap("first-fit", 10, 0, 3 << 20, 100, 3, 0.0, List.of("kv", "temp"),
        List.of(new MemoryMap.Rectangle(0, 1 << 20, 1, 5, 0), new MemoryMap.Rectangle(1 << 20, 2 << 20, 2, 11, 1)),
        2, new long[] {0, 512, 512, 0, 0}, new long[] {0, 1, 0, 0, 2});
  }

  @Test
  void roundTrips() throws Exception {
    MemoryMapFile.write(tmp, List.of(sample()));
    MemoryMap back = MemoryMapFile.read(tmp).get(0);
    MemoryMap m = sample();
    assertEquals(m.rectangles(), back.rectangles());
    assertEquals(m.tags(), back.tags());
    assertArrayEquals(m.elidedMeanBytes(), back.elidedMeanBytes());
    assertArrayEquals(m.oomCounts(), back.oomCounts());
    assertEquals(m.rectanglesSeen(), back.rectanglesSeen());
    assertEquals(3, back.oomTotal());
  }

  @Test
  void refusesAnUnknownTagIndexNamingTheField() throws Exception {
    MemoryMapFile.write(tmp, List.of(sample()));
    Path f = tmp.resolve(MemoryMapFile.FILE);
    Files.writeString(f, Files.readString(f).replace("[1048576,2097152,2,11,1]", "[1048576,2097152,2,11,7]"));
    InputException e = assertThrows(InputException.class, () -> MemoryMapFile.read(tmp));
    assertTrue(e.getMessage().contains("allocators[0].rectangles[1][4]"), e.getMessage());
  }

  @Test
  void reportCommandWritesAndNeverReplacesAForeignFile() throws Exception {
    Path run = tmp.resolve("run");
    CliRun.of("replay", "churn:ops=400,seed=3", "-a", "first-fit,paged", "--quiet", "-o", run.toString()).ok();
    assertTrue(Files.readString(run.resolve(HtmlReport.FILE)).contains(HtmlReport.GENERATOR));
    Path html = tmp.resolve("r.html");
    CliRun.of("report", run.toString(), run.toString(), "-o", html.toString()).ok();
    String text = Files.readString(html);
    assertTrue(text.contains("Comparison") && text.contains("Memory map"), "a comparison with memory maps");
    CliRun.of("report", run.toString(), "-o", html.toString()).ok(); // an earlier report may be replaced
    Path mine = tmp.resolve("notes.html");
    Files.writeString(mine, "my notes");
    CliRun refused = CliRun.of("report", run.toString(), "-o", mine.toString());
    assertEquals(2, refused.exitCode());
    assertEquals("my notes", Files.readString(mine));
    assertEquals(2, CliRun.of("report", tmp.resolve("absent").toString(), "-o", tmp.resolve("x.html").toString()).exitCode());
  }
}

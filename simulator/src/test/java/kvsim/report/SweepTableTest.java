package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A sweep's table: what is written reads back equal and writes out as the same bytes; a malformed sweep.json is refused naming its field. */
class SweepTableTest {
  @TempDir Path dir;

  private static SweepTableResults.Row row(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return new SweepTableResults.Row(m);
  }

  @Test
  void aTableWrittenReadsBackEqualWithItsCsv() throws IOException {
    Path d = Files.createDirectories(dir.resolve("t"));
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("grid", "g.yaml");
    config.put("cells", 2);
    SweepTableResults t = SweepTableResults.of(config, List.of(row("workload", "churn:ops=3,seed=1", "seed", 1, "peak", 0.25),
        row("workload", "w", "seed", 2, "extra", true, "peak", null)));
    assertEquals(List.of("workload", "seed", "peak", "extra"), t.columns());
    SweepTable.write(d, t);
    SweepTableResults back = SweepTable.read(d);
    assertEquals(t, back);
    assertEquals(0.25, back.rows().get(0).number("peak"));
    assertEquals(List.of("workload,seed,peak,extra", "\"churn:ops=3,seed=1\",1,0.25,", "w,2,,true"), Files.readAllLines(d.resolve(SweepTable.CSV_FILE)));
  }

  @Test
  void aSweepsTableReadBackWritesOutAsTheSameBytes() throws IOException {
    Path g = dir.resolve("grid.yaml");
    Files.writeString(g, "workloads: [\"churn:ops=300\"]\nallocators: [first-fit, best-fit]\nseeds: 1..2\n");
    Path out = dir.resolve("s");
    CliRun.of("sweep", g.toString(), "-o", out.toString(), "-q").ok();
    SweepTableResults t = SweepTable.read(out);
    assertEquals(4, t.rows().size());
    assertEquals("first-fit", t.rows().get(0).text("allocator"));
    Path again = Files.createDirectories(dir.resolve("again"));
    SweepTable.write(again, t);
    for (String f : List.of(SweepTable.CSV_FILE, SweepTable.JSON_FILE)) {
      assertArrayEquals(Files.readAllBytes(out.resolve(f)), Files.readAllBytes(again.resolve(f)), f);
    }
  }

  private String refusal(String json) throws IOException {
    Path d = Files.createDirectories(dir.resolve("bad"));
    Files.writeString(d.resolve(SweepTable.JSON_FILE), json);
    InputException e = assertThrows(InputException.class, () -> SweepTable.read(d));
    assertTrue(!e.getMessage().contains("\n") && e.getMessage().startsWith(d.resolve(SweepTable.JSON_FILE).toString()), e.getMessage());
    return e.getMessage();
  }

  @Test
  void aMalformedTableIsRefusedNamingTheField() throws IOException {
    String head = "{\"format\":\"kvsim-sweep-table\",\"version\":1,\"config\":{},";
    assertTrue(refusal(head + "\"columns\":[\"a\"],\"rows\":[{\"b\":1}]}").contains("rows[0].b"));
    assertTrue(refusal(head + "\"columns\":[\"a\"],\"rows\":[{\"a\":[1]}]}").contains("rows[0].a"));
    assertTrue(refusal(head + "\"columns\":[\"a\",\"a\"],\"rows\":[]}").contains("columns[1]"));
    assertTrue(refusal(head + "\"columns\":[\"a\"]}").contains("rows"));
    assertTrue(refusal("{\"format\":\"kvsim-reproduction\",\"version\":1}").contains("format"));
  }
}

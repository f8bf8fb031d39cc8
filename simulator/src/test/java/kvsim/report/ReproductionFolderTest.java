package kvsim.report;

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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A reproduction's reproduction.json: what is written reads back equal; a malformed file is refused naming the file and field. */
class ReproductionFolderTest {
  @TempDir Path dir;

  private static ReproductionResults sample() {
    Map<String, Object> inner = new LinkedHashMap<>();
    inner.put("token_states", 0.25);
    inner.put("reserved_future", 0.75);
    Map<String, Object> numbers = new LinkedHashMap<>();
    numbers.put("vllm", inner);
    numbers.put("note", "text");
    return new ReproductionResults("demo", "A demo table", List.of("system", "kvsim", "published"),
        List.of(List.of("vllm", "25.0 %", "not given"), List.of("orca-max", "5.0 %", "")), numbers);
  }

  private Path written() throws IOException {
    return ReproductionFolder.write(ResultFolder.Target.at(dir.resolve("demo"), ResultFolder.Kind.REPRODUCTION, false).check(), sample(),
        "First paragraph\nover two lines.\n\nSecond.", Map.of());
  }

  @Test
  void whatIsWrittenReadsBackEqual() throws IOException {
    Path d = written();
    assertEquals(sample(), ReproductionFolder.read(d));
    String readme = Files.readString(d.resolve("README.md"));
    assertTrue(readme.startsWith("# A demo table\n\nFirst paragraph over two lines.\n\nSecond.\n\n|system|kvsim|published|\n"), readme);
  }

  @Test
  void theCommittedReproductionsReadBackAndWriteOutAsTheSameBytes() throws IOException {
    Path committed = Path.of("..", "results", "reproductions");
    int read = 0;
    for (String name : List.of("seed000-churn", "vllm-fig2", "vllm-fig12", "vllm-fig13", "vllm-table1")) {
      Path d = committed.resolve(name);
      if (!Files.isRegularFile(d.resolve(ReproductionFolder.FILE))) {
        continue;
      }
      ReproductionResults r = ReproductionFolder.read(d);
      assertEquals(name, r.name());
      String bytes = ResultsWriter.json().writeValueAsString(ReproductionFolder.json(r)) + "\n";
      assertEquals(Files.readString(d.resolve(ReproductionFolder.FILE)), bytes, name);
      read++;
    }
    assertTrue(read > 0, "the repository's results/reproductions holds the committed reproductions");
  }

  private String refusal(String json) throws IOException {
    Path d = dir.resolve("bad");
    Files.createDirectories(d);
    Files.writeString(d.resolve(ReproductionFolder.FILE), json);
    InputException e = assertThrows(InputException.class, () -> ReproductionFolder.read(d));
    assertTrue(!e.getMessage().contains("\n"), e.getMessage());
    assertTrue(e.getMessage().startsWith(d.resolve(ReproductionFolder.FILE).toString()), e.getMessage());
    return e.getMessage();
  }

  @Test
  void aMalformedFileIsRefusedNamingTheField() throws IOException {
    String head = "{\"format\":\"kvsim-reproduction\",\"version\":1,\"name\":\"x\",\"title\":\"t\",";
    assertTrue(refusal(head + "\"columns\":[\"a\",\"b\"],\"rows\":[[\"1\"]],\"numbers\":{}}").contains("rows[0]"));
    assertTrue(refusal(head + "\"columns\":[\"a\"],\"rows\":[[1]],\"numbers\":{}}").contains("rows[0][0]"));
    assertTrue(refusal(head + "\"columns\":[\"a\"],\"rows\":[],\"numbers\":[]}").contains("numbers"));
    assertTrue(refusal(head + "\"columns\":[\"a\"],\"rows\":[],\"numbers\":{},\"extra\":1}").contains("extra"));
    assertTrue(refusal("{\"format\":\"kvsim-serving-summary\",\"version\":1}").contains("format"));
    assertTrue(refusal(head.replace("\"title\":\"t\",", "") + "\"columns\":[],\"rows\":[],\"numbers\":{}}").contains("title"));
  }
}

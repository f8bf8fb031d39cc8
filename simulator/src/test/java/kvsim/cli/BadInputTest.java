package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** Every class of bad input: exit status 2, one line naming file, line and field, and no result folder. */
class BadInputTest {
  @TempDir Path tmp;

  private static final String HEADER = "{\"format\":\"kvsim-l1\",\"version\":1}";
  private static final String GOOD = "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096}";

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "malformed JSON line | {\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":1 | :3: | malformed JSON",
        "missing field | {\"t\":2,\"op\":\"alloc\",\"id\":2} | :3: size: | missing",
        "unknown id | {\"t\":2,\"op\":\"free\",\"id\":99} | :3: id: | not live",
        "double free | {\"t\":2,\"op\":\"free\",\"id\":1}\\n{\"t\":3,\"op\":\"free\",\"id\":1} | :4: id: | double free",
        "negative size | {\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":-5} | :3: size: | must be positive",
        "zero size | {\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":0} | :3: size: | must be positive",
        "time going backwards | {\"t\":0,\"op\":\"free\",\"id\":1} | :3: t: | time goes backwards",
      })
  void aBadTraceExitsTwoWithOneLineAndLeavesNoResults(String label, String badLines, String where, String problem) throws IOException {
    Path trace = tmp.resolve("bad.jsonl");
    Files.writeString(trace, HEADER + "\n" + GOOD + "\n" + badLines.replace("\\n", "\n") + "\n");
    Path out = tmp.resolve("out");
    CliRun run = CliRun.of("replay", trace.toString(), "-a", "first-fit,paged", "-o", out.toString(), "--quiet");
    assertEquals(2, run.exitCode(), run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    assertTrue(err.startsWith("kvsim: error: " + trace + where), err);
    assertTrue(err.contains(problem), err);
    assertNoResults(out);
  }

  @Test
  void anUnknownAllocatorNameExitsTwo() throws IOException {
    Path out = tmp.resolve("out");
    CliRun run = CliRun.of("replay", "churn:ops=10", "-a", "first-fit,best-fit", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("unknown allocator 'best-fit'"), run.err());
    assertNoResults(out);
  }

  @Test
  void anUnknownAllocatorOptionExitsTwo() throws IOException {
    Path out = tmp.resolve("out");
    CliRun run = CliRun.of("replay", "churn:ops=10", "-a", "slab", "--set", "slab.blok-size=4MiB", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("unknown option 'blok-size'"), run.err());
    assertNoResults(out);
  }

  @Test
  void malformedYamlExitsTwoNamingTheLine() throws IOException {
    Path spec = tmp.resolve("w.yaml");
    Files.writeString(spec, "workload: churn\nparams: {ops: 10\nseed: 1\n");
    Path out = tmp.resolve("out");
    CliRun run = CliRun.of("replay", spec.toString(), "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().startsWith("kvsim: error: " + spec + ":"), run.err());
    assertTrue(run.err().contains("bad YAML"), run.err());
    assertNoResults(out);
  }

  @Test
  void anUnknownYamlFieldExitsTwoNamingLineAndField() throws IOException {
    Path spec = tmp.resolve("w.yaml");
    Files.writeString(spec, "workload: churn\nsede: 1\n");
    CliRun run = CliRun.of("replay", spec.toString(), "-o", tmp.resolve("out").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().startsWith("kvsim: error: " + spec + ":2: sede: bad YAML: unknown field"), run.err());
  }

  @Test
  void aMissingTraceFileExitsTwo() {
    CliRun run = CliRun.of("replay", tmp.resolve("nope.jsonl").toString(), "-o", tmp.resolve("out").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("no such trace file"), run.err());
  }

  @Test
  void aBadGeneratorParameterExitsTwo() {
    CliRun run = CliRun.of("replay", "churn:ops=ten", "-o", tmp.resolve("out").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("option ops='ten'"), run.err());
  }

  private void assertNoResults(Path out) throws IOException {
    assertFalse(Files.exists(out), "result folder left behind");
    try (Stream<Path> s = Files.list(tmp)) {
      assertTrue(s.noneMatch(p -> p.getFileName().toString().startsWith(".out")), "temporary folder left behind");
    }
  }
}

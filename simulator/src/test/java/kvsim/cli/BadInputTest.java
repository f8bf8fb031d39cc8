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
    CliRun run = CliRun.of("replay", "churn:ops=10", "-a", "first-fit,no-such-fit", "-o", out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("unknown allocator 'no-such-fit'"), run.err());
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

  /** Runs {@code kvsim args} and returns its single error line, after checking exit status 2. */
  private static String oneErrorLine(String... args) {
    CliRun run = CliRun.of(args);
    assertEquals(2, run.exitCode(), run.out() + run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    return err;
  }

  @Test
  void aFolderGivenAsATraceIsCalledAFolder() throws IOException {
    Path dir = Files.createDirectory(tmp.resolve("traces"));
    assertEquals(
        "kvsim: error: " + dir + ": is a folder, not a trace file (expected an L1 trace .jsonl, a .yaml spec or a generator spec)",
        oneErrorLine("replay", dir.toString(), "-o", tmp.resolve("out").toString()));
    assertTrue(oneErrorLine("torch-inspect", dir.toString()).startsWith("kvsim: error: " + dir + ": is a folder, not a snapshot file"));
    assertTrue(oneErrorLine("blocks", dir.toString()).startsWith("kvsim: error: " + dir + ": is a folder"));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '"',
      value = {
        "unknown generator parameter | workload: churn\\nparams: {opps: 100} | :2: params.opps: generator churn: unknown option 'opps'",
        "bad generator value | workload: churn\\nparams:\\n  ops: ten | :3: params.ops: generator churn: option ops='ten'",
        "unknown device | workload: churn\\ndevice: h100-8 | :2: device: unknown device 'h100-8'",
        "unknown model | workload: churn\\nmodel: llama-9 | :2: model: ",
        "missing trace | workload: missing.jsonl | :1: workload: ",
        "bad plan size | workload: churn\\nplan: {weights: 5XB} | :2: plan.weights: not a size",
        "unknown allocator option | workload: churn\\nallocators: [slab]\\noptions:\\n  slab: {blok-size: 4MiB} | :4: options.slab.blok-size: allocator slab: unknown option 'blok-size'",
        "unknown allocator | workload: churn\\nallocators: [first-fit, best-fitt] | :2: allocators: unknown allocator 'best-fitt'",
        "malformed YAML | workload: churn\\nparams: {ops: 100 | :2: params: bad YAML: while parsing a flow mapping; expected ',' or '}'",
      })
  void errorsInAWorkloadSpecNameTheSpecFileLineAndField(String label, String yaml, String expected) throws IOException {
    Path spec = tmp.resolve("w.yaml");
    Files.writeString(spec, yaml.replace("\\n", "\n") + "\n");
    String err = oneErrorLine("replay", spec.toString(), "-o", tmp.resolve("out").toString());
    assertTrue(err.startsWith("kvsim: error: " + spec + expected), err);
    assertNoResults(tmp.resolve("out"));
  }

  @Test
  void aNegativeDeviceSizeIsCalledNegativeNotUnknown() {
    assertEquals("kvsim: error: --device: device size must be positive: '-5GB'", oneErrorLine("replay", "churn:ops=10", "--device", "-5GB"));
  }

  @Test
  void aDeviceTooSmallForPagedBlamesTheDeviceNotAnOptionTheUserNeverGave() {
    String err = oneErrorLine("replay", "churn:ops=10", "-a", "paged", "--device", "1KiB");
    assertEquals(
        "kvsim: error: paged: the region under test (1.00 KiB) holds fewer than 2 pages of 8.00 MiB (16 tokens of llama-2-7b;"
            + " vLLM keeps one page as the null page): give a larger --device, or fewer block-tokens",
        err);
  }

  @Test
  void malformedJsonIsExplainedInPlainWords() throws IOException {
    Path trace = tmp.resolve("t.jsonl");
    Files.writeString(trace, HEADER + "\n{\"t\":1,\"op\":\"al\n");
    String err = oneErrorLine("replay", trace.toString(), "-o", tmp.resolve("out").toString());
    assertEquals("kvsim: error: " + trace + ":2: malformed JSON: a string is not closed before the end of the line (missing '\"')", err);
    Files.writeString(trace, HEADER + "\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":5,}\n");
    err = oneErrorLine("replay", trace.toString(), "-o", tmp.resolve("out").toString());
    assertEquals("kvsim: error: " + trace + ":2: malformed JSON: expected a field name in double quotes, found '}' (a trailing comma?)", err);
  }

  private void assertNoResults(Path out) throws IOException {
    assertFalse(Files.exists(out), "result folder left behind");
    try (Stream<Path> s = Files.list(tmp)) {
      assertTrue(s.noneMatch(p -> p.getFileName().toString().startsWith(".out")), "temporary folder left behind");
    }
  }
}

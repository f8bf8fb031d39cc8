package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@code kvsim blocks}: golden scripts byte for byte, errors as one line with exit 2, atomic output. */
class BlocksCommandTest {
  private static final Path GOLDEN = Path.of("src", "test", "resources", "blocks");

  static Stream<String> goldenScripts() throws IOException {
    try (Stream<Path> files = Files.list(GOLDEN)) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.endsWith(".jsonl") && !n.endsWith(".out.jsonl"))
          .sorted()
          .toList()
          .stream();
    }
  }

  @ParameterizedTest
  @MethodSource("goldenScripts")
  void theOutputOfAGoldenScriptMatchesItsExpectedFileByteForByte(String name) throws IOException {
    Path script = GOLDEN.resolve(name);
    String expected = Files.readString(GOLDEN.resolve(name.replace(".jsonl", ".out.jsonl")), StandardCharsets.UTF_8);
    CliRun run = CliRun.of("blocks", "--check", script.toString()).ok();
    assertEquals(expected, run.out().replace(System.lineSeparator(), "\n"));
  }

  @ParameterizedTest
  @MethodSource("goldenScripts")
  void onStandardOutputTheBytesAreWrittenAsTheyAre(String name) throws IOException {
    Path script = GOLDEN.resolve(name);
    byte[] expected = Files.readAllBytes(GOLDEN.resolve(name.replace(".jsonl", ".out.jsonl")));
    for (java.nio.charset.Charset cs : List.of(StandardCharsets.UTF_8, StandardCharsets.UTF_16BE)) {
      // UTF-8: the bytes go to the stream beneath the writer; another charset: through the writer, as text.
      java.io.ByteArrayOutputStream stdout = new java.io.ByteArrayOutputStream();
      picocli.CommandLine cl = KvSim.newCommandLine(new String[] {"blocks"});
      cl.setOut(new KvSim.Stdout(stdout, cs));
      assertEquals(0, cl.execute("blocks", "--check", script.toString()));
      String printed = stdout.toString(cs).replace(System.lineSeparator(), "\n");
      assertEquals(new String(expected, StandardCharsets.UTF_8), printed, cs + " " + name);
    }
  }

  @Test
  void thereAreGoldenScriptsForBothModes() throws IOException {
    List<String> names = goldenScripts().toList();
    assertTrue(names.contains("prefix-sharing.jsonl"), names.toString());
    assertTrue(names.contains("v0-fork-swap.jsonl"), names.toString());
    assertTrue(names.contains("scheduler-steps.jsonl"), names.toString());
  }

  @Test
  void theWorkloadsExamplesMatchTheirCommittedOutputs() throws IOException {
    Path workloads = Path.of("..", "workloads", "blocks");
    assertTrue(Files.isDirectory(workloads), "workloads/blocks is missing");
    try (Stream<Path> files = Files.list(workloads)) {
      for (Path script : files.filter(p -> p.toString().endsWith(".jsonl") && !p.toString().endsWith(".out.jsonl")).toList()) {
        String expected =
            Files.readString(Path.of(script.toString().replace(".jsonl", ".out.jsonl")), StandardCharsets.UTF_8);
        assertEquals(expected, CliRun.of("blocks", script.toString()).ok().out().replace(System.lineSeparator(), "\n"), script.toString());
      }
    }
  }

  @Test
  void dashOWritesTheSameBytesAsStandardOutput(@TempDir Path dir) throws IOException {
    Path out = dir.resolve("sub").resolve("out.jsonl");
    Path script = GOLDEN.resolve("prefix-sharing.jsonl");
    CliRun run = CliRun.of("blocks", script.toString(), "-o", out.toString()).ok();
    assertEquals("", run.out());
    assertEquals(Files.readString(GOLDEN.resolve("prefix-sharing.out.jsonl")), Files.readString(out));
  }

  private static CliRun runScript(Path dir, String... lines) throws IOException {
    Path script = dir.resolve("s.jsonl");
    Files.write(script, List.of(lines));
    return CliRun.of("blocks", script.toString(), "-o", dir.resolve("out.jsonl").toString());
  }

  private static void assertBadInput(CliRun run, Path dir, String... fragments) throws IOException {
    assertEquals(2, run.exitCode(), run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    for (String f : fragments) {
      assertTrue(err.contains(f), "'" + f + "' missing from: " + err);
    }
    try (Stream<Path> left = Files.list(dir)) {
      assertEquals(List.of("s.jsonl"), left.map(p -> p.getFileName().toString()).toList(), "no output or temporary file");
    }
  }

  private static final String CONFIG = "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4}";

  @Test
  void anUnknownRequestStopsWithFileLineAndField(@TempDir Path dir) throws IOException {
    CliRun run = runScript(dir, CONFIG, "# comment", "{\"op\":\"admit\",\"req\":\"ghost\"}");
    assertBadInput(run, dir, "s.jsonl:3: req: unknown request 'ghost'");
  }

  @Test
  void malformedJsonStopsWithTheLine(@TempDir Path dir) throws IOException {
    CliRun run = runScript(dir, CONFIG, "{\"op\":\"add\",\"req\":\"A\",");
    assertBadInput(run, dir, "s.jsonl:2: malformed JSON");
  }

  @Test
  void textAfterTheObjectIsRefusedNotIgnored(@TempDir Path dir) throws IOException {
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"state\"} {\"op\":\"state\"}"), dir, "s.jsonl:2: text after the JSON object");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"state\"} x"), dir, "s.jsonl:2: malformed JSON");
  }

  @Test
  void aLineThatIsNotUtf8IsRefusedWithItsNumberEvenInAComment(@TempDir Path dir) throws IOException {
    Path script = dir.resolve("s.jsonl");
    byte[] latin1 = "# caf\u00e9\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    Files.write(script, (CONFIG + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
    Files.write(script, latin1, java.nio.file.StandardOpenOption.APPEND);
    assertBadInput(CliRun.of("blocks", script.toString(), "-o", dir.resolve("out.jsonl").toString()), dir, "s.jsonl:2: not UTF-8 text");
  }

  @Test
  void linesWithOtherThanAsciiReadAsTheirText(@TempDir Path dir) throws IOException {
    // A request id beyond ASCII, a comment after Unicode white space, a line ending in \r\n.
    Path script = dir.resolve("s.jsonl");
    Files.writeString(script, CONFIG + "\r\n\u2003# note\n{\"op\":\"add\",\"req\":\"caf\u00e9\",\"prompt\":[1,2,3]}\n"
        + "{\"op\":\"state\"}\n");
    CliRun run = CliRun.of("blocks", script.toString()).ok();
    List<String> out = run.out().lines().toList();
    assertEquals(3, out.size(), run.out());
    assertTrue(out.get(1).startsWith("{\"i\":1,\"op\":\"add\",\"req\":\"caf\u00e9\""), out.get(1));
    assertTrue(out.get(2).contains("\"req\":\"caf\u00e9\""), out.get(2));
  }

  @Test
  void aFieldOfTheWrongTypeOrAnUnknownFieldIsNamed(@TempDir Path dir) throws IOException {
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1,\"x\"]}"), dir, "s.jsonl:2: prompt:");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1],\"colour\":1}"), dir, ":2: colour: unknown field");
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":\"9\",\"block_size\":4}"), dir, ":1: num_blocks:");
  }

  @Test
  void theFirstOperationMustBeConfigAndAnUnknownOpIsNamed(@TempDir Path dir) throws IOException {
    assertBadInput(runScript(dir, "{\"op\":\"state\"}"), dir, ":1: op: the first operation must be config");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"explode\"}"), dir, ":2: op: unknown operation 'explode'");
    assertBadInput(runScript(dir, "# only a comment"), dir, "no operations");
  }

  @Test
  void v0OptionsAndOperationsAreRejectedInV1(@TempDir Path dir) throws IOException {
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"watermark\":0.01}"), dir, ":1: watermark:");
    assertBadInput(
        runScript(dir, CONFIG, "{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1,2]}", "{\"op\":\"admit\",\"req\":\"A\"}", "{\"op\":\"fork\",\"parent\":\"A\",\"child\":\"B\"}"),
        dir,
        ":4: op: fork needs mode v0");
  }

  @Test
  void aRefusedManagerOperationNamesItsField(@TempDir Path dir) throws IOException {
    assertBadInput(
        runScript(dir, CONFIG, "{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1,2]}", "{\"op\":\"allocate\",\"req\":\"A\",\"num_new_tokens\":0}"),
        dir,
        ":3: num_new_tokens: must be positive");
    assertBadInput(
        runScript(dir, CONFIG, "{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1,2]}", "{\"op\":\"admit\",\"req\":\"A\"}", "{\"op\":\"lookup\",\"req\":\"A\"}"),
        dir,
        ":4: req: lookup: request A is running");
  }

  private static final String SUBMIT_A = "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1,2,3],\"max_tokens\":2}";

  @Test
  void badSubmitAndStepLinesNameTheirField(@TempDir Path dir) throws IOException {
    assertBadInput(runScript(dir, CONFIG, SUBMIT_A, "{\"op\":\"allocate\",\"req\":\"A\",\"num_new_tokens\":1}"), dir, "s.jsonl:3: req: request 'A' was submitted");
    assertBadInput(runScript(dir, CONFIG, SUBMIT_A, SUBMIT_A), dir, "s.jsonl:3: req: request 'A' already exists");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1,2,3]}"), dir, "s.jsonl:2: max_tokens: missing");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1,2,3],\"max_tokens\":0}"), dir, "s.jsonl:2: max_tokens: 0 is outside");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[],\"max_tokens\":1}"), dir, "s.jsonl:2: prompt: must not be empty");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1],\"max_tokens\":2,\"output\":[5]}"), dir, "s.jsonl:2: output: has 1 tokens");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1],\"max_tokens\":1,\"output\":[-5]}"), dir, "s.jsonl:2: output: element 0");
    assertBadInput(
        runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"max_model_len\":4}", "{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1,2,3],\"max_tokens\":2}"),
        dir,
        "s.jsonl:2: max_tokens: 3 prompt tokens + 2 pass max_model_len 4");
    assertBadInput(
        runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"max_model_len\":4}", "{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,4],\"max_tokens\":1}"),
        dir,
        "s.jsonl:2: prompt_range: 4 tokens reach max_model_len 4");
    assertBadInput(runScript(dir, CONFIG, "{\"op\":\"step\",\"n\":2}"), dir, "s.jsonl:2: n: unknown field");
  }

  @Test
  void schedulerOptionsAreCheckedAndBelongToV1(@TempDir Path dir) throws IOException {
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"mode\":\"v0\",\"max_num_seqs\":2}"), dir, "s.jsonl:1: max_num_seqs: applies to mode v1 only");
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"max_num_seqs\":0}"), dir, "s.jsonl:1: max_num_seqs: 0 is outside");
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"enable_chunked_prefill\":false}"), dir, "s.jsonl:1: enable_chunked_prefill: without chunked prefill");
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"mode\":\"v0\"}", SUBMIT_A), dir, "s.jsonl:2: op: submit needs mode v1");
    assertBadInput(runScript(dir, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"mode\":\"v0\"}", "{\"op\":\"step\"}"), dir, "s.jsonl:2: op: step needs mode v1");
  }

  @Test
  void aMissingScriptIsBadInput(@TempDir Path dir) {
    CliRun run = CliRun.of("blocks", dir.resolve("nope.jsonl").toString());
    assertEquals(2, run.exitCode());
    assertTrue(run.err().contains("no such file"), run.err());
  }

  @Test
  void helpDescribesTheOperations() {
    CliRun run = CliRun.of("blocks", "--help").ok();
    assertTrue(run.out().contains("swap_out"), run.out());
    assertTrue(run.out().contains("submit and step"), run.out());
  }
}

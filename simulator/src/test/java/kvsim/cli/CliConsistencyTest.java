package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The same behaviour across commands: one {@code -q/--quiet}, unknown names listing the known
 * ones, parser errors in kvsim's words, {@code report DIR} writing into DIR, plain integers in
 * sweep tables.
 */
class CliConsistencyTest {
  @TempDir Path tmp;

  /** The commands that print progress on stderr. */
  private static final List<String> PROGRESS_COMMANDS = List.of("replay", "compare", "serving", "capacity", "sweep", "regress", "reproduce");

  @Test
  void everyCommandThatPrintsProgressTakesTheSameQuietOption() {
    CommandLine root = KvSim.newCommandLine();
    String description = null;
    for (String name : PROGRESS_COMMANDS) {
      CommandLine.Model.CommandSpec spec = root.getSubcommands().get(name).getCommandSpec();
      CommandLine.Model.OptionSpec shortName = spec.findOption("-q");
      CommandLine.Model.OptionSpec longName = spec.findOption("--quiet");
      assertTrue(shortName != null && shortName == longName, name + ": -q and --quiet are one option");
      String text = String.join(" ", shortName.description());
      if (description == null) {
        description = text;
      }
      assertEquals(description, text, name + ": the same help text");
    }
  }

  /**
   * picocli formats every help text with String.format and, where that fails (a lone %), prints a
   * warning on stderr above the help: every text in the annotations of every command and mixin
   * must format.
   */
  @Test
  void everyHelpTextFormatsWithoutPicocliWarnings() {
    java.util.Set<Class<?>> classes = new java.util.LinkedHashSet<>();
    java.util.ArrayDeque<CommandLine> todo = new java.util.ArrayDeque<>(List.of(KvSim.newCommandLine()));
    while (!todo.isEmpty()) {
      CommandLine c = todo.pop();
      todo.addAll(c.getSubcommands().values());
      classes.add(c.getCommandSpec().userObject().getClass());
      c.getCommandSpec().mixins().values().forEach(m -> classes.add(m.userObject().getClass()));
    }
    List<String> failed = new java.util.ArrayList<>();
    int texts = 0;
    for (Class<?> cls : classes) {
      List<String> all = new java.util.ArrayList<>();
      CommandLine.Command command = cls.getAnnotation(CommandLine.Command.class);
      if (command != null) {
        all.addAll(List.of(command.description()));
        all.addAll(List.of(command.footer()));
        all.addAll(List.of(command.header()));
      }
      for (java.lang.reflect.Field f : cls.getDeclaredFields()) {
        CommandLine.Option o = f.getAnnotation(CommandLine.Option.class);
        CommandLine.Parameters p = f.getAnnotation(CommandLine.Parameters.class);
        all.addAll(List.of(o != null ? o.description() : p != null ? p.description() : new String[0]));
      }
      for (String text : all) {
        texts++;
        try {
          String.format(java.util.Locale.ROOT, text);
        } catch (java.util.IllegalFormatException e) {
          failed.add(cls.getSimpleName() + ": " + e.getMessage() + ": " + text);
        }
      }
    }
    assertTrue(texts > 200, "help texts found: " + texts);
    assertEquals(List.of(), failed);
  }

  @Test
  void quietCapacityPrintsNothingButWhereTheResultsWent() {
    CliRun run = CliRun.of("capacity", "requests:preset=sharegpt,count=40", "--system", "vllm", "--model", "opt-13b", "--device", "a100-40",
        "--kv-memory", "12GiB", "--slo", "normalized_latency.mean<=0.2s", "--slo", "rejected.fraction<=0.6", "--steps", "1", "-q",
        "-o", tmp.resolve("cap").toString()).ok();
    assertEquals("", run.err());
    assertTrue(run.out().contains("results: " + tmp.resolve("cap")), run.out());
  }

  @Test
  void anUnknownImporterListsTheKnownOnesInOneLine() {
    assertOneLineError(CliRun.of("import", "nosuchfmt"), "kvsim: error: unknown importer 'nosuchfmt'; known: torch-snapshot, azure, mooncake, lengths, burstgpt");
  }

  @Test
  void anUnknownCommandOrSubcommandListsTheKnownOnes() {
    CliRun command = CliRun.of("nosuch");
    assertOneLineError(command, command.err().strip());
    assertTrue(command.err().startsWith("kvsim: error: unknown command 'nosuch'; known: list, generate, replay, compare, serving, capacity, sweep,"),
        command.err());
    assertFalse(command.err().contains(" help"), "help is not a command to list: " + command.err());
    assertOneLineError(CliRun.of("gpu", "nosuch"), "kvsim: error: unknown gpu command 'nosuch'; known: info, calibrate, replay");
    assertOneLineError(CliRun.of("generate", "nosuch"), "kvsim: error: unknown generator 'nosuch'; known: churn, kv, requests");
  }

  @Test
  void aMalformedBlockScriptIsReportedInKvsimsWordsAtItsLine() throws IOException {
    Path script = tmp.resolve("s.jsonl");
    Files.writeString(script, "{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4}\nalloc 1 {bad\n");
    assertOneLineError(CliRun.of("blocks", script.toString(), "-o", tmp.resolve("out.jsonl").toString()),
        "kvsim: error: " + script + ":2: malformed JSON: 'alloc' is not a JSON value (expected a string in double quotes, a number, an array,"
            + " an object, true, false or null)");
    assertFalse(Files.exists(tmp.resolve("out.jsonl")));
  }

  @Test
  void aMalformedMooncakeLineIsReportedInKvsimsWordsAtItsLine() throws IOException {
    Path log = tmp.resolve("m.jsonl");
    Files.writeString(log, "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": x}\n");
    assertOneLineError(CliRun.of("import", "mooncake", log.toString(), "-o", tmp.resolve("r.jsonl").toString()),
        "kvsim: error: " + log + ":2: malformed JSON: 'x' is not a JSON value (expected a string in double quotes, a number, an array,"
            + " an object, true, false or null)");
    assertFalse(Files.exists(tmp.resolve("r.jsonl")));
  }

  @Test
  void reportOfOneFolderGoesIntoThatFolderAndOfSeveralAsksForAFile() throws IOException {
    Path a = tmp.resolve("a");
    Path b = tmp.resolve("b");
    CliRun.of("replay", "churn:ops=200", "-a", "first-fit", "-q", "-o", a.toString()).ok();
    CliRun.of("replay", "churn:ops=200,seed=2", "-a", "first-fit", "-q", "-o", b.toString()).ok();
    Path own = a.resolve("report.html");
    Path inWorkingFolder = Path.of("report.html");
    boolean wasThere = Files.exists(inWorkingFolder);
    Files.delete(own); // the run's own report: the command writes it again
    CliRun one = CliRun.of("report", a.toString()).ok();
    assertEquals("report: " + own, one.out().strip());
    assertTrue(Files.readString(own).contains("<html"), "the report is in the folder");
    assertEquals(wasThere, Files.exists(inWorkingFolder), "nothing written into the working folder");
    CliRun.of("report", a.toString()).ok(); // its own earlier report is replaced

    CliRun several = CliRun.of("report", a.toString(), b.toString());
    assertOneLineError(several, "kvsim: error: report: 2 result folders and no -o; name the comparison's file with -o FILE"
        + " (only a single folder's report goes into the folder itself, as report.html)");

    // A file of the user's in the folder's place is not replaced.
    Files.writeString(own, "my notes");
    CliRun refused = CliRun.of("report", a.toString());
    assertEquals(2, refused.exitCode(), refused.err());
    assertTrue(refused.err().contains(own + ": exists and is not a report written by kvsim"), refused.err());
    assertEquals("my notes", Files.readString(own));
  }

  @Test
  void sweepTablesWriteLargeNumbersInPlainDigits() throws IOException {
    Path grid = tmp.resolve("g.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=100\"]\nallocators: [first-fit]\n");
    Path out = tmp.resolve("sweep");
    CliRun.of("sweep", grid.toString(), "-q", "-o", out.toString()).ok();
    String csv = Files.readString(out.resolve("sweep.csv"));
    String json = Files.readString(out.resolve("sweep.json"));
    Pattern scientific = Pattern.compile("[0-9]E[0-9]");
    assertFalse(scientific.matcher(csv).find(), csv);
    assertFalse(scientific.matcher(json).find(), json);
    // The device's 80 GiB, reserved by first-fit for the whole run, as an integer.
    List<String> lines = csv.lines().toList();
    List<String> header = List.of(lines.get(0).split(","));
    String reserved = lines.get(1).split(",", -1)[header.indexOf("reserved_bytes.mean")];
    assertEquals("85899345920", reserved);
    assertTrue(json.contains("\"reserved_bytes.mean\" : 85899345920,"), json);
  }

  private static void assertOneLineError(CliRun run, String expected) {
    assertEquals(2, run.exitCode(), run.err());
    assertEquals("", run.out());
    assertEquals(expected, run.err().strip());
    assertFalse(run.err().strip().contains("\n"), run.err());
  }
}

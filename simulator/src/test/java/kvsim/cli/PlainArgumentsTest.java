package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim replay} and {@code kvsim serving} with plain arguments run without picocli's model
 * (Note [Plain arguments] on {@link PlainArguments}) and print, write and exit exactly as the
 * picocli path does; any other form of arguments is left to picocli untouched.
 */
class PlainArgumentsTest {
  /** Files whose bytes hold wall-clock times: compared by name only. */
  private static final List<String> TIMED = List.of("timing.json");

  @TempDir Path dir;

  /** What a run printed and wrote: exit status, stdout bytes, stderr text, the result folder's files and their bytes. */
  private record Outcome(int status, byte[] out, String err, Map<String, byte[]> files) {}

  private static Map<String, byte[]> files(Path folder) throws IOException {
    Map<String, byte[]> files = new TreeMap<>();
    if (Files.isDirectory(folder)) {
      try (Stream<Path> s = Files.list(folder)) {
        for (Path f : s.toList()) {
          String name = f.getFileName().toString();
          files.put(name, TIMED.contains(name) ? new byte[0] : Files.readAllBytes(f));
        }
      }
    }
    return files;
  }

  private Outcome plain(Path folder, String... args) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Integer status = switch (args[0]) {
      case "replay" -> ReplayCommand.runPlain(args, new PrintStream(out, true), new PrintStream(err, true));
      case "serving" -> ServingCommand.runPlain(args, new PrintStream(out, true), new PrintStream(err, true));
      default -> throw new AssertionError(args[0]);
    };
    assertNotNull(status, "plain arguments " + List.of(args) + " were left to picocli");
    return new Outcome(status, out.toByteArray(), err.toString(), files(folder));
  }

  private Outcome picocli(Path folder, String... args) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringWriter err = new StringWriter();
    picocli.CommandLine cl = KvSim.newCommandLine(args);
    cl.setOut(new KvSim.Stdout(out));
    cl.setErr(new PrintWriter(err, true));
    int status = cl.execute(args);
    return new Outcome(status, out.toByteArray(), err.toString(), files(folder));
  }

  /** Runs {@code args} both ways, asserts the same outcome and returns it. */
  private Outcome assertSameAsPicocli(Path folder, String... args) throws IOException {
    String what = String.join(" ", args);
    Outcome want = picocli(folder, args);
    delete(folder);
    Outcome got = plain(folder, args);
    delete(folder);
    assertEquals(want.status(), got.status(), what);
    assertEquals(new String(want.out()), new String(got.out()), what);
    assertArrayEquals(want.out(), got.out(), what);
    assertEquals(want.err(), got.err(), what);
    assertEquals(want.files().keySet(), got.files().keySet(), what);
    for (String f : want.files().keySet()) {
      assertArrayEquals(want.files().get(f), got.files().get(f), what + ": " + f);
    }
    return got;
  }

  private void assertBadInput(Outcome o) {
    assertEquals(KvSim.EXIT_BAD_INPUT, o.status(), o.err());
    assertTrue(o.err().startsWith("kvsim: error: "), o.err());
    assertTrue(o.files().isEmpty(), "no output folder");
  }

  private static void delete(Path folder) throws IOException {
    if (Files.isDirectory(folder)) {
      try (Stream<Path> s = Files.walk(folder)) {
        for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
  }

  @Test
  void replaysPrintWriteAndFailAsThroughPicocli() throws IOException {
    Path out = dir.resolve("out");
    Outcome sweep = assertSameAsPicocli(out, "replay", "churn:ops=300", "--seeds", "1..5", "-a", "first-fit", "--quiet", "-o", out.toString());
    assertEquals(KvSim.EXIT_OK, sweep.status());
    assertTrue(sweep.files().containsKey("summary.json") && sweep.files().containsKey("report.html"), sweep.files().keySet().toString());
    assertSameAsPicocli(out, "replay", "--allocator", "first-fit,buddy", "churn:ops=300,seed=3", "--device", "40GiB", "--model", "llama-2-13b",
        "-q", "--no-report", "--output", out.toString(), "--force");
    assertSameAsPicocli(out, "replay", "churn:ops=200", "-a", "first-fit", "-q", "-o", out.toString());
    // Errors: an unknown allocator, a bad generator spec, a missing trace, a folder that is not kvsim's.
    assertBadInput(assertSameAsPicocli(out, "replay", "churn:ops=200", "-a", "nope", "-q", "-o", out.toString()));
    assertBadInput(assertSameAsPicocli(out, "replay", "churn:ops=x", "-q", "-o", out.toString()));
    assertBadInput(assertSameAsPicocli(out, "replay", dir.resolve("missing.jsonl").toString(), "-q", "-o", out.toString()));
    Path other = Files.createDirectories(dir.resolve("mine"));
    Files.writeString(other.resolve("notes.txt"), "keep me\n");
    Outcome refused = plain(other, "replay", "churn:ops=200", "-a", "first-fit", "-q", "-o", other.toString());
    assertEquals(KvSim.EXIT_BAD_INPUT, refused.status());
    assertEquals(List.of("notes.txt"), List.copyOf(refused.files().keySet()));
    assertTrue(refused.err().startsWith("kvsim: error: "), refused.err());
    assertFalse(refused.err().strip().contains("\n"), "one line: " + refused.err());
  }

  @Test
  void servingRunsPrintWriteAndFailAsThroughPicocli() throws IOException {
    Path out = dir.resolve("serving");
    Outcome two = assertSameAsPicocli(out, "serving", "requests:preset=sharegpt,count=40", "--system", "vllm,vllm-v0", "-q", "-o", out.toString());
    assertEquals(KvSim.EXIT_OK, two.status());
    assertTrue(new String(two.out()).contains("vllm-v0"), new String(two.out()));
    assertTrue(two.files().containsKey("kv-breakdown.svg"), two.files().keySet().toString());
    assertSameAsPicocli(out, "serving", "requests:preset=azure-conv,count=30", "--model", "llama-2-13b", "--device", "a100-80", "--quiet",
        "--no-report", "--output", out.toString(), "--force");
    assertBadInput(assertSameAsPicocli(out, "serving", "requests:preset=sharegpt,count=20", "--system", "bogus", "-q", "-o", out.toString()));
    assertBadInput(assertSameAsPicocli(out, "serving", "requests:preset=nope", "-q", "-o", out.toString()));
  }

  @Test
  void anyOtherFormIsLeftToPicocli() {
    List<String[]> others = new ArrayList<>();
    for (String command : List.of("replay", "serving")) {
      String option = command.equals("replay") ? "-a" : "--system";
      others.addAll(List.of(
          new String[] {command},
          new String[] {command, "--help"},
          new String[] {command, "-h"},
          new String[] {command, "-V"},
          new String[] {command, "churn:ops=10", "--bogus"},
          new String[] {command, "churn:ops=10", "--check"},
          new String[] {command, "churn:ops=10", "--set", "x=y"},
          new String[] {command, "churn:ops=10", "extra"},
          new String[] {command, "churn:ops=10", "-q", "--quiet"},
          new String[] {command, "churn:ops=10", "--force", "--force"},
          new String[] {command, "churn:ops=10", "--no-report", "--no-report"},
          new String[] {command, "churn:ops=10", "-o"},
          new String[] {command, "churn:ops=10", "-o", "a", "--output", "b"},
          new String[] {command, "churn:ops=10", "-o", "-q"},
          new String[] {command, "churn:ops=10", "-oout"},
          new String[] {command, "churn:ops=10", "--output=out"},
          new String[] {command, "churn:ops=10", option, "a", option, "b"},
          new String[] {command, "churn:ops=10", option, "a,,b"},
          new String[] {command, "churn:ops=10", option, ",a"},
          new String[] {command, "churn:ops=10", option, "a,"},
          new String[] {command, "churn:ops=10", option, "\"a,b\""},
          new String[] {command, "churn:ops=10", option, "@list"},
          new String[] {command, "--", "churn:ops=10"},
          new String[] {command, "@args.txt"},
          new String[] {command, ""},
          new String[] {command, "-"},
          new String[] {command, "churn:ops=10", "-o", "a\0b"}));
    }
    others.add(new String[] {"replay", "churn:ops=10", "--seeds", "--quiet"});
    others.add(new String[] {"replay", "churn:ops=10", "--seeds=1..3"});
    others.add(new String[] {"serving", "requests:count=10", "--seeds", "1..3"});
    others.add(new String[] {"serving", "requests:count=10", "--emit-trace", "t.jsonl"});
    for (String[] args : others) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      String what = String.join(" ", args);
      Integer status = args[0].equals("replay")
          ? ReplayCommand.runPlain(args, new PrintStream(out, true), new PrintStream(err, true))
          : ServingCommand.runPlain(args, new PrintStream(out, true), new PrintStream(err, true));
      assertNull(status, what);
      assertEquals(0, out.size(), what);
      assertEquals(0, err.size(), what);
    }
  }

  /**
   * The plain path leaves every option it does not read at its field's initial value, which is what
   * picocli leaves it at only where the option has no default value of picocli's own.
   */
  @Test
  void noOptionOfTheseCommandsHasADefaultOfPicocli() {
    for (String command : List.of("replay", "serving", "blocks")) {
      picocli.CommandLine.Model.CommandSpec spec = KvSim.newCommandLine().getSubcommands().get(command).getCommandSpec();
      for (picocli.CommandLine.Model.ArgSpec a : spec.args()) {
        assertNull(a.defaultValue(), command + " " + a.paramLabel() + " " + (a.isOption() ? ((picocli.CommandLine.Model.OptionSpec) a).longestName() : ""));
      }
      assertTrue(spec.args().size() > 3, command);
    }
  }

  @Test
  void readsEachOptionByItsFirstName() {
    PlainArguments p = PlainArguments.read(new String[] {"x", "-o", "DIR", "W", "-q", "--list", "a,b"},
        List.of(List.of("--output", "-o"), List.of("--list")), List.of(List.of("--quiet", "-q"), List.of("--force")));
    assertNotNull(p);
    assertEquals("W", p.positional());
    assertEquals("DIR", p.value("--output"));
    assertNull(p.value("-o"));
    assertTrue(p.flag("--quiet"));
    assertFalse(p.flag("--force"));
    assertEquals(List.of("a", "b"), p.list("--list"));
    assertEquals(List.of(), PlainArguments.read(new String[] {"x", "W"}, List.of(List.of("--list")), List.of()).list("--list"));
    assertNull(PlainArguments.read(new String[] {"x", "-o", "D1", "--output", "D2", "W"}, List.of(List.of("--output", "-o")), List.of()));
  }
}

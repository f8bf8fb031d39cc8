package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvsim blocks} with plain arguments runs without picocli's model (Note [Blocks without a
 * command line] in {@code BlocksCommand}) and prints, writes and exits exactly as the picocli path
 * does; any other form of arguments is left to picocli untouched.
 */
class BlocksPlainArgumentsTest {
  private static final Path SCRIPT = Path.of("..", "workloads", "blocks", "prefix-sharing.jsonl");

  @TempDir Path dir;

  /** What a run printed and wrote: exit status, stdout bytes, stderr text, the output file's bytes. */
  private record Outcome(int status, byte[] out, String err, byte[] file) {}

  private Outcome plain(Path file, String... args) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Integer status = BlocksCommand.runPlain(args, new PrintStream(out, true), new PrintStream(err, true));
    assertNotNull(status, "plain arguments " + List.of(args) + " were left to picocli");
    return new Outcome(status, out.toByteArray(), err.toString(), file != null && Files.exists(file) ? Files.readAllBytes(file) : null);
  }

  private Outcome picocli(Path file, String... args) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringBuilder err = new StringBuilder();
    java.io.StringWriter errText = new java.io.StringWriter();
    picocli.CommandLine cl = KvSim.newCommandLine(args);
    cl.setOut(new KvSim.Stdout(out));
    cl.setErr(new PrintWriter(errText, true));
    int status = cl.execute(args);
    err.append(errText);
    return new Outcome(status, out.toByteArray(), err.toString(), file != null && Files.exists(file) ? Files.readAllBytes(file) : null);
  }

  private void assertSameAsPicocli(Path file, String... args) throws IOException {
    if (file != null) {
      Files.deleteIfExists(file);
    }
    Outcome want = picocli(file, args);
    if (file != null) {
      Files.deleteIfExists(file);
    }
    Outcome got = plain(file, args);
    String what = String.join(" ", args);
    assertEquals(want.status(), got.status(), what);
    assertArrayEquals(want.out(), got.out(), what);
    assertEquals(want.err(), got.err(), what);
    assertArrayEquals(want.file(), got.file(), what);
  }

  @Test
  void plainArgumentsPrintWriteAndFailAsThroughPicocli() throws IOException {
    String script = SCRIPT.toString();
    Path out = dir.resolve("out.jsonl");
    assertSameAsPicocli(null, "blocks", script);
    assertSameAsPicocli(null, "blocks", "--check", script);
    assertSameAsPicocli(out, "blocks", script, "-o", out.toString());
    assertSameAsPicocli(out, "blocks", "--output", out.toString(), "--force", "--check", script);
    // Errors: a missing script, a folder, a malformed line, an output that is not a blocks output.
    assertSameAsPicocli(null, "blocks", dir.resolve("missing.jsonl").toString());
    assertSameAsPicocli(null, "blocks", dir.toString());
    Path bad = Files.writeString(dir.resolve("bad.jsonl"), "{\"op\":\"config\",\"num_blocks\":4,\"block_size\":4}\n{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1,}\n");
    assertSameAsPicocli(null, "blocks", bad.toString());
    Path other = dir.resolve("notes.txt");
    Files.writeString(other, "keep me\n");
    Outcome refused = plain(other, "blocks", script, "-o", other.toString());
    assertEquals(KvSim.EXIT_BAD_INPUT, refused.status());
    assertEquals("keep me\n", new String(refused.file(), StandardCharsets.UTF_8));
    Files.writeString(other, "keep me\n");
    assertSameAsPicocli(other, "blocks", script, "-o", other.toString());
  }

  @Test
  void anyOtherFormIsLeftToPicocli() {
    String script = SCRIPT.toString();
    List<String[]> others = new ArrayList<>(List.of(
        new String[] {"blocks"},
        new String[] {"blocks", "--help"},
        new String[] {"blocks", "-h"},
        new String[] {"blocks", script, "--bogus"},
        new String[] {"blocks", script, "extra"},
        new String[] {"blocks", script, "--check", "--check"},
        new String[] {"blocks", script, "--force", "--force"},
        new String[] {"blocks", script, "-o"},
        new String[] {"blocks", script, "-o", "a.jsonl", "-o", "b.jsonl"},
        new String[] {"blocks", script, "-o", "--check"},
        new String[] {"blocks", script, "-oout.jsonl"},
        new String[] {"blocks", script, "--output=out.jsonl"},
        new String[] {"blocks", "--", script},
        new String[] {"blocks", "@args.txt"},
        new String[] {"blocks", ""},
        new String[] {"blocks", "-"},
        new String[] {"blocks", "a\0b.jsonl"}));
    for (String[] args : others) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      assertNull(BlocksCommand.runPlain(args, new PrintStream(out, true), new PrintStream(err, true)), String.join(" ", args));
      assertEquals(0, out.size(), String.join(" ", args));
      assertEquals(0, err.size(), String.join(" ", args));
    }
    assertFalse(others.isEmpty());
  }
}

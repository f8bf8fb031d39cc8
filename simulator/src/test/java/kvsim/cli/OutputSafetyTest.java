package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code -o} never costs the user a file: only new, empty or earlier result folders are written. */
class OutputSafetyTest {
  @TempDir Path tmp;

  @Test
  void replayIntoAFolderWithAUsersFileExitsTwoAndKeepsTheFile() throws IOException {
    Path d = Files.createDirectory(tmp.resolve("d"));
    Files.writeString(d.resolve("x"), "keep\n");
    CliRun run = CliRun.of("replay", "churn:ops=10", "-a", "first-fit", "-o", d.toString(), "--quiet");
    assertEquals(2, run.exitCode(), run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + d + ": folder is not empty and is not a kvsim result folder"), run.err());
    assertFalse(run.err().strip().contains("\n"), run.err());
    assertEquals("keep\n", Files.readString(d.resolve("x")));
    assertEquals(1, count(d));
    CliRun forced = CliRun.of("replay", "churn:ops=10", "-a", "first-fit", "-o", d.toString(), "--quiet", "--force");
    assertEquals(2, forced.exitCode(), "--force replaces only result folders");
    assertEquals("keep\n", Files.readString(d.resolve("x")));
  }

  @Test
  void replayingIntoTheSameResultFolderReplacesItAndKeepsNothingStale() throws IOException {
    Path d = tmp.resolve("run");
    CliRun.of("replay", "churn:ops=10", "-a", "first-fit", "-o", d.toString(), "--quiet").ok();
    CliRun.of("replay", "churn:ops=10", "-a", "slab", "-o", d.toString(), "--quiet").ok();
    String summary = Files.readString(d.resolve("summary.json"));
    assertTrue(summary.contains("\"slab\"") && !summary.contains("\"first-fit\""), summary);
    try (Stream<Path> s = Files.list(tmp)) {
      assertEquals(1, s.count(), "no temporary or old folder left beside it");
    }
  }

  @Test
  void theRepositorysResultsFolderSurvivesDashOResults() throws IOException {
    Path results = Path.of("..", "results").toAbsolutePath().normalize();
    Assumptions.assumeTrue(Files.isRegularFile(results.resolve("README.md")), "no committed results/ folder beside simulator/");
    Map<String, String> before = digests(results);
    CliRun run = CliRun.of("compare", "churn:ops=10", "-o", results.toString(), "--quiet");
    assertEquals(2, run.exitCode(), run.err());
    assertEquals(before, digests(results), "every committed file is intact");
  }

  @Test
  void generateAndBlocksRefuseAFolderAsTheirOutputFile() throws IOException {
    Path d = Files.createDirectory(tmp.resolve("d"));
    CliRun gen = CliRun.of("generate", "churn", "--ops", "10", "-o", d.toString());
    assertEquals(2, gen.exitCode(), gen.err());
    assertEquals("kvsim: error: " + d + ": is a folder; give the name of a file to write", gen.err().strip());
    Path script = Files.writeString(tmp.resolve("s.jsonl"), "{\"op\":\"config\",\"num_blocks\":4,\"block_size\":2}\n");
    CliRun blocks = CliRun.of("blocks", script.toString(), "-o", d.toString());
    assertEquals(2, blocks.exitCode(), blocks.err());
    assertTrue(blocks.err().contains(": is a folder"), blocks.err());
    assertEquals(0, count(d));
  }

  private static long count(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.count();
    }
  }

  private static Map<String, String> digests(Path root) throws IOException {
    Map<String, String> out = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.filter(Files::isRegularFile).toList()) {
        try {
          out.put(root.relativize(p).toString(), HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
        } catch (java.security.NoSuchAlgorithmException e) {
          throw new AssertionError(e);
        }
      }
    }
    return out;
  }
}

package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Note [Nothing left behind]: temporaries go on every exit path, and stale ones with the next run. */
class TemporariesTest {
  @TempDir Path tmp;

  @Test
  void theCreatorOfATemporaryIsReadFromItsName() {
    assertEquals(123, Temporaries.creatorOf(".kvsim-tmp-123-4-abc0"));
    assertEquals(77, Temporaries.creatorOf(".kvsim-old-77-1-ff"));
    assertEquals(9, Temporaries.creatorOf(".trace.jsonl.9-2-1a2b.tmp"));
    assertEquals(-1, Temporaries.creatorOf("trace.jsonl"));
    assertEquals(-1, Temporaries.creatorOf(".notes.txt"));
    assertEquals(-1, Temporaries.creatorOf(".kvsim-tmp-x-1-ab"));
    assertEquals(-1, Temporaries.creatorOf(".trace.jsonl.9-2-1a2b"), "a file temporary ends in .tmp");
  }

  /** Returns the id of a process that has ended. */
  private static long deadPid() throws Exception {
    Process p = new ProcessBuilder("true").start();
    p.waitFor();
    return p.pid();
  }

  @Test
  void staleTemporariesAreRemovedByTheNextRunWhichSaysSo() throws Exception {
    long dead = deadPid();
    long alive = ProcessHandle.current().pid();
    Path d = Files.createDirectory(tmp.resolve("out"));
    Files.createDirectories(d.resolve(".kvsim-tmp-" + dead + "-1-ab").resolve("cells"));
    Files.writeString(d.resolve(".kvsim-tmp-" + dead + "-1-ab").resolve("cells").resolve("x.json"), "{}");
    Files.writeString(d.resolve(".trace.jsonl." + dead + "-2-cd.tmp"), "partial");
    Path held = Files.createDirectories(d.resolve(".kvsim-old-" + dead + "-3-ef").resolve("run"));
    Files.writeString(held.resolve("summary.json"), "{\"earlier\": true}");
    Files.writeString(d.resolve(".notes.txt"), "mine");
    Files.createDirectory(d.resolve(".kvsim-tmp-" + alive + "-99-ab")); // this process's: in use
    List<String> notices = new ArrayList<>();
    Temporaries.noticesTo(notices::add);
    try {
      AtomicFiles.write(d.resolve("trace.jsonl"), out -> out.write('x'));
    } finally {
      Temporaries.noticesTo(System.err::println);
    }
    assertEquals(Set.of(".notes.txt", ".kvsim-tmp-" + alive + "-99-ab", "run", "trace.jsonl"), names(d));
    assertEquals("{\"earlier\": true}", Files.readString(d.resolve("run").resolve("summary.json")), "the earlier result is back");
    assertEquals(3, notices.size(), notices.toString());
    assertTrue(notices.stream().allMatch(n -> n.contains("left by an interrupted kvsim run, process " + dead)), notices.toString());
    assertTrue(notices.stream().anyMatch(n -> n.startsWith("kvsim: restored " + d.resolve("run"))), notices.toString());
  }

  @Test
  void anEarlierResultMovedAsideIsDeletedWhenItsReplacementArrived() throws Exception {
    long dead = deadPid();
    Path d = Files.createDirectory(tmp.resolve("out"));
    Files.createDirectories(d.resolve(".kvsim-old-" + dead + "-3-ef").resolve("run"));
    Files.createDirectories(d.resolve("run"));
    Files.writeString(d.resolve("run").resolve("summary.json"), "new");
    Temporaries.noticesTo(s -> {});
    try {
      AtomicFiles.temporaryFile(d, ".probe.").toFile().delete();
    } finally {
      Temporaries.noticesTo(System.err::println);
    }
    assertEquals(Set.of("run"), names(d));
    assertEquals("new", Files.readString(d.resolve("run").resolve("summary.json")));
  }

  @Test
  void aFailedWriteLeavesNothingAndForgetsItsTemporary() throws IOException {
    Path target = tmp.resolve("f.jsonl");
    try {
      AtomicFiles.write(target, out -> {
        out.write('x');
        throw new IOException("disk full");
      });
    } catch (IOException expected) {
      assertEquals("disk full", expected.getMessage());
    }
    assertEquals(Set.of(), names(tmp));
    assertTrue(Temporaries.live().stream().noneMatch(p -> p.startsWith(tmp)), Temporaries.live().toString());
  }

  /** A process that writes a file and a folder and waits, to be stopped by a signal. */
  public static final class Probe {
    public static void main(String[] args) throws Exception {
      Path dir = Path.of(args[0]);
      Path folder = AtomicFiles.temporaryFolder(dir, ".kvsim-tmp-");
      Files.writeString(folder.resolve("summary.json"), "{}");
      AtomicFiles.write(dir.resolve("trace.jsonl"), out -> {
        out.write("{\"format\":\"kvsim-l1\"}\n".getBytes(StandardCharsets.UTF_8));
        out.flush();
        System.out.println("ready");
        System.out.flush();
        try {
          Thread.sleep(60_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }
  }

  @ParameterizedTest(name = "SIG{0}")
  @ValueSource(strings = {"INT", "TERM"})
  void aSignalLeavesNoTemporaryBehind(String signal) throws Exception {
    Path d = Files.createDirectory(tmp.resolve("sig-" + signal));
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), Probe.class.getName(), d.toString())
        .redirectErrorStream(true).start();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line = r.readLine();
      assertEquals("ready", line, "the probe started");
      assertEquals(2, names(d).size(), "a temporary file and folder exist while it writes: " + names(d));
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start();
      assertEquals(0, kill.waitFor());
      assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the probe stopped");
    } finally {
      p.destroyForcibly();
    }
    assertEquals(Set.of(), names(d), "nothing left behind");
    assertFalse(Files.exists(d.resolve("trace.jsonl")));
  }

  private static Set<String> names(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      Set<String> out = new TreeSet<>();
      s.forEach(p -> out.add(p.getFileName().toString()));
      return out;
    }
  }
}

package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A result folder goes only where nothing of the user's can be lost (Note [Output safety]). */
class ResultFolderTest {
  @TempDir Path tmp;

  private static void one(Path dir, String content) throws IOException {
    Files.writeString(dir.resolve("summary.json"), content);
  }

  @Test
  void aFolderHoldingAUsersFileIsRefusedAndTheFileSurvives() throws IOException {
    Path d = Files.createDirectory(tmp.resolve("d"));
    Files.writeString(d.resolve("precious.txt"), "keep");
    InputException e = assertThrows(InputException.class, () -> ResultFolder.write(ResultFolder.Target.at(d, false), dir -> one(dir, "x")));
    assertTrue(e.getMessage().contains("not a kvsim result folder"), e.getMessage());
    assertThrows(InputException.class, () -> ResultFolder.write(ResultFolder.Target.at(d, true), dir -> one(dir, "x")), "--force never applies to other folders");
    assertEquals("keep", Files.readString(d.resolve("precious.txt")));
    assertEquals(Set.of("precious.txt"), names(d));
    assertEquals(Set.of("d"), names(tmp), "no temporary folder left behind");
  }

  @Test
  void aFileIsNeverReplacedByAResultFolder() throws IOException {
    Path f = Files.writeString(tmp.resolve("trace.jsonl"), "data");
    assertThrows(InputException.class, () -> ResultFolder.Target.at(f, true).check());
    assertThrows(InputException.class, () -> ResultFolder.write(ResultFolder.Target.at(f, true), dir -> one(dir, "x")));
    assertEquals("data", Files.readString(f));
  }

  @Test
  void aNewOrEmptyFolderReceivesTheResultWithItsMarker() throws IOException {
    Path fresh = tmp.resolve("a/b/new");
    ResultFolder.write(ResultFolder.Target.at(fresh, false), dir -> one(dir, "1"));
    assertEquals(Set.of("summary.json", ResultFolder.MARKER), names(fresh));
    assertTrue(ResultFolder.isResultFolder(fresh));
    Path empty = Files.createDirectory(tmp.resolve("empty"));
    ResultFolder.write(ResultFolder.Target.at(empty, false), dir -> one(dir, "2"));
    assertEquals("2", Files.readString(empty.resolve("summary.json")));
  }

  @Test
  void anEarlierResultFolderIsReplacedWhole() throws IOException {
    Path d = tmp.resolve("run");
    ResultFolder.write(ResultFolder.Target.at(d, false), dir -> {
      one(dir, "old");
      Files.writeString(dir.resolve("timing.json"), "old");
    });
    ResultFolder.write(ResultFolder.Target.at(d, false), dir -> one(dir, "new"));
    assertEquals("new", Files.readString(d.resolve("summary.json")));
    assertEquals(Set.of("summary.json", ResultFolder.MARKER), names(d), "nothing of the old result remains");
    assertEquals(Set.of("run"), names(tmp));
  }

  @Test
  void aResultFolderWithTheUsersFilesInItNeedsForce() throws IOException {
    Path d = tmp.resolve("run");
    ResultFolder.write(ResultFolder.Target.at(d, false), dir -> one(dir, "old"));
    Files.writeString(d.resolve("notes.txt"), "mine");
    InputException e = assertThrows(InputException.class, () -> ResultFolder.Target.at(d, false).check());
    assertTrue(e.getMessage().contains("--force"), e.getMessage());
    assertEquals("mine", Files.readString(d.resolve("notes.txt")));
    ResultFolder.write(ResultFolder.Target.at(d, true), dir -> one(dir, "new"));
    assertEquals(Set.of("summary.json", ResultFolder.MARKER), names(d));
  }

  @Test
  void aFailedWriterLeavesTheEarlierResultAndNoTemporaryFolder() throws IOException {
    Path d = tmp.resolve("run");
    ResultFolder.write(ResultFolder.Target.at(d, false), dir -> one(dir, "old"));
    assertThrows(IOException.class, () -> ResultFolder.write(ResultFolder.Target.at(d, false), dir -> {
      one(dir, "half");
      throw new IOException("disk full");
    }));
    assertEquals("old", Files.readString(d.resolve("summary.json")));
    assertEquals(Set.of("run"), names(tmp));
  }

  @Test
  void aFakeMarkerDoesNotMakeAFolderReplaceable() throws IOException {
    Path d = Files.createDirectory(tmp.resolve("d"));
    Files.writeString(d.resolve(ResultFolder.MARKER), "something else\n");
    Files.writeString(d.resolve("x"), "keep");
    assertThrows(InputException.class, () -> ResultFolder.Target.at(d, true).check());
    assertEquals("keep", Files.readString(d.resolve("x")));
  }

  @Test
  void twentyConcurrentRunsGetTwentyFolders() throws Exception {
    Path runs = tmp.resolve("runs");
    int n = 20;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<Path>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        String content = Integer.toString(i);
        futures.add(pool.submit(() -> {
          start.await();
          return ResultFolder.write(ResultFolder.Target.fresh(runs, "churn"), dir -> one(dir, content));
        }));
      }
      start.countDown();
      Set<String> contents = new TreeSet<>();
      Set<Path> dirs = new TreeSet<>();
      for (Future<Path> f : futures) {
        Path dir = f.get();
        dirs.add(dir);
        contents.add(Files.readString(dir.resolve("summary.json")));
      }
      assertEquals(n, dirs.size());
      assertEquals(n, contents.size(), "every run's result is there, none replaced");
      assertEquals(n, names(runs).size());
      assertTrue(names(runs).stream().allMatch(s -> s.matches("\\d{8}-\\d{6}-churn(-\\d+)?")), names(runs).toString());
    } finally {
      pool.shutdownNow();
    }
  }

  private static Set<String> names(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return new TreeSet<>(s.map(p -> p.getFileName().toString()).toList());
    }
  }

  @Test
  void checkRefusesBeforeARunStarts() throws IOException {
    Path d = Files.createDirectory(tmp.resolve("d"));
    Files.writeString(d.resolve("x"), "keep");
    assertThrows(InputException.class, () -> ResultFolder.Target.at(d, false).check());
    assertFalse(ResultFolder.isResultFolder(d));
  }
}

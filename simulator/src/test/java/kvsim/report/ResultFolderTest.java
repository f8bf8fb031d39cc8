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
    InputException e = assertThrows(InputException.class, () -> ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false), dir -> one(dir, "x")));
    assertTrue(e.getMessage().contains("not a kvsim result folder"), e.getMessage());
    assertThrows(InputException.class, () -> ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, true), dir -> one(dir, "x")), "--force never applies to other folders");
    assertEquals("keep", Files.readString(d.resolve("precious.txt")));
    assertEquals(Set.of("precious.txt"), names(d));
    assertEquals(Set.of("d"), names(tmp), "no temporary folder left behind");
  }

  @Test
  void aFileIsNeverReplacedByAResultFolder() throws IOException {
    Path f = Files.writeString(tmp.resolve("trace.jsonl"), "data");
    assertThrows(InputException.class, () -> ResultFolder.Target.at(f, ResultFolder.Kind.REPLAY, true).check());
    assertThrows(InputException.class, () -> ResultFolder.write(ResultFolder.Target.at(f, ResultFolder.Kind.REPLAY, true), dir -> one(dir, "x")));
    assertEquals("data", Files.readString(f));
  }

  @Test
  void aNewOrEmptyFolderReceivesTheResultWithItsMarker() throws IOException {
    Path fresh = tmp.resolve("a/b/new");
    ResultFolder.write(ResultFolder.Target.at(fresh, ResultFolder.Kind.REPLAY, false), dir -> one(dir, "1"));
    assertEquals(Set.of("summary.json", ResultFolder.MARKER), names(fresh));
    assertTrue(ResultFolder.isResultFolder(fresh));
    Path empty = Files.createDirectory(tmp.resolve("empty"));
    ResultFolder.write(ResultFolder.Target.at(empty, ResultFolder.Kind.REPLAY, false), dir -> one(dir, "2"));
    assertEquals("2", Files.readString(empty.resolve("summary.json")));
  }

  @Test
  void anEarlierResultFolderIsReplacedWhole() throws IOException {
    Path d = tmp.resolve("run");
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false), dir -> {
      one(dir, "old");
      Files.writeString(dir.resolve("timing.json"), "old");
    });
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false), dir -> one(dir, "new"));
    assertEquals("new", Files.readString(d.resolve("summary.json")));
    assertEquals(Set.of("summary.json", ResultFolder.MARKER), names(d), "nothing of the old result remains");
    assertEquals(Set.of("run"), names(tmp));
  }

  @Test
  void aResultFolderWithTheUsersFilesInItNeedsForce() throws IOException {
    Path d = tmp.resolve("run");
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false), dir -> one(dir, "old"));
    Files.writeString(d.resolve("notes.txt"), "mine");
    InputException e = assertThrows(InputException.class, () -> ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false).check());
    assertTrue(e.getMessage().contains("--force"), e.getMessage());
    assertEquals("mine", Files.readString(d.resolve("notes.txt")));
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, true), dir -> one(dir, "new"));
    assertEquals(Set.of("summary.json", ResultFolder.MARKER), names(d));
  }

  @Test
  void aFailedWriterLeavesTheEarlierResultAndNoTemporaryFolder() throws IOException {
    Path d = tmp.resolve("run");
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false), dir -> one(dir, "old"));
    assertThrows(IOException.class, () -> ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false), dir -> {
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
    assertThrows(InputException.class, () -> ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, true).check());
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
          return ResultFolder.write(ResultFolder.Target.fresh(runs, "churn", ResultFolder.Kind.REPLAY), dir -> one(dir, content));
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

  @Test
  void aFolderKeepsItsKindEvenWithForce() throws IOException {
    Path d = tmp.resolve("baselines");
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.BASELINE, false), dir -> one(dir, "base"));
    assertEquals(ResultFolder.Kind.BASELINE, ResultFolder.kindOf(d));
    for (boolean force : new boolean[] {false, true}) {
      InputException e = assertThrows(InputException.class,
          () -> ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.SERVING, force), dir -> one(dir, "serving")));
      assertEquals(d + ": is a regression-baseline folder, and this command writes a serving result; a folder never changes kind, even with --force"
          + " (choose another -o folder)", e.getMessage());
    }
    assertEquals("base", Files.readString(d.resolve("summary.json")));
    assertEquals(Set.of("baselines"), names(tmp));
  }

  @Test
  void aMarkerFromBeforeKindsTakesItsKindFromItsFiles() throws IOException {
    Path serving = Files.createDirectory(tmp.resolve("serving"));
    Files.writeString(serving.resolve("summary.json"), "{\"format\":\"kvsim-serving-summary\",\"version\":1}\n");
    Files.writeString(serving.resolve(ResultFolder.MARKER), "kvsim result folder\nsummary.json\n");
    assertEquals(ResultFolder.Kind.SERVING, ResultFolder.kindOf(serving));
    Path base = Files.createDirectory(tmp.resolve("base"));
    Files.writeString(base.resolve("churn.json"), "{\"format\":\"kvsim-baseline\",\"version\":1}\n");
    Files.writeString(base.resolve(ResultFolder.MARKER), "kvsim result folder\nchurn.json\n");
    assertEquals(ResultFolder.Kind.BASELINE, ResultFolder.kindOf(base));
    Path repro = Files.createDirectory(tmp.resolve("repro"));
    Files.writeString(repro.resolve("reproduction.json"), "{}");
    Files.writeString(repro.resolve(ResultFolder.MARKER), "kvsim result folder\nreproduction.json\n");
    assertEquals(ResultFolder.Kind.REPRODUCTION, ResultFolder.kindOf(repro));
    Path odd = Files.createDirectory(tmp.resolve("odd"));
    Files.writeString(odd.resolve(ResultFolder.MARKER), "kvsim result folder\n");
    assertEquals(ResultFolder.Kind.UNKNOWN, ResultFolder.kindOf(odd));
    assertThrows(InputException.class, () -> ResultFolder.Target.at(serving, ResultFolder.Kind.REPLAY, true).check());
    ResultFolder.Target.at(serving, ResultFolder.Kind.SERVING, false).check();
    assertEquals(null, ResultFolder.kindOf(tmp.resolve("nothing")));
  }

  /** A committed folder's files, by name, with their bytes and modification times. */
  private static java.util.Map<String, String> stamps(Path root) throws IOException {
    java.util.Map<String, String> out = new java.util.TreeMap<>();
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.filter(Files::isRegularFile).toList()) {
        out.put(root.relativize(p).toString(), Files.readString(p, java.nio.charset.StandardCharsets.ISO_8859_1) + "@" + Files.getLastModifiedTime(p).toMillis());
      }
    }
    return out;
  }

  @Test
  void aCommittedFolderChangesOnlyWhereItsBytesChange() throws Exception {
    Path d = tmp.resolve("gallery");
    AtomicFilesWriter first = dir -> {
      one(dir, "same");
      Files.writeString(dir.resolve("timing.json"), "12.3 s");
      Files.writeString(dir.resolve("chart.svg"), "<svg>1</svg>");
      Files.writeString(dir.resolve("chart.png"), "pixels drawn by JDK 17");
      Files.writeString(dir.resolve("gone.csv"), "a file a later run no longer writes");
      ResultFolder.write(ResultFolder.Target.at(dir.resolve("part"), ResultFolder.Kind.SERVING, false), p -> {
        one(p, "part");
        Files.writeString(p.resolve("timing.json"), "4.5 s");
      });
    };
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPRODUCTION, false).asCommitted(), first::write);
    assertTrue(ResultFolder.isCommitted(d) && ResultFolder.isCommitted(d.resolve("part")));
    assertEquals(Set.of(ResultFolder.MARKER, "summary.json", "chart.svg", "chart.png", "gone.csv", "part"), names(d), "no timing.json");
    assertEquals(Set.of(ResultFolder.MARKER, "summary.json"), names(d.resolve("part")));
    java.util.Map<String, String> before = stamps(d);
    Thread.sleep(20); // a rewritten file would get a later modification time

    // The same run again, on a JDK that rasterises the same chart into other pixels: nothing changes.
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPRODUCTION, false), dir -> {
      first.write(dir);
      Files.writeString(dir.resolve("chart.png"), "pixels drawn by JDK 25");
    });
    assertEquals(before, stamps(d), "the marker says committed: not one file rewritten");

    // A changed chart, a changed part and a file no longer written.
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPRODUCTION, false), dir -> {
      one(dir, "same");
      Files.writeString(dir.resolve("chart.svg"), "<svg>2</svg>");
      Files.writeString(dir.resolve("chart.png"), "new pixels");
      ResultFolder.write(ResultFolder.Target.at(dir.resolve("part"), ResultFolder.Kind.SERVING, false), p -> one(p, "part 2"));
    });
    java.util.Map<String, String> after = stamps(d);
    assertEquals(before.get("summary.json"), after.get("summary.json"), "unchanged bytes stay as they were");
    assertTrue(after.get("chart.png").startsWith("new pixels@"), after.toString());
    assertTrue(after.get("part/summary.json").startsWith("part 2@"), after.toString());
    assertFalse(after.containsKey("gone.csv"), after.toString());
    assertEquals(Set.of("gallery"), names(tmp), "no temporary left");
  }

  @Test
  void aFileOfTheUsersInsideARunOfAReproductionNeedsForce() throws IOException {
    Path d = tmp.resolve("repro");
    ResultFolder.Target target = ResultFolder.Target.at(d, ResultFolder.Kind.REPRODUCTION, false).asCommitted();
    ResultFolder.write(target, dir -> {
      one(dir, "table");
      ResultFolder.write(ResultFolder.Target.at(dir.resolve("run"), ResultFolder.Kind.SERVING, false), p -> one(p, "run"));
    });
    Files.writeString(d.resolve("run").resolve("notes.txt"), "mine");
    InputException e = assertThrows(InputException.class, () -> ResultFolder.write(target, dir -> one(dir, "table 2")));
    assertTrue(e.getMessage().contains("also holds files kvsim did not write"), e.getMessage());
    assertEquals("mine", Files.readString(d.resolve("run").resolve("notes.txt")));
    ResultFolder.write(ResultFolder.Target.at(d, ResultFolder.Kind.REPRODUCTION, true), dir -> one(dir, "table 2"));
    assertEquals(Set.of(ResultFolder.MARKER, "summary.json"), names(d), "--force replaces it, those files included");
  }

  /** A folder writer that may be called twice. */
  @FunctionalInterface
  private interface AtomicFilesWriter {
    void write(Path dir) throws IOException;
  }

  @Test
  void aResumableFolderIsResumedOnlyByItsOwnKind() throws IOException {
    Path d = tmp.resolve("sweep");
    ResultFolder.openResumable(ResultFolder.Target.at(d, ResultFolder.Kind.SWEEP, false), "cells");
    Files.writeString(d.resolve("cells").resolve("a.json"), "{}");
    assertEquals(d, ResultFolder.openResumable(ResultFolder.Target.at(d, ResultFolder.Kind.SWEEP, false), "cells"));
    assertTrue(Files.exists(d.resolve("cells").resolve("a.json")), "resumed as it was");
    assertThrows(InputException.class, () -> ResultFolder.openResumable(ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, true), "cells"));
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
    assertThrows(InputException.class, () -> ResultFolder.Target.at(d, ResultFolder.Kind.REPLAY, false).check());
    assertFalse(ResultFolder.isResultFolder(d));
  }
}

package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The check a launcher leaves to a resident server (Note [Sources checked by the server] in {@code
 * kvsim}) finds a stale build where the launcher's {@code find} would: a source, a pom or a folder
 * newer than the jar, to the nanosecond; a jar built again; a source that is missing.
 */
class ServedBuildTest {
  private static final Instant BUILT = Instant.parse("2026-01-02T03:04:05.123456789Z");

  /** A clone with a jar built at {@link #BUILT} and every source older; returns the server's build for it. */
  private static String clone(Path root) throws IOException {
    Path source = root.resolve("simulator/src/main/java/kvsim/A.java");
    Files.createDirectories(source.getParent());
    Files.writeString(source, "class A {}");
    Files.writeString(root.resolve("pom.xml"), "<project/>");
    Files.writeString(root.resolve("simulator/pom.xml"), "<project/>");
    Path jar = Files.createDirectories(root.resolve("simulator/target")).resolve("kvsim.jar");
    Files.write(jar, new byte[1234]);
    FileTime older = FileTime.from(BUILT.minusSeconds(60));
    try (var all = Files.walk(root)) {
      for (Path p : all.toList()) {
        Files.setLastModifiedTime(p, older);
      }
    }
    Files.setLastModifiedTime(jar, FileTime.from(BUILT));
    return jar + " 1234 " + BUILT.getEpochSecond() + " /usr/bin/java";
  }

  private static String checkedHere(Path root) {
    return root.resolve("simulator/target/kvsim.jar") + " " + ServedBuild.CHECK_SOURCES + " /usr/bin/java";
  }

  @Test
  void aBuildOfAnotherFormIsNeverCheckedByTheServer() {
    assertNull(ServedBuild.of("test-build"));
    assertNull(ServedBuild.of("/x/kvsim.jar 12 34 /usr/bin/java"), "not a clone's jar");
    assertNull(ServedBuild.of("/x/simulator/target/kvsim.jar 12 /usr/bin/java"), "no time");
  }

  @Test
  void aCurrentBuildIsServedAndOnlyToTheSameJarAndJava(@TempDir Path root) throws IOException {
    ServedBuild build = ServedBuild.of(clone(root));
    assertNotNull(build);
    assertNull(build.staleness());
    assertTrue(build.leavesCheckToServer(checkedHere(root)));
    assertFalse(build.leavesCheckToServer(checkedHere(root).replace("/usr/bin/java", "/opt/java")), "another java");
    assertFalse(build.leavesCheckToServer(root.resolve("other/simulator/target/kvsim.jar") + " " + ServedBuild.CHECK_SOURCES + " /usr/bin/java"), "another jar");
  }

  @Test
  void aSourceNewerThanTheJarByOneNanosecondIsStaleAndOneAsOldIsNot(@TempDir Path root) throws IOException {
    ServedBuild build = ServedBuild.of(clone(root));
    Path source = root.resolve("simulator/src/main/java/kvsim/A.java");
    Files.setLastModifiedTime(source, FileTime.from(BUILT));
    assertNull(build.staleness(), "as old as the jar: find -newer says no either");
    Files.setLastModifiedTime(source, FileTime.from(BUILT.plusNanos(1)));
    String stale = build.staleness();
    assertNotNull(stale);
    assertTrue(stale.contains(source.toString()), stale);
  }

  @Test
  void aNewerPomOrFolderIsStale(@TempDir Path root) throws IOException {
    ServedBuild build = ServedBuild.of(clone(root));
    Files.setLastModifiedTime(root.resolve("simulator/pom.xml"), FileTime.from(BUILT.plusSeconds(1)));
    assertTrue(build.staleness().contains("pom.xml"), build.staleness());
    Files.setLastModifiedTime(root.resolve("simulator/pom.xml"), FileTime.from(BUILT.minusSeconds(1)));
    assertNull(build.staleness());
    Path folder = root.resolve("simulator/src/main/java/kvsim");
    Files.setLastModifiedTime(folder, FileTime.from(BUILT.plusSeconds(1))); // a source removed or renamed there
    assertTrue(build.staleness().contains(folder.toString()), build.staleness());
  }

  /** Note [Sources stated again, not walked]: after a walk found the build current, a file added with an old time is found by its folder's. */
  @Test
  void aSourceAddedAfterTheFirstCheckIsFoundByItsFolder(@TempDir Path root) throws IOException {
    ServedBuild build = ServedBuild.of(clone(root));
    assertNull(build.staleness(), "current: the paths are kept");
    Path folder = root.resolve("simulator/src/main/java/kvsim");
    Path added = folder.resolve("B.java");
    Files.writeString(added, "class B {}");
    Files.setLastModifiedTime(added, FileTime.from(BUILT.minusSeconds(3600))); // as an archive or cp -p would leave it
    String stale = build.staleness();
    assertNotNull(stale, "the folder's own time changed");
    assertTrue(stale.contains(folder.toString()), stale);
  }

  @Test
  void aJarBuiltAgainOrAMissingSourceIsStale(@TempDir Path root) throws IOException {
    String named = clone(root);
    ServedBuild build = ServedBuild.of(named);
    Path jar = root.resolve("simulator/target/kvsim.jar");
    Files.setLastModifiedTime(jar, FileTime.from(BUILT.plusSeconds(5)));
    assertTrue(build.staleness().contains("built again"), build.staleness());
    Files.write(jar, new byte[999]);
    Files.setLastModifiedTime(jar, FileTime.from(BUILT));
    assertTrue(build.staleness().contains("built again"), "another size, the same time");
    Path other = root.resolve("again");
    ServedBuild fresh = ServedBuild.of(clone(other));
    Files.delete(other.resolve("simulator/pom.xml"));
    assertNotNull(fresh.staleness(), "a source the launcher's find cannot read");
    assertEquals(BUILT.getEpochSecond(), Files.getLastModifiedTime(other.resolve("simulator/target/kvsim.jar")).to(TimeUnit.SECONDS));
  }
}

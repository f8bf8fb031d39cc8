package kvsim.cli;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The build a resident server runs, as the launcher names it ({@code JAR SIZE SECONDS JAVA}: the
 * jar's path, size in bytes and modification time in whole seconds, and the java), and the check
 * the launcher leaves to the server (Note [Sources checked by the server] in {@code kvsim}): a
 * client that sends {@link #CHECK_SOURCES} for the size and time is served only while the jar on
 * disk has this size and time and no source is newer than the jar, the test the launcher's {@code
 * find} makes: {@code pom.xml}, {@code simulator/pom.xml} and everything under {@code
 * simulator/src/main}, folders included, against the jar's time to the nanosecond. Not
 * thread-safe: the server answers one request at a time.
 */
final class ServedBuild {
  /** What a launcher sends in place of the jar's size and time to have the server check them. */
  static final String CHECK_SOURCES = "check-sources";

  private static final Pattern FORM = Pattern.compile("(.+/simulator/target/kvsim\\.jar) ([0-9]{1,18}) ([0-9]{1,18}) (.+)");

  private final Path jar;
  private final long sizeBytes;
  private final long modifiedSeconds;
  /** The build as a launcher that leaves the check to the server names it. */
  private final String checkedHere;
  /** Every source path the last walk saw, once it found the build current (Note [Sources stated again, not walked]); null before. */
  private Path[] sources;

  private ServedBuild(Path jar, long sizeBytes, long modifiedSeconds, String checkedHere) {
    this.jar = jar;
    this.sizeBytes = sizeBytes;
    this.modifiedSeconds = modifiedSeconds;
    this.checkedHere = checkedHere;
  }

  /** Reads a launcher's build; null for any other form (a test's name), which is never checked here. */
  static ServedBuild of(String build) {
    Matcher m = FORM.matcher(build);
    if (!m.matches()) {
      return null;
    }
    return new ServedBuild(Path.of(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)), m.group(1) + " " + CHECK_SOURCES + " " + m.group(4));
  }

  /** Whether {@code clientBuild} is this build with the check left to the server. */
  boolean leavesCheckToServer(String clientBuild) {
    return checkedHere.equals(clientBuild);
  }

  /** Returns why the jar or its sources are no longer this build, or null when they are. */
  String staleness() {
    BasicFileAttributes built;
    try {
      built = Files.readAttributes(jar, BasicFileAttributes.class);
    } catch (IOException e) {
      return "its jar " + jar + " cannot be read";
    }
    if (built.size() != sizeBytes || built.lastModifiedTime().to(TimeUnit.SECONDS) != modifiedSeconds) {
      return "its jar " + jar + " was built again";
    }
    Path newer = sources == null ? walk(built.lastModifiedTime()) : restat(built.lastModifiedTime());
    return newer == null ? null : newer + " is newer than its jar";
  }

  /**
   * Walks the sources, keeping every path seen for {@link #restat}; returns the first modified
   * after {@code time}, or one that cannot be read, or null if none.
   */
  private Path walk(FileTime time) {
    Path root = jar.getParent().getParent().getParent();
    List<Path> seen = new ArrayList<>();
    for (Path top : List.of(root.resolve("pom.xml"), root.resolve("simulator/pom.xml"), root.resolve("simulator/src/main"))) {
      Path newer = newerThan(top, time, seen);
      if (newer != null) {
        return newer;
      }
    }
    sources = seen.toArray(new Path[0]);
    return null;
  }

  /**
   * Note [Sources stated again, not walked]: once a walk found the build current, the same paths
   * are read again one by one, without listing a folder. That finds what the walk would: a file
   * changed in place has a newer time of its own, and a file added, removed or renamed gives its
   * folder one. The walk took about 3 ms of every served command in async-profiler samples.
   */
  private Path restat(FileTime time) {
    for (Path p : sources) {
      try {
        if (Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).lastModifiedTime().compareTo(time) > 0) {
          return p;
        }
      } catch (IOException e) {
        return p;
      }
    }
    return null;
  }

  /** The first path under {@code top} (itself included) modified after {@code time}, or one that cannot be read; null if none. */
  private static Path newerThan(Path top, FileTime time, List<Path> seen) {
    Path[] found = new Path[1];
    try {
      Files.walkFileTree(top, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
          return check(dir, attrs);
        }

        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          return check(file, attrs);
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          found[0] = file; // missing or unreadable: the launcher's own test decides
          return FileVisitResult.TERMINATE;
        }

        private FileVisitResult check(Path p, BasicFileAttributes attrs) {
          seen.add(p);
          if (attrs.lastModifiedTime().compareTo(time) > 0) {
            found[0] = p;
            return FileVisitResult.TERMINATE;
          }
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      return top;
    }
    return found[0];
  }
}

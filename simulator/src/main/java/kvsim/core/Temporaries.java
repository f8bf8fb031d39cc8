package kvsim.core;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The temporary files and folders kvsim writes beside its outputs, and their removal on every exit
 * path.
 *
 * <p>Note [Nothing left behind]: every temporary is created beside its target under a name that
 * carries the creating process's id ({@code .NAME.<pid>-<n>-<hex>.tmp} for a file, {@code
 * .kvsim-tmp-<pid>-<n>-<hex>} for a result folder being written, {@code .kvsim-old-<pid>-<n>-<hex>}
 * for an earlier result folder moved aside while its replacement moves in). They are removed
 *
 * <ul>
 *   <li>by the code that made them, on success and on failure;
 *   <li>by a shutdown hook when the JVM exits before that (SIGINT, SIGTERM, an error escaping a
 *       thread): the hook deletes every temporary still tracked;
 *   <li>by the next kvsim run that writes into the same folder, when the process that made them no
 *       longer runs (it was killed with SIGKILL, or the machine stopped): the run removes them and
 *       says so on stderr.
 * </ul>
 *
 * A folder moved aside holds the earlier result under its own name; when the replacement never
 * arrived (the target is missing), it is moved back instead of deleted, so an interrupted replace
 * keeps the earlier result.
 */
final class Temporaries {
  /** The moved-aside holders' prefix (Note [Nothing left behind]). */
  static final String OLD_PREFIX = ".kvsim-old-";

  private static final Pattern NAME = Pattern.compile("^\\.(?:kvsim-(?:tmp|old)-(\\d+)-\\d+-[0-9a-f]+|.+\\.(\\d+)-\\d+-[0-9a-f]+\\.tmp)$");
  private static final Set<Path> LIVE = ConcurrentHashMap.newKeySet();
  private static final Set<Path> SCANNED = ConcurrentHashMap.newKeySet();
  private static volatile boolean hookInstalled;
  private static volatile Consumer<String> notices = line -> System.err.println(line); // the stderr of the moment (a served command's)

  private Temporaries() {}

  /** Tracks a temporary just created, for the exit hook. */
  static Path track(Path p) {
    if (!hookInstalled) {
      installHook();
    }
    LIVE.add(p.toAbsolutePath());
    return p;
  }

  static void forget(Path p) {
    LIVE.remove(p.toAbsolutePath());
  }

  /** Where notices of removed stale temporaries go (stderr; tests capture them). */
  static void noticesTo(Consumer<String> sink) {
    notices = sink;
  }

  /**
   * Forgets which folders were looked at, so that the next command run in this process looks at
   * them again, as a command run in a process of its own does (the resident server, between
   * commands; Note [Resident server] on {@code kvsim.cli.Server}).
   */
  static void forgetScannedFolders() {
    SCANNED.clear();
  }

  /** Returns the temporaries this process tracks now (for tests). */
  static List<Path> live() {
    return List.copyOf(LIVE);
  }

  private static synchronized void installHook() {
    if (hookInstalled) {
      return;
    }
    Runtime.getRuntime().addShutdownHook(new Thread(Temporaries::removeAllLive, "kvsim-temporaries"));
    hookInstalled = true;
  }

  /** Removes every temporary still tracked (the exit hook). */
  static void removeAllLive() {
    for (Path p : new ArrayList<>(LIVE)) {
      try {
        cleanUp(p);
      } catch (IOException | RuntimeException e) {
        // the JVM is exiting: nothing more can be done, and nothing may be thrown
      }
      LIVE.remove(p);
    }
  }

  /**
   * Removes the stale temporaries in {@code dir}: those whose process no longer runs. Each folder
   * is looked at once per process.
   */
  static void removeStale(Path dir) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    if (!SCANNED.add(abs) || !Files.isDirectory(abs)) {
      return;
    }
    List<Path> stale = new ArrayList<>();
    try (Stream<Path> list = Files.list(abs)) {
      list.forEach(p -> {
        long pid = creatorOf(p.getFileName().toString());
        if (pid > 0 && pid != ProcessHandle.current().pid() && ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true)) {
          stale.add(p);
        }
      });
    } catch (IOException e) {
      return; // an unreadable folder: the write itself will report it
    }
    stale.sort(Comparator.naturalOrder());
    for (Path p : stale) {
      String what = cleanUp(p);
      notices.accept("kvsim: " + what + " (left by an interrupted kvsim run, process " + creatorOf(p.getFileName().toString()) + ")");
    }
  }

  /** Returns the id of the process that made a temporary of this name, or -1 when the name is not one. */
  static long creatorOf(String name) {
    Matcher m = NAME.matcher(name);
    if (!m.matches()) {
      return -1;
    }
    try {
      return Long.parseLong(m.group(1) != null ? m.group(1) : m.group(2));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** Removes a temporary, or moves an earlier result back where it is missing; returns what was done. */
  private static String cleanUp(Path p) throws IOException {
    if (p.getFileName().toString().startsWith(OLD_PREFIX) && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
      List<Path> held;
      try (Stream<Path> list = Files.list(p)) {
        held = list.toList();
      }
      if (held.size() == 1) {
        Path target = p.resolveSibling(held.get(0).getFileName().toString());
        if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
          Files.move(held.get(0), target, StandardCopyOption.ATOMIC_MOVE);
          Files.delete(p);
          return "restored " + target + ", an earlier result whose replacement never arrived";
        }
      }
    }
    deleteTree(p);
    return "removed " + p;
  }

  /** Deletes a file or a folder tree; absent is fine. Retries while a writer still adds files. */
  static void deleteTree(Path root) throws IOException {
    for (int attempt = 0; ; attempt++) {
      if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
        return;
      }
      try (Stream<Path> walk = Files.walk(root)) {
        for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
        return;
      } catch (DirectoryNotEmptyException | NoSuchFileException | java.io.UncheckedIOException e) {
        if (attempt == 20) {
          throw e;
        }
      }
    }
  }
}

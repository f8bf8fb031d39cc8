package kvsim.core;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Writes files so that a reader never sees a partial one: the content goes to a temporary file in
 * the same folder, which is then moved over the target. On failure the temporary file is removed.
 * Result folders are written whole by {@code kvsim.report.ResultFolder}, which uses the pieces here.
 */
public final class AtomicFiles {
  private AtomicFiles() {}

  /** Something that writes a file's content. */
  @FunctionalInterface
  public interface Writer {
    /** Writes the content. */
    void write(OutputStream out) throws IOException;
  }

  /** Something that fills a folder. */
  @FunctionalInterface
  public interface FolderWriter {
    /** Writes the folder's files into {@code dir}. */
    void write(Path dir) throws IOException;
  }

  /** Writes {@code target} atomically with the given writer. */
  public static void write(Path target, Writer writer) throws IOException {
    write(target, writer, () -> {});
  }

  /**
   * Writes {@code target} atomically with the given writer; {@code beforeMove} runs once the
   * content is complete, just before it replaces the target, and may refuse by throwing.
   */
  public static void write(Path target, Writer writer, Runnable beforeMove) throws IOException {
    if (Files.isDirectory(target)) {
      throw new InputException(target + ": is a folder; give the name of a file to write");
    }
    Path dir = target.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = temporaryFile(dir, "." + target.getFileName() + ".");
    try {
      readableByAll(tmp);
      try (OutputStream out = new java.io.BufferedOutputStream(Files.newOutputStream(tmp), 1 << 16)) {
        writer.write(out);
      }
      beforeMove.run();
      move(tmp, target);
    } finally {
      discard(tmp);
    }
  }

  /**
   * Starts a new command in this process: the stale temporaries of every folder are looked for
   * again on its first write there (Note [Nothing left behind] on {@code Temporaries}); the
   * resident server calls it before each command it runs.
   */
  public static void startCommand() {
    Temporaries.forgetScannedFolders();
  }

  /**
   * Creates a new, empty file {@code dir/PREFIX<unique>.tmp} and returns it. See Note [Temporary
   * names].
   */
  public static Path temporaryFile(Path dir, String prefix) throws IOException {
    Temporaries.removeStale(dir);
    for (int attempt = 0; ; attempt++) {
      try {
        return Temporaries.track(Files.createFile(dir.resolve(prefix + uniqueSuffix() + ".tmp")));
      } catch (FileAlreadyExistsException e) {
        if (attempt == 1000) {
          throw e;
        }
      }
    }
  }

  /** Creates a new, empty folder {@code dir/PREFIX<unique>} and returns it (Note [Temporary names]). */
  public static Path temporaryFolder(Path dir, String prefix) throws IOException {
    Temporaries.removeStale(dir);
    for (int attempt = 0; ; attempt++) {
      try {
        return Temporaries.track(Files.createDirectory(dir.resolve(prefix + uniqueSuffix())));
      } catch (FileAlreadyExistsException e) {
        if (attempt == 1000) {
          throw e;
        }
      }
    }
  }

  // Note [Temporary names]: Files.createTempFile draws its names from SecureRandom, whose first use
  // loads and seeds the security providers: tens of milliseconds at the start of every short run.
  // Unpredictable names buy nothing here (the folders are the user's own), so a name is the process
  // id, a per-process counter and the clock, and creation with CREATE_NEW semantics (createFile,
  // createDirectory) settles any collision by trying the next counter value.
  private static final AtomicLong COUNTER = new AtomicLong();

  private static String uniqueSuffix() {
    return ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet() + "-" + Long.toHexString(System.nanoTime());
  }

  /**
   * Deletes a temporary file or folder made by {@link #temporaryFile} or {@link #temporaryFolder}
   * (what is left of it: it may have been moved into place already) and forgets it.
   */
  public static void discard(Path tmp) throws IOException {
    try {
      Temporaries.deleteTree(tmp);
    } finally {
      Temporaries.forget(tmp);
    }
  }

  /** Forgets a temporary that was moved into place, so that the exit hook leaves it alone. */
  public static void keep(Path tmp) {
    Temporaries.forget(tmp);
  }

  /**
   * Gives a temporary file or folder the usual permissions (rw-r--r--, rwxr-xr-x): temporary files
   * are created private, and the move would keep that.
   */
  public static void readableByAll(Path p) throws IOException {
    if (p.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      Files.setPosixFilePermissions(
          p, java.nio.file.attribute.PosixFilePermissions.fromString(Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
    }
  }

  /** Moves {@code from} onto {@code to}, atomically where the file system allows. */
  public static void move(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
    }
  }
}

package kvsim.core;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

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
    if (Files.isDirectory(target)) {
      throw new InputException(target + ": is a folder; give the name of a file to write");
    }
    Path dir = target.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = Files.createTempFile(dir, "." + target.getFileName() + ".", ".tmp");
    try {
      readableByAll(tmp);
      try (OutputStream out = new java.io.BufferedOutputStream(Files.newOutputStream(tmp), 1 << 16)) {
        writer.write(out);
      }
      move(tmp, target);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(tmp);
      throw e;
    }
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

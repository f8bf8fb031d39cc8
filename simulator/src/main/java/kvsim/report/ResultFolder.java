package kvsim.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;

/**
 * Where a run's result folder goes, and how it gets there without harming anything else.
 *
 * <p>Note [Output safety]: a result folder is written whole into a hidden temporary folder beside
 * its target and moved into place only when every file is written, so a failed run leaves nothing.
 * The target may be
 *
 * <ul>
 *   <li>a folder that does not exist yet, or an empty one: the result folder takes its place;
 *   <li>a kvsim result folder, recognised by the marker file {@value #MARKER} that kvsim writes into
 *       every result folder (it lists the files written): it is replaced, as a whole, after the new
 *       one is complete. If the user added files of their own to it, it is replaced only with
 *       {@code --force};
 *   <li>anything else (a file, or a folder holding anything and no marker): refused with exit
 *       status 2, {@code --force} or not.
 * </ul>
 *
 * No code path deletes a tree that kvsim did not write: the only tree ever deleted is a result
 * folder that carries the marker, after it has been moved aside. A fresh run id ({@code
 * results/runs/<yyyyMMdd-HHmmss>-<workload>[-N]}) is claimed by creating its folder atomically, so
 * two runs started in the same second get two folders.
 */
public final class ResultFolder {
  /** The marker file in every result folder kvsim writes. */
  public static final String MARKER = ".kvsim-result";

  private static final String MARKER_FIRST_LINE = "kvsim result folder";
  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss");

  /** What a path holds, as far as writing a result folder there is concerned. */
  enum State {
    ABSENT,
    EMPTY,
    RESULT,
    RESULT_WITH_OTHER_FILES,
    FOREIGN
  }

  /**
   * Where to write: an explicit folder ({@code -o DIR}), or a fresh run id under a base folder.
   *
   * @param dir the folder given by the user, or null for a fresh run id
   * @param runsBase the folder fresh run ids are created in
   * @param runName the workload's name, the last part of a fresh run id
   * @param force whether a result folder holding other files may be replaced
   */
  public record Target(Path dir, Path runsBase, String runName, boolean force) {
    /** The folder {@code dir}, given by the user. */
    public static Target at(Path dir, boolean force) {
      return new Target(dir, null, null, force);
    }

    /** A fresh run id {@code <time>-<runName>[-N]} under {@code runsBase}. */
    public static Target fresh(Path runsBase, String runName) {
      return new Target(null, runsBase, runName, false);
    }

    /**
     * Checks, before anything runs, that a result folder may be written here; throws an {@link
     * InputException} naming the folder and the reason otherwise.
     */
    public Target check() {
      if (dir != null) {
        refuseUnlessWritable(dir, force);
      }
      return this;
    }
  }

  private ResultFolder() {}

  /**
   * Writes a result folder at {@code target} as a whole and returns where it went. The writer
   * fills a temporary folder; nothing is moved or replaced unless it succeeded.
   */
  public static Path write(Target target, AtomicFiles.FolderWriter writer) throws IOException {
    Path parent = target.dir() != null ? parentOf(target.dir()) : target.runsBase().toAbsolutePath().normalize();
    if (target.dir() != null) {
      refuseUnlessWritable(target.dir(), target.force());
    }
    Files.createDirectories(parent);
    Path tmp = AtomicFiles.temporaryFolder(parent, ".kvsim-tmp-");
    try {
      AtomicFiles.readableByAll(tmp);
      writer.write(tmp);
      writeMarker(tmp);
      Path dir = target.dir() != null ? target.dir() : claimFresh(target.runsBase(), target.runName());
      moveInto(tmp, dir, target.force());
      return dir;
    } catch (IOException | RuntimeException e) {
      deleteOwnTemporary(tmp);
      throw e;
    }
  }

  /**
   * Opens a result folder that is filled piece by piece over one or more runs (a resumable sweep)
   * and returns it. The target may be what {@link #write} accepts; an earlier result folder that
   * holds the subfolder {@code part} is resumed as it is, any other earlier result folder is
   * replaced by a new one. The marker is written at once, listing {@code part}, so an interrupted
   * run leaves a folder that the next run recognises; {@link #seal} lists the files added since.
   */
  public static Path openResumable(Target target, String part) throws IOException {
    if (target.dir() == null) {
      Path base = target.runsBase().toAbsolutePath().normalize();
      Files.createDirectories(base);
      Path dir = claimFresh(base, target.runName());
      Files.createDirectory(dir.resolve(part));
      writeMarker(dir);
      return dir;
    }
    Path dir = target.dir();
    refuseUnlessWritable(dir, target.force());
    State state = stateOf(dir);
    if ((state == State.RESULT || state == State.RESULT_WITH_OTHER_FILES) && Files.isDirectory(dir.resolve(part), LinkOption.NOFOLLOW_LINKS)) {
      return dir;
    }
    Path parent = parentOf(dir);
    Files.createDirectories(parent);
    Path tmp = AtomicFiles.temporaryFolder(parent, ".kvsim-tmp-");
    try {
      AtomicFiles.readableByAll(tmp);
      Files.createDirectory(tmp.resolve(part));
      writeMarker(tmp);
      moveInto(tmp, dir, target.force());
      return dir;
    } catch (IOException | RuntimeException e) {
      deleteOwnTemporary(tmp);
      throw e;
    }
  }

  /** Rewrites the marker of a folder from {@link #openResumable} to list every file it now holds. */
  public static void seal(Path dir) throws IOException {
    writeMarker(dir);
  }

  /** Returns whether {@code dir} is a folder kvsim wrote a result into (it holds the marker). */
  public static boolean isResultFolder(Path dir) {
    Path marker = dir.resolve(MARKER);
    if (!Files.isRegularFile(marker, LinkOption.NOFOLLOW_LINKS)) {
      return false;
    }
    try (Stream<String> lines = Files.lines(marker, StandardCharsets.UTF_8)) {
      return lines.findFirst().map(MARKER_FIRST_LINE::equals).orElse(false);
    } catch (IOException | UncheckedIOException e) {
      return false;
    }
  }

  static State stateOf(Path dir) throws IOException {
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return State.ABSENT;
    }
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      return State.FOREIGN;
    }
    List<String> names = new ArrayList<>();
    try (Stream<Path> list = Files.list(dir)) {
      list.forEach(p -> names.add(p.getFileName().toString()));
    }
    if (names.isEmpty()) {
      return State.EMPTY;
    }
    if (!isResultFolder(dir)) {
      return State.FOREIGN;
    }
    List<String> written = Files.readAllLines(dir.resolve(MARKER), StandardCharsets.UTF_8);
    for (String name : names) {
      if (!name.equals(MARKER) && !written.contains(name)) {
        return State.RESULT_WITH_OTHER_FILES;
      }
    }
    return State.RESULT;
  }

  private static void refuseUnlessWritable(Path dir, boolean force) {
    State state;
    try {
      state = stateOf(dir);
    } catch (IOException e) {
      throw new InputException(dir + ": cannot read this output folder: " + e.getMessage());
    }
    switch (state) {
      case ABSENT, EMPTY, RESULT -> {}
      case RESULT_WITH_OTHER_FILES -> {
        if (!force) {
          throw new InputException(
              dir + ": this kvsim result folder also holds files kvsim did not write; add --force to replace it, those files included, or choose another -o folder");
        }
      }
      case FOREIGN -> throw new InputException(
          dir
              + (Files.isDirectory(dir) ? ": folder is not empty and is not a kvsim result folder" : ": exists and is not a folder")
              + "; kvsim writes results only into a new or empty folder or over an earlier result folder (choose another -o folder)");
    }
  }

  /** Claims {@code base/<time>-<name>} (or {@code -2}, {@code -3}, ...) by creating it, atomically. */
  private static Path claimFresh(Path base, String name) throws IOException {
    String stem = LocalDateTime.now().format(STAMP) + "-" + name;
    for (int i = 1; ; i++) {
      Path p = base.resolve(i == 1 ? stem : stem + "-" + i);
      try {
        Files.createDirectory(p);
        return p;
      } catch (FileAlreadyExistsException e) {
        // another run holds this id: try the next suffix
      }
    }
  }

  private static void writeMarker(Path tmp) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(MARKER_FIRST_LINE);
    try (Stream<Path> list = Files.list(tmp)) {
      list.map(p -> p.getFileName().toString()).filter(n -> !n.equals(MARKER)).sorted().forEach(lines::add);
    }
    AtomicFiles.write(tmp.resolve(MARKER), out -> out.write((String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * Moves the finished temporary folder to {@code dir}: straight there when it is absent or empty
   * (a rename onto an empty folder replaces it), else the old result folder is first moved aside
   * and deleted once the new one is in place.
   */
  private static void moveInto(Path tmp, Path dir, boolean force) throws IOException {
    refuseUnlessWritable(dir, force); // the folder may have changed while the run went on
    if (stateOf(dir) == State.ABSENT || stateOf(dir) == State.EMPTY) {
      try {
        Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        return;
      } catch (DirectoryNotEmptyException | FileAlreadyExistsException e) {
        throw new InputException(dir + ": something else was written there while the run went on; nothing was replaced");
      }
    }
    Path old = AtomicFiles.temporaryFolder(parentOf(dir), ".kvsim-old-");
    Path aside = old.resolve("result");
    Files.move(dir, aside, StandardCopyOption.ATOMIC_MOVE);
    try {
      Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException | RuntimeException e) {
      Files.move(aside, dir, StandardCopyOption.ATOMIC_MOVE);
      Files.delete(old);
      throw e;
    }
    deleteOwnTree(old, aside);
  }

  /** Deletes the earlier result folder moved aside into {@code holder}; it carries the marker. */
  private static void deleteOwnTree(Path holder, Path resultFolder) throws IOException {
    if (!isResultFolder(resultFolder)) {
      throw new IllegalStateException(resultFolder + " is not a kvsim result folder; not deleting it");
    }
    deleteTree(holder);
  }

  /** Deletes a temporary folder this class created. */
  private static void deleteOwnTemporary(Path tmp) throws IOException {
    deleteTree(tmp);
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  private static Path parentOf(Path dir) {
    Path abs = dir.toAbsolutePath().normalize();
    return abs.getParent() != null ? abs.getParent() : abs;
  }
}

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
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;
import kvsim.core.OutputFile;

/**
 * Where a run's result folder goes, and how it gets there without harming anything else.
 *
 * <p>Note [Output safety]: a result folder is written whole into a hidden temporary folder beside
 * its target and moved into place only when every file is written, so a failed run leaves nothing
 * (and an interrupted one nothing either: Note [Nothing left behind] on {@code
 * core.Temporaries}). The target may be
 *
 * <ul>
 *   <li>a folder that does not exist yet, or an empty one: the result folder takes its place;
 *   <li>a kvsim result folder <em>of the same kind</em>, recognised by the marker file {@value
 *       #MARKER} that kvsim writes into every result folder (it names the folder's {@link Kind} and
 *       lists the files written): it is replaced, as a whole, after the new one is complete. If the
 *       user added files of their own to it, it is replaced only with {@code --force};
 *   <li>a kvsim result folder of another kind (a serving run onto the regression baselines, a replay
 *       onto a reproduction): refused with exit status 2, {@code --force} or not, naming both kinds;
 *   <li>anything else (a file, or a folder holding anything and no marker), and a folder that holds
 *       one of the command's inputs: refused with exit status 2, {@code --force} or not.
 * </ul>
 *
 * No code path deletes a tree that kvsim did not write: the only tree ever deleted is a result
 * folder that carries the marker, after it has been moved aside. A fresh run id ({@code
 * results/runs/<yyyyMMdd-HHmmss>-<workload>[-N]}) is claimed by creating its folder atomically, so
 * two runs started in the same second get two folders.
 *
 * <p>Note [Committed folders]: a folder whose marker says {@code committed: true} (the gallery, the
 * reproductions, the regression baselines: folders kept in version control) is rewritten so that
 * version control sees only real changes: files that depend on the run rather than its inputs
 * ({@value #RUN_DEPENDENT}: wall-clock times) are not written into it, and only files whose bytes
 * change are replaced; a PNG chart whose SVG twin is unchanged is kept as it is, since its pixels
 * differ from one JDK's rasteriser to another's (JDK 17 and 25 differ in a few antialiased pixels)
 * while the chart is the same. Reproductions and baselines are always written this way.
 */
public final class ResultFolder {
  /** The marker file in every result folder kvsim writes. */
  public static final String MARKER = ".kvsim-result";

  /** The run-dependent file never written into a committed folder (Note [Committed folders]). */
  public static final String RUN_DEPENDENT = "timing.json";

  private static final String MARKER_FIRST_LINE = "kvsim result folder";
  private static final String FILES_LINE = "files:";
  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss");

  /** What wrote a result folder; {@code -o} never turns a folder of one kind into another. */
  public enum Kind {
    /** {@code kvsim replay} and {@code kvsim compare}: one run or a seed sweep of allocators. */
    REPLAY("replay", "a replay/compare result"),
    /** {@code kvsim serving}. */
    SERVING("serving", "a serving result"),
    /** {@code kvsim capacity}. */
    CAPACITY("capacity", "a capacity result"),
    /** {@code kvsim sweep}. */
    SWEEP("sweep", "a sweep result"),
    /** {@code kvsim regress --update}: a suite's baselines. */
    BASELINE("baseline", "a regression-baseline folder"),
    /** {@code kvsim reproduce}. */
    REPRODUCTION("reproduction", "a reproduction"),
    /** {@code kvsim tune}: a settings search, resumable like a sweep. */
    TUNE("tune", "a tune result"),
    /** A marker from before kinds were recorded, whose files name no known kind. */
    UNKNOWN("unknown", "a kvsim folder of unknown kind");

    private final String label;
    private final String description;

    Kind(String label, String description) {
      this.label = label;
      this.description = description;
    }

    /** The word in the marker. */
    public String label() {
      return label;
    }

    /** The kind as a message names it. */
    public String description() {
      return description;
    }

    static Kind ofLabel(String label) {
      for (Kind k : values()) {
        if (k.label.equals(label)) {
          return k;
        }
      }
      return UNKNOWN;
    }
  }

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
   * @param kind what is written
   * @param force whether a result folder of the same kind holding other files may be replaced
   * @param committed whether to write as into a committed folder even where no marker says so
   * @param inputs the command's input files, which the folder may not hold
   * @param report whether the folder gets its charts and {@code report.html} (false: {@code --no-report}, data files only)
   */
  public record Target(Path dir, Path runsBase, String runName, Kind kind, boolean force, boolean committed, List<Path> inputs, boolean report) {
    public Target {
      inputs = List.copyOf(inputs);
    }

    /** The folder {@code dir}, given by the user. */
    public static Target at(Path dir, Kind kind, boolean force) {
      return new Target(dir, null, null, kind, force, false, List.of(), true);
    }

    /** A fresh run id {@code <time>-<runName>[-N]} under {@code runsBase}. */
    public static Target fresh(Path runsBase, String runName, Kind kind) {
      return new Target(null, runsBase, runName, kind, false, false, List.of(), true);
    }

    /**
     * The folder that paths recorded in the result (a snapshot file the report links) are made
     * relative to: {@code dir}, or for a fresh run id a name beside it under {@code runsBase}, the
     * same depth, so a relative path is the same.
     */
    public Path linkBase() {
      return dir != null ? dir : runsBase.resolve("run");
    }

    /** This target, for a command that reads {@code files}: a folder that holds one is refused. */
    public Target reading(List<Path> files) {
      List<Path> all = new ArrayList<>(inputs);
      all.addAll(files);
      return new Target(dir, runsBase, runName, kind, force, committed, all, report);
    }

    /** This target, written as a committed folder (Note [Committed folders]) wherever it is. */
    public Target asCommitted() {
      return new Target(dir, runsBase, runName, kind, force, true, inputs, report);
    }

    /**
     * This target, with its charts and {@code report.html} ({@code report} true, the default) or
     * with its data files only ({@code --no-report}: Note [Data files only]).
     */
    public Target withReport(boolean report) {
      return new Target(dir, runsBase, runName, kind, force, committed, inputs, report);
    }

    /**
     * Checks, before anything runs, that a result folder may be written here; throws an {@link
     * InputException} naming the folder and the reason otherwise.
     */
    public Target check() {
      if (dir != null) {
        refuseUnlessWritable(this);
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
    return write(target, writer, List.of());
  }

  /**
   * Writes a result folder as {@link #write(Target, AtomicFiles.FolderWriter)} does, its marker
   * also listing {@code later}: the files a folder written without its report may get later
   * (Note [Data files only]).
   *
   * <p>Note [Data files only]: with {@code --no-report} a run command writes its folder's data files
   * (summary.json, the CSVs, timing.json), byte for byte as without it, and no chart file and no
   * {@code report.html}. {@code kvsim report DIR} draws the report from those files later ({@code
   * --redraw-charts} the chart files too), the same bytes as the run would have written; the marker
   * lists those files beforehand, so that the folder with them added is still a result folder of
   * kvsim's own files, which a later run replaces without {@code --force}.
   */
  public static Path write(Target target, AtomicFiles.FolderWriter writer, List<String> later) throws IOException {
    Path parent = target.dir() != null ? parentOf(target.dir()) : target.runsBase().toAbsolutePath().normalize();
    target.check();
    Files.createDirectories(parent);
    Path tmp = AtomicFiles.temporaryFolder(parent, ".kvsim-tmp-");
    try {
      AtomicFiles.readableByAll(tmp);
      writer.write(tmp);
      boolean committed = target.committed() || (target.dir() != null && Marker.read(target.dir()).committed());
      if (committed) {
        dropRunDependent(tmp);
      }
      writeMarker(tmp, target.kind(), committed, later);
      if (target.dir() == null) {
        Path dir = claimFresh(target.runsBase(), target.runName());
        moveInto(tmp, dir, target);
        return dir;
      }
      if (committed && stateOf(target.dir()) == State.RESULT) {
        refuseUnlessWritable(target); // the folder may have changed while the run went on
        Sync.into(tmp, target.dir());
      } else {
        moveInto(tmp, target.dir(), target);
      }
      return target.dir();
    } finally {
      AtomicFiles.discard(tmp);
    }
  }

  /**
   * Opens a result folder that is filled piece by piece over one or more runs (a resumable sweep)
   * and returns it. The target may be what {@link #write} accepts; an earlier result folder of the
   * same kind that holds the subfolder {@code part} is resumed as it is, any other earlier result
   * folder of that kind is replaced by a new one. The marker is written at once, listing {@code
   * part}, so an interrupted run leaves a folder that the next run recognises; {@link #seal} lists
   * the files added since.
   */
  public static Path openResumable(Target target, String part) throws IOException {
    if (target.dir() == null) {
      Path base = target.runsBase().toAbsolutePath().normalize();
      Files.createDirectories(base);
      Path dir = claimFresh(base, target.runName());
      Files.createDirectory(dir.resolve(part));
      writeMarker(dir, target.kind(), false);
      return dir;
    }
    Path dir = target.dir();
    target.check();
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
      writeMarker(tmp, target.kind(), false);
      moveInto(tmp, dir, target);
      return dir;
    } finally {
      AtomicFiles.discard(tmp);
    }
  }

  /** Rewrites the marker of a folder from {@link #openResumable} to list every file it now holds. */
  public static void seal(Path dir) throws IOException {
    seal(dir, List.of());
  }

  /** Seals a folder as {@link #seal(Path)} does, its marker also listing {@code later} (Note [Data files only]). */
  public static void seal(Path dir, List<String> later) throws IOException {
    Marker m = Marker.read(dir);
    writeMarker(dir, m.kind(), m.committed(), later);
  }

  /** Returns whether {@code dir} is a folder kvsim wrote a result into (it holds the marker). */
  public static boolean isResultFolder(Path dir) {
    return Marker.read(dir) != Marker.NONE;
  }

  /** Returns whether {@code dir} is a committed result folder (Note [Committed folders]). */
  public static boolean isCommitted(Path dir) {
    return Marker.read(dir).committed();
  }

  /** Returns the kind of the result folder {@code dir}, or null where it is none. */
  public static Kind kindOf(Path dir) {
    Marker m = Marker.read(dir);
    return m == Marker.NONE ? null : m.kind();
  }

  /**
   * A folder's marker, read: its kind (from the marker, or for a marker written before kinds were
   * recorded, from the files it holds), whether it is committed, and the files it lists.
   */
  record Marker(Kind kind, boolean committed, List<String> files) {
    static final Marker NONE = new Marker(Kind.UNKNOWN, false, List.of());

    static Marker read(Path dir) {
      Path marker = dir.resolve(MARKER);
      if (!Files.isRegularFile(marker, LinkOption.NOFOLLOW_LINKS)) {
        return NONE;
      }
      List<String> lines;
      try {
        lines = Files.readAllLines(marker, StandardCharsets.UTF_8);
      } catch (IOException | UncheckedIOException e) {
        return NONE;
      }
      if (lines.isEmpty() || !lines.get(0).equals(MARKER_FIRST_LINE)) {
        return NONE;
      }
      int filesAt = lines.indexOf(FILES_LINE);
      if (filesAt < 0) { // written before kinds were recorded: every further line names a file
        return new Marker(legacyKind(dir), false, List.copyOf(lines.subList(1, lines.size())));
      }
      Kind kind = Kind.UNKNOWN;
      boolean committed = false;
      for (String line : lines.subList(1, filesAt)) {
        if (line.startsWith("kind: ")) {
          kind = Kind.ofLabel(line.substring("kind: ".length()));
        } else if (line.equals("committed: true")) {
          committed = true;
        }
      }
      return new Marker(kind, committed, List.copyOf(lines.subList(filesAt + 1, lines.size())));
    }

    /** The kind of a folder whose marker names none, from the format of the files it holds. */
    private static Kind legacyKind(Path dir) {
      if (Files.isRegularFile(dir.resolve("reproduction.json"))) {
        return Kind.REPRODUCTION;
      }
      if (Files.isRegularFile(dir.resolve(SweepTable.JSON_FILE)) || Files.isDirectory(dir.resolve(SweepTable.CELLS))) {
        return Kind.SWEEP;
      }
      Path summary = dir.resolve(ResultsReader.SUMMARY_FILE);
      if (Files.isRegularFile(summary)) {
        String head = new String(OutputFile.head(summary, 4096), StandardCharsets.UTF_8);
        if (head.contains("\"" + ResultsReader.SERVING_FORMAT + "\"")) {
          return Kind.SERVING;
        }
        if (head.contains("\"" + ResultsReader.CAPACITY_FORMAT + "\"")) {
          return Kind.CAPACITY;
        }
        if (head.contains("\"" + ResultsReader.RUN_FORMAT + "\"") || head.contains("\"" + ResultsReader.SWEEP_FORMAT + "\"")) {
          return Kind.REPLAY;
        }
      }
      try (Stream<Path> list = Files.list(dir)) {
        boolean baselines = list.filter(p -> p.getFileName().toString().endsWith(".json")).anyMatch(p ->
            new String(OutputFile.head(p, 256), StandardCharsets.UTF_8).contains("\"kvsim-baseline\""));
        if (baselines) {
          return Kind.BASELINE;
        }
      } catch (IOException | UncheckedIOException e) {
        // unreadable: unknown
      }
      return Kind.UNKNOWN;
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
    Marker marker = Marker.read(dir);
    if (marker == Marker.NONE) {
      return State.FOREIGN;
    }
    for (String name : names) {
      if (!name.equals(MARKER) && !marker.files().contains(name)) {
        return State.RESULT_WITH_OTHER_FILES;
      }
      // A run's result folder inside (a reproduction's runs): files added there are the user's too.
      Path inner = dir.resolve(name);
      if (Files.isDirectory(inner, LinkOption.NOFOLLOW_LINKS) && isResultFolder(inner) && stateOf(inner) != State.RESULT) {
        return State.RESULT_WITH_OTHER_FILES;
      }
    }
    return State.RESULT;
  }

  private static void refuseUnlessWritable(Target target) {
    Path dir = target.dir();
    OutputFile.refuseInputsInside(dir, target.inputs());
    State state;
    try {
      state = stateOf(dir);
    } catch (IOException e) {
      throw new InputException(dir + ": cannot read this output folder: " + e.getMessage());
    }
    if (state == State.RESULT || state == State.RESULT_WITH_OTHER_FILES) {
      Kind existing = Marker.read(dir).kind();
      if (existing != target.kind()) {
        throw new InputException(dir + ": is " + existing.description() + ", and this command writes " + target.kind().description()
            + "; a folder never changes kind, even with --force (choose another -o folder)");
      }
    }
    switch (state) {
      case ABSENT, EMPTY, RESULT -> {}
      case RESULT_WITH_OTHER_FILES -> {
        if (!target.force()) {
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

  private static void writeMarker(Path dir, Kind kind, boolean committed) throws IOException {
    writeMarker(dir, kind, committed, List.of());
  }

  /** Writes the marker, listing the files in {@code dir} and the names in {@code later}, sorted, each once. */
  private static void writeMarker(Path dir, Kind kind, boolean committed, List<String> later) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(MARKER_FIRST_LINE);
    lines.add("kind: " + kind.label());
    if (committed) {
      lines.add("committed: true");
    }
    lines.add(FILES_LINE);
    try (Stream<Path> list = Files.list(dir)) {
      Stream.concat(list.map(p -> p.getFileName().toString()), later.stream()).filter(n -> !n.equals(MARKER)).distinct().sorted().forEach(lines::add);
    }
    AtomicFiles.write(dir.resolve(MARKER), out -> out.write((String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * Removes the run-dependent files from a finished folder and the result folders inside it, and
   * marks each of them committed (Note [Committed folders]).
   */
  private static void dropRunDependent(Path tmp) throws IOException {
    List<Path> folders;
    try (Stream<Path> walk = Files.walk(tmp)) {
      folders = walk.filter(p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)).toList();
    }
    for (Path f : folders) {
      Files.deleteIfExists(f.resolve(RUN_DEPENDENT));
      if (!f.equals(tmp) && isResultFolder(f)) {
        writeMarker(f, Marker.read(f).kind(), true);
      }
    }
  }

  /**
   * Moves the finished temporary folder to {@code dir}: straight there when it is absent or empty
   * (a rename onto an empty folder replaces it), else the old result folder is first moved aside
   * (into a holder named for this process, Note [Nothing left behind]) and deleted once the new
   * one is in place.
   */
  private static void moveInto(Path tmp, Path dir, Target target) throws IOException {
    if (target.dir() != null) {
      refuseUnlessWritable(target); // the folder may have changed while the run went on
    }
    State state = stateOf(dir);
    if (state == State.ABSENT || state == State.EMPTY) {
      try {
        Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        AtomicFiles.keep(tmp);
        return;
      } catch (DirectoryNotEmptyException | FileAlreadyExistsException e) {
        throw new InputException(dir + ": something else was written there while the run went on; nothing was replaced");
      }
    }
    Path old = AtomicFiles.temporaryFolder(parentOf(dir), ".kvsim-old-");
    Path aside = old.resolve(dir.toAbsolutePath().normalize().getFileName().toString());
    Files.move(dir, aside, StandardCopyOption.ATOMIC_MOVE);
    try {
      Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
      AtomicFiles.keep(tmp);
    } catch (IOException | RuntimeException e) {
      Files.move(aside, dir, StandardCopyOption.ATOMIC_MOVE);
      AtomicFiles.discard(old);
      throw e;
    }
    if (!isResultFolder(aside)) {
      throw new IllegalStateException(aside + " is not a kvsim result folder; not deleting it");
    }
    AtomicFiles.discard(old);
  }

  private static Path parentOf(Path dir) {
    Path abs = dir.toAbsolutePath().normalize();
    return abs.getParent() != null ? abs.getParent() : abs;
  }

  /**
   * Brings a committed folder up to date with a finished temporary one, file by file (Note
   * [Committed folders]): unchanged files stay as they are, changed or new ones are moved in
   * atomically, and files the old marker listed that the new folder lacks are deleted. The marker
   * goes last.
   */
  private static final class Sync {
    private Sync() {}

    static void into(Path from, Path to) throws IOException {
      Marker old = Marker.read(to);
      List<Path> entries;
      try (Stream<Path> list = Files.list(from)) {
        entries = list.sorted().toList();
      }
      Set<String> keptPngs = new HashSet<>();
      for (Path e : entries) {
        String name = e.getFileName().toString();
        if (name.endsWith(".png")) {
          String svg = name.substring(0, name.length() - 4) + ".svg";
          if (Files.isRegularFile(from.resolve(svg)) && Files.isRegularFile(to.resolve(svg)) && Files.isRegularFile(to.resolve(name))
              && sameBytes(from.resolve(svg), to.resolve(svg))) {
            keptPngs.add(name);
          }
        }
      }
      Set<String> names = new HashSet<>();
      for (Path e : entries) {
        String name = e.getFileName().toString();
        names.add(name);
        if (name.equals(MARKER)) {
          continue;
        }
        Path d = to.resolve(name);
        if (Files.isDirectory(e, LinkOption.NOFOLLOW_LINKS)) {
          if (Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS) && isResultFolder(d) && stateOf(d) == State.RESULT) {
            into(e, d);
            continue;
          }
          if (Files.exists(d, LinkOption.NOFOLLOW_LINKS)) {
            removeListed(to, name, old);
          }
          Files.move(e, d, StandardCopyOption.ATOMIC_MOVE);
        } else if (!keptPngs.contains(name) && !(Files.isRegularFile(d, LinkOption.NOFOLLOW_LINKS) && sameBytes(e, d))) {
          if (Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
            removeListed(to, name, old);
          }
          AtomicFiles.move(e, d);
        }
      }
      for (String listed : old.files()) {
        if (!names.contains(listed)) {
          removeListed(to, listed, old);
        }
      }
      Path marker = from.resolve(MARKER);
      if (!(Files.isRegularFile(to.resolve(MARKER)) && sameBytes(marker, to.resolve(MARKER)))) {
        AtomicFiles.move(marker, to.resolve(MARKER));
      }
    }

    /** Deletes {@code dir/name}, a file or a result folder the old marker lists; anything else stays. */
    private static void removeListed(Path dir, String name, Marker old) throws IOException {
      Path p = dir.resolve(name);
      if (!old.files().contains(name) || !Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
        return;
      }
      if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
        if (!isResultFolder(p)) {
          throw new InputException(p + ": is listed by the folder's marker but is not a kvsim result folder; not deleting it");
        }
        Path holder = AtomicFiles.temporaryFolder(dir, ".kvsim-old-");
        Files.move(p, holder.resolve("gone"), StandardCopyOption.ATOMIC_MOVE);
        AtomicFiles.discard(holder);
      } else {
        Files.delete(p);
      }
    }

    private static boolean sameBytes(Path a, Path b) throws IOException {
      return Files.size(a) == Files.size(b) && Files.mismatch(a, b) == -1;
    }
  }
}

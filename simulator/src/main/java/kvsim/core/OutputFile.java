package kvsim.core;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;

/**
 * A single file a command writes ({@code generate -o}, {@code import -o}, {@code blocks -o},
 * {@code serving --emit-trace}, {@code replay --torch-snapshot}, {@code regress --junit/--markdown},
 * {@code report -o}), and the one rule that says whether it may be written.
 *
 * <p>Note [Output rule]: kvsim never replaces a file of the user's without being asked. A path may
 * be written when
 *
 * <ul>
 *   <li>nothing is there yet; or
 *   <li>an earlier kvsim output of the <em>same kind</em> is there, recognised by its header (the
 *       {@code "format"} line of a trace, the first line of a blocks output, the name of a JUnit
 *       suite, ...: {@link Kind#recognises}); or
 *   <li>anything else is there (a file of the user's, a kvsim output of another kind, a kind with no
 *       room for a header such as Azure's CSV) and the user gave {@code --force}.
 * </ul>
 *
 * A folder at the path is refused, and so is a path that is also one of the command's inputs
 * (the same file, through any link): {@code --force} changes neither. Result folders follow the
 * same rule with their own marker ({@code kvsim.report.ResultFolder}), and a folder output that
 * holds one of the command's inputs is refused there by {@link #refuseInputsInside}. Commands check
 * every output before their run starts, and the rule is checked again just before the finished file
 * is moved into place.
 */
public final class OutputFile {
  /** What kind of file kvsim writes, and how to tell one it wrote earlier. */
  public record Kind(String description, Predicate<Path> recognises) {
    /** A kind recognised by the bytes its files start with: true when any {@code prefixes} is found there. */
    public static Kind startingWith(String description, String... prefixes) {
      return new Kind(description, p -> {
        byte[] head = head(p, 512);
        String text = new String(head, StandardCharsets.UTF_8);
        return Arrays.stream(prefixes).anyMatch(text::startsWith);
      });
    }

    /** A kind whose files kvsim cannot recognise later (the format has no room for a marker). */
    public static Kind unmarked(String description) {
      return new Kind(description, p -> false);
    }
  }

  private final Path path;
  private final Kind kind;
  private final boolean force;
  private final List<Path> inputs;

  private OutputFile(Path path, Kind kind, boolean force, List<Path> inputs) {
    this.path = path;
    this.kind = kind;
    this.force = force;
    this.inputs = List.copyOf(inputs);
  }

  /**
   * The output {@code path} of the given kind.
   *
   * @param force whether a file that is not a kvsim output of this kind may be replaced
   * @param inputs the command's input files, which may never be written
   */
  public static OutputFile of(Path path, Kind kind, boolean force, List<Path> inputs) {
    return new OutputFile(path, kind, force, inputs);
  }

  /** Returns the path. */
  public Path path() {
    return path;
  }

  /** Checks the rule (Note [Output rule]) and returns this; throws an {@link InputException} naming the path otherwise. */
  public OutputFile check() {
    for (Path in : inputs) {
      if (sameFile(path, in)) {
        throw new InputException(path + ": is also an input of this command; write the output to another file");
      }
    }
    if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) { // a link counts as there, dangling or not
      return this;
    }
    if (Files.isDirectory(path)) {
      throw new InputException(path + ": is a folder; give the name of a file to write");
    }
    if (force || kind.recognises().test(path)) {
      return this;
    }
    throw new InputException(
        path + ": exists and is not " + kind.description() + " written by kvsim; add --force to replace it, or choose another file");
  }

  /** Writes the file atomically ({@link AtomicFiles#write}) after checking the rule once more. */
  public void write(AtomicFiles.Writer writer) throws IOException {
    check();
    AtomicFiles.write(path, writer, this::check);
  }

  /**
   * Refuses a folder output that is, or holds, one of the command's inputs: replacing the folder
   * would delete the input.
   */
  public static void refuseInputsInside(Path folder, List<Path> inputs) {
    Path dir = real(folder);
    for (Path in : inputs) {
      Path f = real(in);
      if (f.startsWith(dir)) {
        throw new InputException(
            folder + ": holds " + in + ", an input of this command; replacing the folder would delete it (choose another -o folder)");
      }
    }
  }

  /** Returns whether {@code a} and {@code b} name the same file, through links and relative paths. */
  public static boolean sameFile(Path a, Path b) {
    try {
      if (Files.exists(a) && Files.exists(b)) {
        return Files.isSameFile(a, b);
      }
    } catch (IOException e) {
      // fall through to comparing the names
    }
    return real(a).equals(real(b));
  }

  /** The path with links resolved as far as it exists, absolute and normalised. */
  private static Path real(Path p) {
    Path abs = p.toAbsolutePath().normalize();
    Path existing = abs;
    Path rest = null;
    while (existing != null && !Files.exists(existing)) {
      Path name = existing.getFileName();
      rest = rest == null ? name : name.resolve(rest);
      existing = existing.getParent();
    }
    if (existing == null) {
      return abs;
    }
    try {
      Path r = existing.toRealPath();
      return rest == null ? r : r.resolve(rest);
    } catch (IOException e) {
      return abs;
    }
  }

  /** Returns at most {@code n} first bytes of a regular file, none when it cannot be read. */
  public static byte[] head(Path p, int n) {
    if (!Files.isRegularFile(p)) {
      return new byte[0];
    }
    try (InputStream in = Files.newInputStream(p)) {
      return in.readNBytes(n);
    } catch (IOException e) {
      return new byte[0];
    }
  }
}

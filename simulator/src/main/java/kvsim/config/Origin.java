package kvsim.config;

import kvsim.core.InputException;

/**
 * Where a setting's value came from, so that a problem with it names that place: a command-line
 * option ({@code --max-num-seqs}), one value of a {@code --set} list ({@code --set watermark=2}),
 * or a field of a YAML file at its line ({@code grid.yaml:7: set.block-tokens}). The origin travels
 * with the value ({@link Settings.Value}), so no message has to be read back to find the field.
 */
public abstract sealed class Origin permits Origin.Option, Origin.InFile {
  private Origin() {}

  /** Returns an error at this origin: {@code --max-num-seqs: problem} or {@code grid.yaml:7: set.block-tokens: problem}. */
  public abstract SettingException error(String problem);

  /**
   * Returns the file a path given at this origin names: as given on the command line, relative to
   * the folder of the file that gave it (a grid, a suite).
   */
  public abstract java.nio.file.Path resolve(String path);

  /** Returns the origin as a message names it ({@code --block-size}, {@code grid.yaml:4: set.block-size}). */
  @Override
  public abstract String toString();

  /** An origin on the command line, named by {@code label} ({@code --max-num-seqs}, {@code --set block-size=8}). */
  public static Origin option(String label) {
    return new Option(label);
  }

  /** An origin in a file: {@code source:line: field}; {@code line} 0 when unknown. */
  public static Origin at(String source, long line, String field) {
    return new InFile(source, line, field);
  }

  /** A command-line origin. */
  public static final class Option extends Origin {
    private final String label;

    private Option(String label) {
      this.label = label;
    }

    @Override
    public SettingException error(String problem) {
      return new SettingException(label + ": " + problem);
    }

    @Override
    public java.nio.file.Path resolve(String path) {
      return java.nio.file.Path.of(path);
    }

    @Override
    public String toString() {
      return label;
    }
  }

  /** A file origin. */
  public static final class InFile extends Origin {
    private final String source;
    private final long line;
    private final String field;

    private InFile(String source, long line, String field) {
      this.source = source;
      this.line = line;
      this.field = field;
    }

    @Override
    public SettingException error(String problem) {
      return new SettingException(InputException.at(source, line, field, problem).getMessage());
    }

    @Override
    public java.nio.file.Path resolve(String path) {
      java.nio.file.Path given = java.nio.file.Path.of(path);
      return given.isAbsolute() ? given : java.nio.file.Path.of(source).toAbsolutePath().resolveSibling(given).normalize();
    }

    @Override
    public String toString() {
      return source + (line > 0 ? ":" + line : "") + ": " + field;
    }
  }
}

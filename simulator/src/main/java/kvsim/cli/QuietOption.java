package kvsim.cli;

import picocli.CommandLine.Option;

/**
 * The one {@code -q/--quiet} option of every command that prints progress on stderr, mixed in with
 * {@code @Mixin} so that its names and help text are the same everywhere (Note [Progress pacing]
 * on {@link Progress}).
 */
final class QuietOption {
  @Option(names = {"-q", "--quiet"}, description = "Print no progress on stderr (results, warnings and errors are printed as always).")
  boolean quiet;
}

package kvsim.cli;

import java.util.List;
import picocli.CommandLine;

/**
 * The message for a word where a command expects one of its subcommands ({@code kvsim import
 * nosuchfmt}, {@code kvsim nosuch}): the name not known and the names that are, in kvsim's words,
 * instead of picocli's "Unmatched argument at index 1" (Note [Unknown names list the known ones]).
 */
final class UnknownSubcommand {
  private UnknownSubcommand() {}

  // Note [Unknown names list the known ones]: wherever kvsim looks a name up (a command, an
  // importer, an allocator, a system, a preset, a device, a model, a reproduction, a setting), a name
  // it does not know is exit status 2 with one line that says which kind of name it was and lists
  // the names it knows, so that the next try can be right.

  /**
   * Returns the one-line message when {@code ex} is an unknown word in a subcommand's place, or
   * null when it is another usage error.
   */
  static String message(CommandLine.ParameterException ex) {
    if (!(ex instanceof CommandLine.UnmatchedArgumentException u)) {
      return null;
    }
    CommandLine.Model.CommandSpec spec = ex.getCommandLine().getCommandSpec();
    List<String> unmatched = u.getUnmatched();
    if (spec.subcommands().isEmpty() || !spec.positionalParameters().isEmpty() || unmatched.isEmpty() || unmatched.get(0).startsWith("-")) {
      return null;
    }
    List<String> known = spec.subcommands().entrySet().stream()
        .filter(e -> !(e.getValue().getCommand() instanceof CommandLine.HelpCommand))
        .map(java.util.Map.Entry::getKey).toList();
    return "unknown " + kindOf(spec) + " '" + unmatched.get(0) + "'; known: " + String.join(", ", known);
  }

  /** Returns what a subcommand of {@code spec} is called: an importer, a command, a gpu command. */
  private static String kindOf(CommandLine.Model.CommandSpec spec) {
    if (spec.parent() == null) {
      return "command";
    }
    return switch (spec.name()) {
      case "import" -> "importer";
      case "generate" -> "generator";
      default -> spec.qualifiedName().replaceFirst("^kvsim ", "") + " command";
    };
  }
}

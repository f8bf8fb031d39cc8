package kvsim.cli;

import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A command's arguments read without picocli, where they are of the plain forms that short runs
 * are written in (Note [Plain arguments]).
 *
 * <p>Note [Plain arguments]: picocli builds its model of a command by reflection over the
 * annotations of the command and its mixins, with a class generated at run time for each
 * annotation type; for {@code replay}, {@code serving} or {@code blocks} that takes about 0.1 s, a
 * fifth of a 1,000-operation seed sweep. A command that is run often and briefly may therefore
 * read its arguments here first: one positional argument and options given by their names, each
 * at most once, a valued option's value as the next argument. Anything else, an argument starting
 * with - or @ that is not one of the options given (help, a value joined to its option as in
 * {@code -oDIR} or {@code --output=DIR}, an argument file, {@code --}), a second positional
 * argument, a repeated option, a missing value or one that starts with - or @, makes {@link #read}
 * return null, and the command goes to picocli, so that its messages and help stay picocli's own.
 * No option of such a command may have a default value of picocli's own: every option not given
 * keeps its field's initial value, as under picocli only without such defaults (PlainArgumentsTest
 * checks).
 */
final class PlainArguments {
  private final Map<String, String> values = new HashMap<>();
  private final Set<String> flags = new HashSet<>();
  private String positional;

  private PlainArguments() {}

  /**
   * Reads {@code args[1..]} ({@code args[0]} is the command's name); {@code valued} and {@code
   * flags} list the options taken, each as its names (the first is the one {@link #value} and
   * {@link #flag} know it by). Returns null where the arguments are not of the plain forms.
   */
  static PlainArguments read(String[] args, List<List<String>> valued, List<List<String>> flags) {
    Map<String, String> valuedNames = names(valued);
    Map<String, String> flagNames = names(flags);
    PlainArguments p = new PlainArguments();
    for (int k = 1; k < args.length; k++) {
      String a = args[k];
      String valuedName = valuedNames.get(a);
      String flagName = flagNames.get(a);
      if (valuedName != null) {
        if (k + 1 == args.length || !plainValue(args[k + 1]) || p.values.putIfAbsent(valuedName, args[++k]) != null) {
          return null;
        }
      } else if (flagName != null) {
        if (!p.flags.add(flagName)) {
          return null;
        }
      } else if (p.positional != null || !plainValue(a)) {
        return null;
      } else {
        p.positional = a;
      }
    }
    return p.positional == null ? null : p;
  }

  private static Map<String, String> names(List<List<String>> options) {
    Map<String, String> byName = new HashMap<>();
    for (List<String> names : options) {
      for (String n : names) {
        byName.put(n, names.get(0));
      }
    }
    return byName;
  }

  /** An argument picocli takes as a value as it is: not empty, not an option, not an argument file. */
  private static boolean plainValue(String a) {
    return !a.isEmpty() && a.charAt(0) != '-' && a.charAt(0) != '@';
  }

  /** The positional argument. */
  String positional() {
    return positional;
  }

  /** The value of the valued option first named {@code name}, or null where it was not given. */
  String value(String name) {
    return values.get(name);
  }

  /** Whether the flag first named {@code name} was given. */
  boolean flag(String name) {
    return flags.contains(name);
  }

  /**
   * The comma-separated names of option {@code name} as picocli's {@code split = ","} gives them;
   * an empty list where it was not given; null where the value has an empty name or a quote (which
   * picocli treats in ways of its own).
   */
  List<String> list(String name) {
    String v = values.get(name);
    if (v == null) {
      return List.of();
    }
    if (v.startsWith(",") || v.endsWith(",") || v.contains(",,") || v.indexOf('"') >= 0) {
      return null;
    }
    return List.of(v.split(","));
  }

  /** A command's run on its writers, returning its exit status. */
  interface Run {
    int run(PrintWriter out, PrintWriter err) throws Exception;
  }

  /**
   * Runs {@code run} as picocli runs a command for kvsim: on writers over {@code stdout} and {@code
   * stderr} made as picocli makes them (the streams' charsets, buffered, flushed at each line),
   * with a failure printed and turned into an exit status by {@link KvSim#failed}.
   */
  static int run(Run run, PrintStream stdout, PrintStream stderr) {
    PrintWriter out = new KvSim.Stdout(stdout, KvSim.streamCharset("sun.stdout.encoding"));
    PrintWriter err = new PrintWriter(new BufferedWriter(new OutputStreamWriter(stderr, KvSim.streamCharset("sun.stderr.encoding"))), true);
    try {
      return run.run(out, err);
    } catch (Exception e) {
      return KvSim.failed(e, err);
    } finally {
      out.flush();
    }
  }
}

package kvsim.cli;

import java.io.BufferedWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.util.Properties;
import kvsim.core.InputException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code kvsim} command: the composition root. Exit codes: 0 success, 1 the run failed (an
 * allocator broke its invariants, an I/O error), 2 bad input or usage, 3 no GPU can be used ({@code
 * kvsim gpu …}).
 */
@Command(
    name = "kvsim",
    mixinStandardHelpOptions = true,
    versionProvider = KvSim.Version.class,
    description = "Discrete-event simulator of GPU KV-cache allocators.",
    footer = {"", "kvsim server start|stop|status (the launcher's): keep a warm kvsim for this",
      "folder, so that short runs skip the JVM's start-up ('kvsim server --help')."},
    subcommands = {
      ListCommand.class,
      GenerateCommand.class,
      ReplayCommand.class,
      CompareCommand.class,
      ServingCommand.class,
      CapacityCommand.class,
      SweepCommand.class,
      TuneCommand.class,
      DiffCommand.class,
      RegressCommand.class,
      ReportCommand.class,
      ReproduceCommand.class,
      BlocksCommand.class,
      ImportCommand.class,
      ConvertCommand.class,
      TorchReplayCommand.class,
      TorchInspectCommand.class,
      CalibrateCommand.class,
      GpuCommand.class,
      CommandLine.HelpCommand.class,
    })
public final class KvSim implements Runnable {
  /** Exit status of a successful run. */
  public static final int EXIT_OK = 0;
  /** Exit status of a run that failed for a reason other than its input. */
  public static final int EXIT_FAILED = 1;
  /** Exit status for bad input or usage. */
  public static final int EXIT_BAD_INPUT = 2;
  /** Exit status of a GPU command where no GPU can be used ({@link kvsim.gpu.device.GpuUnavailableException}). */
  public static final int EXIT_NO_GPU = 3;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** Runs the CLI and exits with its status. */
  public static void main(String[] args) {
    System.exit(execute(args));
  }

  /**
   * Runs {@code args} on the process's standard streams, as {@code main} does, and returns the exit
   * status instead of exiting: {@code main} and the resident server ({@link Server}) run commands
   * through it.
   */
  static int execute(String[] args) {
    if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
      // Note [Version without a command line]: picocli's model of even the bare root (reflection
      // over its annotations, the help mixin) was most of `kvsim --version`'s own time; the line
      // printed is the one picocli prints from the same provider.
      System.out.println(new Version().getVersion()[0]);
      System.out.flush();
      return EXIT_OK;
    }
    try {
      // A block script, a replay or a serving run with plain arguments runs without picocli (Note
      // [Plain arguments] on PlainArguments).
      Integer plain = runPlain(args);
      if (plain != null) {
        return plain;
      }
      CommandLine cl = newCommandLine(args);
      if (System.getProperty("sun.stdout.encoding") == null) { // else picocli picks that encoding: leave it
        cl.setOut(new Stdout(System.out));
      }
      return cl.execute(args);
    } catch (OutOfMemoryError e) {
      // Outside a run's event loop (which reports the live set itself): still one line, no trace.
      System.err.println("kvsim: out of memory: the Java heap (" + kvsim.core.Bytes.format(Runtime.getRuntime().maxMemory())
          + ") is too small for this command; run it again with a larger heap, e.g. KVSIM_JAVA_OPTS=-Xmx8g ./kvsim ...");
      return EXIT_FAILED;
    }
  }

  /**
   * Runs {@code args} without picocli where they are of the plain forms of {@code blocks}, {@code
   * replay} or {@code serving} (Note [Plain arguments] on PlainArguments), on the process's
   * streams, and returns the exit status; null for picocli to run them.
   */
  static Integer runPlain(String[] args) {
    if (args.length == 0) {
      return null;
    }
    return switch (args[0]) {
      case "blocks" -> BlocksCommand.runPlain(args, System.out, System.err);
      case "replay" -> ReplayCommand.runPlain(args, System.out, System.err);
      case "serving" -> ServingCommand.runPlain(args, System.out, System.err);
      default -> null;
    };
  }

  /**
   * Standard output as picocli's writer makes it (the default charset, buffered, flushed at each
   * line), with the stream beneath it, so that a command whose output is UTF-8 bytes already
   * ({@code blocks}) can write them without decoding them into text to be encoded again.
   */
  static final class Stdout extends PrintWriter {
    private final OutputStream bytes;
    private final Charset charset;

    Stdout(OutputStream bytes) {
      this(bytes, Charset.defaultCharset());
    }

    Stdout(OutputStream bytes, Charset charset) {
      super(new BufferedWriter(new OutputStreamWriter(bytes, charset)), true);
      this.bytes = bytes;
      this.charset = charset;
    }

    Charset charset() {
      return charset;
    }

    /** Writes {@code b}'s bytes after the text printed so far. */
    void writeBytes(ByteArrayOutputStream b) throws IOException {
      flush();
      b.writeTo(bytes);
      bytes.flush();
    }
  }

  /** Returns the command line with every subcommand and kvsim's error handling, for tests. */
  public static CommandLine newCommandLine() {
    return withErrorHandling(new CommandLine(new KvSim()));
  }

  /**
   * Returns the command line for {@code args}: when they start with a subcommand's name, a root
   * that holds only that subcommand (Note [One subcommand]); for {@code --version} alone, the root
   * without subcommands; otherwise the whole command.
   */
  static CommandLine newCommandLine(String[] args) {
    if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
      return withErrorHandling(new CommandLine(new OneCommandRoot())); // the version needs no subcommand
    }
    if (args.length > 0) {
      for (Class<?> c : KvSim.class.getAnnotation(Command.class).subcommands()) {
        Command command = c.getAnnotation(Command.class);
        if (command != null && command.name().equals(args[0]) && c != CommandLine.HelpCommand.class) {
          CommandLine root = new CommandLine(new OneCommandRoot());
          root.addSubcommand(new CommandLine(c));
          return withErrorHandling(root);
        }
      }
    }
    return newCommandLine();
  }

  // Note [One subcommand]: picocli builds the model of every subcommand, by reflection over its
  // options, when the root command line is made: a fifth of a short run's wall time. A run names
  // its subcommand first, so main gives the root only that one; the root's name, options and
  // version are the same, so usage lines and messages read as with the whole command. Help over
  // all commands (`kvsim`, `kvsim --help`, `kvsim help X`) still builds the whole command.
  @Command(name = "kvsim", mixinStandardHelpOptions = true, versionProvider = KvSim.Version.class,
      description = "Discrete-event simulator of GPU KV-cache allocators.")
  private static final class OneCommandRoot implements Runnable {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
      spec.commandLine().usage(spec.commandLine().getOut());
    }
  }

  private static CommandLine withErrorHandling(CommandLine cl) {
    cl.setExitCodeExceptionMapper(e -> e instanceof InputException ? EXIT_BAD_INPUT : e instanceof kvsim.gpu.device.GpuUnavailableException ? EXIT_NO_GPU : EXIT_FAILED);
    cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> failed(e, commandLine.getErr()));
    cl.setParameterExceptionHandler(
        (ex, args) -> {
          CommandLine c = ex.getCommandLine();
          PrintWriter err = c.getErr();
          String unknown = UnknownSubcommand.message(ex); // Note [Unknown names list the known ones]
          if (unknown != null) {
            err.println("kvsim: error: " + unknown);
            err.flush();
            return EXIT_BAD_INPUT;
          }
          err.println("kvsim: error: " + ex.getMessage());
          err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for more information.");
          err.flush();
          return EXIT_BAD_INPUT;
        });
    return cl;
  }

  /** Prints the one line for a command that failed with {@code e} and returns the exit status. */
  static int failed(Exception e, PrintWriter err) {
    if (e instanceof InputException) {
      err.println("kvsim: error: " + e.getMessage());
      err.flush();
      return EXIT_BAD_INPUT;
    }
    if (e instanceof kvsim.gpu.device.GpuUnavailableException) {
      err.println("kvsim: error: " + e.getMessage());
      err.flush();
      return EXIT_NO_GPU;
    }
    if (e instanceof kvsim.core.HeapExhaustedException) {
      err.println("kvsim: " + e.getMessage());
      err.flush();
      return EXIT_FAILED;
    }
    if (e instanceof IOException) {
      err.println("kvsim: I/O error: " + e.getMessage());
      err.flush();
      return EXIT_FAILED;
    }
    err.println("kvsim: failed: " + e);
    if (System.getenv("KVSIM_DEBUG") != null) {
      e.printStackTrace(err);
    }
    err.flush();
    return EXIT_FAILED;
  }

  /**
   * Returns the charset picocli writes a standard stream in: the one the system property {@code
   * property} ({@code sun.stdout.encoding}, {@code sun.stderr.encoding}) names, {@code cp65001} as
   * UTF-8, the default charset when it is not set or not available.
   */
  static Charset streamCharset(String property) {
    String encoding = System.getProperty(property);
    if (encoding == null) {
      return Charset.defaultCharset();
    }
    try {
      return Charset.forName("cp65001".equalsIgnoreCase(encoding) ? "UTF-8" : encoding);
    } catch (RuntimeException e) {
      return Charset.defaultCharset();
    }
  }

  /** Reads the version the build wrote into {@code kvsim/version.properties}. */
  public static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"kvsim " + version()};
    }

    /** The version, read once: a JVM's classes do not change under it (a resident server's jar built again stops it). */
    private static final class Read {
      static final String VERSION = read();
    }

    /**
     * Returns the project version, or {@code dev} when run from unpackaged classes. Read once a
     * JVM: reading the resource was about 1 ms of every command a resident server ran.
     */
    public static String version() {
      return Read.VERSION;
    }

    private static String read() {
      try (InputStream in = KvSim.class.getResourceAsStream("/kvsim/version.properties")) {
        if (in == null) {
          return "dev";
        }
        Properties p = new Properties();
        p.load(in);
        return p.getProperty("version", "dev");
      } catch (IOException e) {
        return "dev";
      }
    }
  }
}

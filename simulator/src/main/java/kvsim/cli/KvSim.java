package kvsim.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.util.Properties;
import kvsim.core.InputException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code kvsim} command: the composition root. Exit codes: 0 success, 1 the run failed (an
 * allocator broke its invariants, an I/O error), 2 bad input or usage.
 */
@Command(
    name = "kvsim",
    mixinStandardHelpOptions = true,
    versionProvider = KvSim.Version.class,
    description = "Discrete-event simulator of GPU KV-cache allocators.",
    subcommands = {
      ListCommand.class,
      GenerateCommand.class,
      ReplayCommand.class,
      CompareCommand.class,
      ServingCommand.class,
      CapacityCommand.class,
      ReportCommand.class,
      ReproduceCommand.class,
      BlocksCommand.class,
      ImportCommand.class,
      TorchReplayCommand.class,
      TorchInspectCommand.class,
      CommandLine.HelpCommand.class,
    })
public final class KvSim implements Runnable {
  /** Exit status of a successful run. */
  public static final int EXIT_OK = 0;
  /** Exit status of a run that failed for a reason other than its input. */
  public static final int EXIT_FAILED = 1;
  /** Exit status for bad input or usage. */
  public static final int EXIT_BAD_INPUT = 2;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** Runs the CLI and exits with its status. */
  public static void main(String[] args) {
    int status;
    try {
      status = newCommandLine().execute(args);
    } catch (OutOfMemoryError e) {
      // Outside a run's event loop (which reports the live set itself): still one line, no trace.
      System.err.println("kvsim: out of memory: the Java heap (" + kvsim.core.Bytes.format(Runtime.getRuntime().maxMemory())
          + ") is too small for this command; run it again with a larger heap, e.g. KVSIM_JAVA_OPTS=-Xmx8g ./kvsim ...");
      status = EXIT_FAILED;
    }
    System.exit(status);
  }

  /** Returns the command line with kvsim's error handling, for main and for tests. */
  public static CommandLine newCommandLine() {
    CommandLine cl = new CommandLine(new KvSim());
    cl.setExitCodeExceptionMapper(e -> e instanceof InputException ? EXIT_BAD_INPUT : EXIT_FAILED);
    cl.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> {
          PrintWriter err = commandLine.getErr();
          if (e instanceof InputException) {
            err.println("kvsim: error: " + e.getMessage());
            err.flush();
            return EXIT_BAD_INPUT;
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
        });
    cl.setParameterExceptionHandler(
        (ex, args) -> {
          CommandLine c = ex.getCommandLine();
          PrintWriter err = c.getErr();
          err.println("kvsim: error: " + ex.getMessage());
          err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for more information.");
          err.flush();
          return EXIT_BAD_INPUT;
        });
    return cl;
  }

  /** Reads the version the build wrote into {@code kvsim/version.properties}. */
  public static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"kvsim " + version()};
    }

    /** Returns the project version, or {@code dev} when run from unpackaged classes. */
    public static String version() {
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

package kvsim.testing;

import java.io.PrintWriter;
import java.io.StringWriter;
import kvsim.cli.KvSim;
import picocli.CommandLine;

/**
 * Runs the CLI in-process with captured output, after kcctl's test context: {@code CliRun.of("list")}
 * gives the exit code, stdout and stderr.
 *
 * @param exitCode the command's exit status
 * @param out what it printed on stdout
 * @param err what it printed on stderr
 */
public record CliRun(int exitCode, String out, String err) {

  /** Runs {@code kvsim args...}. */
  public static CliRun of(String... args) {
    CommandLine cl = KvSim.newCommandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new CliRun(code, out.toString(), err.toString());
  }

  /** Returns this run, or fails with everything it printed when the exit status is not 0. */
  public CliRun ok() {
    if (exitCode != 0) {
      throw new AssertionError("exit " + exitCode + "\n--- stdout\n" + out + "\n--- stderr\n" + err);
    }
    return this;
  }
}

package kvsim.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.blocks.BlockScriptRunner;
import kvsim.core.OutputFile;
import kvsim.core.InputException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kvsim blocks SCRIPT.jsonl [-o OUT.jsonl]}: runs a script against one paged block manager
 * and prints one JSON object per operation. With {@code -o} the output goes to a temporary file
 * beside the target that is moved into place only when the whole script succeeded; without it, the
 * output is printed only when the whole script succeeded.
 */
@Command(
    name = "blocks",
    mixinStandardHelpOptions = true,
    description = {
      "Run a JSONL script against one vLLM-style paged block manager and print one JSON object per operation.",
      "Operations: config (first), add, lookup, allocate, admit, append, decode, free, preempt, fork, swap_out,"
          + " swap_in, reset_prefix_cache, state; submit and step run vLLM v1's scheduler one iteration at a time."
          + " Lines starting with # are comments."
    })
final class BlocksCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "SCRIPT.jsonl", description = "the script to run")
  Path script;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "OUT.jsonl",
      description = "write the output here (atomically) instead of standard output")
  Path output;

  @Option(names = "--check", description = "run the block manager's invariant checker after every operation")
  boolean check;

  @Option(names = "--force", description = "replace OUT.jsonl even if it is not a blocks output that kvsim wrote")
  boolean force;

  @Override
  public Integer call() throws IOException {
    return run(script, output, check, force, spec.commandLine().getOut());
  }

  // Note [Blocks without a command line]: picocli's model of a command is built by reflection over
  // its annotations (a class generated at run time for each annotation type), which was a tenth
  // of a 27,200-operation script's run. Arguments of the plain forms, `blocks SCRIPT`, `-o OUT` or
  // `--output OUT`, `--check` and `--force`, each at most once, in any order, are read without it
  // (Note [Plain arguments] on PlainArguments) and the script is run as picocli would run it, with
  // its writers and kvsim's messages (KvSim.failed); anything else goes to picocli.
  /**
   * Runs {@code kvsim blocks} for {@code args} ({@code args[0]} is {@code blocks}) when they are of
   * the plain forms, printing to {@code stdout} and {@code stderr} (the process's streams, in
   * main), and returns the exit status; returns null, having done nothing, for picocli to run them
   * (Note [Blocks without a command line]).
   */
  static Integer runPlain(String[] args, PrintStream stdout, PrintStream stderr) {
    PlainArguments p = PlainArguments.read(args, List.of(List.of("--output", "-o")), List.of(List.of("--check"), List.of("--force")));
    if (p == null) {
      return null;
    }
    Path scriptPath;
    Path outputPath;
    try {
      scriptPath = Path.of(p.positional());
      outputPath = p.value("--output") == null ? null : Path.of(p.value("--output"));
    } catch (InvalidPathException e) {
      return null;
    }
    return PlainArguments.run((out, err) -> run(scriptPath, outputPath, p.flag("--check"), p.flag("--force"), out), stdout, stderr);
  }

  /** Runs the script, printing to {@code out} or writing {@code output}; returns the exit status. */
  private static int run(Path script, Path output, boolean check, boolean force, PrintWriter out) throws IOException {
    String source = script.toString();
    BlockScriptRunner runner = new BlockScriptRunner(source, check);
    if (Files.isDirectory(script)) {
      throw new InputException(source + ": is a folder, not a block script");
    }
    OutputFile target = output == null ? null : OutputFile.of(output, BlockScriptRunner.OUTPUT_KIND, force, List.of(script)).check();
    try (InputStream in = Files.newInputStream(script)) {
      if (output == null) {
        // Printed only once the whole script succeeded.
        ByteArrayOutputStream lines = new ByteArrayOutputStream();
        runner.run(in, lines);
        if (out instanceof KvSim.Stdout stdout && stdout.charset().equals(StandardCharsets.UTF_8)) {
          stdout.writeBytes(lines); // the bytes as they are: 60 ms less for a 13 MB output
        } else {
          out.print(lines.toString(StandardCharsets.UTF_8));
          out.flush();
        }
      } else {
        target.write(file -> runner.run(in, file));
      }
    } catch (NoSuchFileException e) {
      throw new InputException(source + ": no such file");
    }
    return KvSim.EXIT_OK;
  }
}

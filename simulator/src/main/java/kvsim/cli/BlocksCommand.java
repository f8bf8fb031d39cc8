package kvsim.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.blocks.BlockScriptRunner;
import kvsim.core.AtomicFiles;
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

  @Override
  public Integer call() throws IOException {
    String source = script.toString();
    BlockScriptRunner runner = new BlockScriptRunner(source, check);
    if (Files.isDirectory(script)) {
      throw new InputException(source + ": is a folder, not a block script");
    }
    try (BufferedReader in = Files.newBufferedReader(script, StandardCharsets.UTF_8)) {
      if (output == null) {
        List<String> lines = new ArrayList<>();
        runner.run(in, lines::add);
        PrintWriter out = spec.commandLine().getOut();
        for (String line : lines) {
          out.println(line);
        }
        out.flush();
      } else {
        writeAtomically(runner, in);
      }
    } catch (NoSuchFileException e) {
      throw new InputException(source + ": no such file");
    } catch (java.nio.charset.MalformedInputException e) {
      throw new InputException(source + ": not UTF-8 text");
    }
    return KvSim.EXIT_OK;
  }

  private void writeAtomically(BlockScriptRunner runner, BufferedReader in) throws IOException {
    AtomicFiles.write(output, out -> {
      Writer w = new OutputStreamWriter(out, StandardCharsets.UTF_8);
      runner.run(
          in,
          line -> {
            w.write(line);
            w.write('\n');
          });
      w.flush();
    });
  }
}

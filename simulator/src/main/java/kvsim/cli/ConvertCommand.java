package kvsim.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.trace.BinaryTraceFormat;
import kvsim.trace.EventSource;
import kvsim.trace.L1Format;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;
import kvsim.trace.RequestTraceWriter;
import kvsim.trace.RequestWriter;
import kvsim.trace.TraceEvent;
import kvsim.trace.TraceFiles;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kvsim convert IN OUT}: rewrites a kvsim trace, L1 or request, between its JSONL and binary
 * forms ({@code kvsim.trace.BinaryTraceFormat}). The input's form and kind are read from its first
 * bytes, the output's form from its name (Note [Binary trace files]); every record passes the
 * reader's checks on the way, and the output is written whole or not at all (Note [Output rule] on
 * {@code core.OutputFile}).
 */
@Command(
    name = "convert",
    mixinStandardHelpOptions = true,
    description = {
      "Convert a kvsim trace (L1 or request) between JSONL and binary, losslessly: OUT ending in .kvt is a binary L1 trace, in .kvr a binary request trace, anything else JSONL. "
          + "The input's form is recognised by its first bytes. Every command that reads a trace reads either form; binary ones read several times faster."
    })
final class ConvertCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "IN", description = "An L1 trace or a request trace, JSONL or binary.")
  Path input;

  @Parameters(index = "1", paramLabel = "OUT", description = "The trace to write: .kvt (binary L1), .kvr (binary requests) or JSONL (any other name).")
  Path output;

  @Option(names = "--force", description = "Replace OUT even if it is not a trace of this kind that kvsim wrote.")
  boolean force;

  @Override
  public Integer call() throws IOException {
    if (Files.isDirectory(input)) {
      throw new InputException(input + ": is a folder, not a trace file");
    }
    if (!Files.exists(input)) {
      throw new InputException(input + ": no such file");
    }
    String format = TraceFiles.formatOf(input);
    long written;
    String what;
    if (format.equals(L1Format.NAME)) {
      BinaryTraceFormat.checkL1Output(output);
      OutputFile target = OutputFile.of(output, L1TraceWriter.OUTPUT_KIND, force, List.of(input)).check();
      long[] n = new long[1];
      try (EventSource source = TraceFiles.openL1(input)) {
        target.write(out -> {
          L1TraceWriter w = L1TraceWriter.forFile(output, out, TraceFiles.header(source));
          TraceEvent e;
          while ((e = source.next()) != null) {
            w.write(e);
          }
          w.finish();
          n[0] = w.eventsWritten();
        });
      }
      written = n[0];
      what = "events, " + (BinaryTraceFormat.writesL1Binary(output) ? "binary" : "JSONL") + " L1 trace";
    } else {
      BinaryTraceFormat.checkRequestOutput(output);
      OutputFile target = OutputFile.of(output, RequestTraceWriter.OUTPUT_KIND, force, List.of(input)).check();
      long[] n = new long[1];
      try (RequestSource source = TraceFiles.openRequests(input)) {
        target.write(out -> {
          RequestWriter w = RequestTraceWriter.forFile(output, out, TraceFiles.header(source), source.hashBlockTokens());
          Request r;
          while ((r = source.next()) != null) {
            w.write(r);
          }
          w.finish();
          n[0] = w.requestsWritten();
        });
      }
      written = n[0];
      what = "requests, " + (BinaryTraceFormat.writesRequestsBinary(output) ? "binary" : "JSONL") + " request trace";
    }
    spec.commandLine().getOut().printf("wrote %d %s, to %s (%d bytes)%n", written, what, output, Files.size(output));
    spec.commandLine().getOut().flush();
    return KvSim.EXIT_OK;
  }
}

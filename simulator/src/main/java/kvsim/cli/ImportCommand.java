package kvsim.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import kvsim.core.OutputFile;
import kvsim.trace.BinaryTraceFormat;
import kvsim.trace.L1TraceWriter;
import kvsim.registry.WorkloadRegistry;
import kvsim.torch.SnapshotImporter;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import kvsim.trace.ImportedRequestSource;
import kvsim.trace.Request;
import kvsim.trace.RequestFiles;
import kvsim.trace.RequestSource;
import kvsim.trace.RequestTraceWriter;
import kvsim.trace.RequestWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim import …}: turns foreign recordings into kvsim L1 traces and request traces. */
@Command(
    name = "import",
    mixinStandardHelpOptions = true,
    description = "Convert recordings of other tools into kvsim traces: PyTorch snapshots into L1 traces (torch-snapshot), LLM request logs into request traces (azure, mooncake, lengths, burstgpt).",
    subcommands = {ImportCommand.TorchSnapshotImport.class, ImportCommand.Azure.class, ImportCommand.Mooncake.class, ImportCommand.Lengths.class, ImportCommand.BurstGpt.class})
final class ImportCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    err.println("kvsim: error: missing what to import (torch-snapshot, azure, mooncake, lengths, burstgpt)");
    spec.commandLine().usage(err);
    err.flush();
    return KvSim.EXIT_BAD_INPUT;
  }

  /** {@code kvsim import torch-snapshot FILE -o trace.jsonl}. */
  @Command(
      name = "torch-snapshot",
      mixinStandardHelpOptions = true,
      description = {
        "Turn the device_traces of a PyTorch _dump_snapshot pickle into a kvsim L1 trace: alloc and free_completed become alloc/free events (requested size, stream, recorded address in addr, tag temp, not splittable); blocks live when recording began are allocated first; segment events and OOMs are kept as annotate events."
      })
  static final class TorchSnapshotImport implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE", description = "A _dump_snapshot pickle with allocation history.")
    Path file;

    @Option(names = {"-o", "--output"}, required = true, paramLabel = "TRACE", description = "The L1 trace to write: JSONL, or binary when TRACE ends in .kvt.")
    Path output;

    @Option(names = "--device", paramLabel = "N", description = "CUDA device to import (default: the only device with history).")
    int device = -1;

    @Option(names = "--force", description = "Replace TRACE even if it is not an L1 trace that kvsim wrote.")
    boolean force;

    @Override
    public Integer call() throws Exception {
      BinaryTraceFormat.checkL1Output(output);
      OutputFile target = OutputFile.of(output, L1TraceWriter.OUTPUT_KIND, force, List.of(file)).check();
      TorchSnapshot snapshot = SnapshotReader.read(file);
      int d = SnapshotImporter.chooseDevice(snapshot, device);
      SnapshotImporter.Summary[] summary = new SnapshotImporter.Summary[1];
      target.write(out -> summary[0] = SnapshotImporter.write(snapshot, d, out, BinaryTraceFormat.writesL1Binary(output)));
      PrintWriter w = spec.commandLine().getOut();
      SnapshotImporter.Summary s = summary[0];
      w.printf("wrote %s: device %d, %d allocations live at the start, %d allocations, %d frees, %d segment/oom annotations%n",
          output, s.device(), s.preludeAllocations(), s.allocations(), s.frees(), s.annotations());
      w.flush();
      return KvSim.EXIT_OK;
    }
  }

  /** Options every request-log importer takes. */
  static final class RequestImportOptions {
    @Option(names = {"-o", "--output"}, required = true, paramLabel = "TRACE", description = "The request trace to write: JSONL, or binary when TRACE ends in .kvr.")
    Path output;

    @Option(names = "--from", paramLabel = "S", description = "Keep requests from this second of the trace's own time (default: 0); times start at it.")
    String from;

    @Option(names = "--to", paramLabel = "S", description = "Keep requests before this second of the trace's own time (default: the end)."
        + " A window that keeps no request is an error (exit 2, nothing written).")
    String to;

    @Option(names = "--speedup", paramLabel = "X", description = "Divide the times by X (default: 1).")
    String speedup;

    @Option(names = "--spread", paramLabel = "S", description = "Spread rows that share one time evenly over S seconds after it (Mooncake's 3 s ticks: 3; default 0, off).")
    String spread;

    @Option(names = "--zero-output", paramLabel = "RULE", description = "Rows with 0 output tokens: error (default), one (run with 1 token, as vLLM always samples one) or drop.")
    String zeroOutput;

    @Option(names = "--force", description = "Replace TRACE even if it is not a request trace that kvsim wrote.")
    boolean force;

    Map<String, String> params() {
      Map<String, String> p = new LinkedHashMap<>();
      put(p, "from", from);
      put(p, "to", to);
      put(p, "speedup", speedup);
      put(p, "spread", spread);
      put(p, "zero-output", zeroOutput);
      return p;
    }

    static void put(Map<String, String> p, String key, String value) {
      if (value != null) {
        p.put(key, value);
      }
    }
  }

  static int writeRequests(CommandLine.Model.CommandSpec spec, String format, Path file, Map<String, String> params, RequestImportOptions options)
      throws IOException {
    Path output = options.output;
    BinaryTraceFormat.checkRequestOutput(output);
    OutputFile target = OutputFile.of(output, RequestTraceWriter.OUTPUT_KIND, options.force, List.of(file)).check();
    long[] rows = new long[2];
    long written = writeRequestTrace(WorkloadRegistry.resolveImport(format, file, params), target, source -> {
      if (source instanceof ImportedRequestSource imported) {
        rows[0] = imported.rowsRead();
        rows[1] = imported.zeroOutputRows();
      }
    });
    PrintWriter o = spec.commandLine().getOut();
    o.printf("wrote %d requests to %s (%d rows read; %d with 0 output tokens)%n", written, output, rows[0], rows[1]);
    o.flush();
    return KvSim.EXIT_OK;
  }

  /** Writes every request of {@code w} as a request trace at {@code output}: {@link RequestFiles#writeTrace}. */
  static long writeRequestTrace(WorkloadRegistry.RequestWorkload w, OutputFile output, Consumer<RequestSource> afterward) throws IOException {
    try (RequestSource source = w.open()) {
      return RequestFiles.writeTrace(source, output, afterward);
    }
  }

  /** Writes every request of {@code w} at {@code output} in the format {@code format} opens: {@link RequestFiles#write}. */
  static long writeRequests(WorkloadRegistry.RequestWorkload w, OutputFile output, RequestWriter.Factory format, Consumer<RequestSource> afterward)
      throws IOException {
    try (RequestSource source = w.open()) {
      return RequestFiles.write(source, output, format, afterward);
    }
  }

  /** {@code kvsim import azure FILE -o trace.jsonl}. */
  @Command(
      name = "azure",
      mixinStandardHelpOptions = true,
      description = {"Turn an Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens; the 2023 files and the 2024 week-long files) into a kvsim request trace: ids are row numbers from 0, times in ns from the first row's timestamp."})
  static final class Azure implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin RequestImportOptions options;

    @Parameters(index = "0", paramLabel = "FILE", description = "The Azure trace CSV.")
    Path file;

    @Override
    public Integer call() throws IOException {
      return writeRequests(spec, "azure", file, options.params(), options);
    }
  }

  /** {@code kvsim import mooncake FILE -o trace.jsonl}. */
  @Command(
      name = "mooncake",
      mixinStandardHelpOptions = true,
      description = {"Turn a Mooncake trace JSONL (timestamp in ms, input_length, output_length, hash_ids of 512-token blocks) into a kvsim request trace with hash_block_tokens 512."})
  static final class Mooncake implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin RequestImportOptions options;

    @Parameters(index = "0", paramLabel = "FILE", description = "The Mooncake trace JSONL.")
    Path file;

    @Override
    public Integer call() throws IOException {
      return writeRequests(spec, "mooncake", file, options.params(), options);
    }
  }

  /** {@code kvsim import lengths FILE --rate R -o trace.jsonl}. */
  @Command(
      name = "lengths",
      mixinStandardHelpOptions = true,
      description = {"Turn a length table CSV (columns num_prefill_tokens and num_decode_tokens, others ignored; e.g. ShareGPT statistics) into a kvsim request trace, one request per row in file order, with seeded Poisson arrivals."})
  static final class Lengths implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin RequestImportOptions options;

    @Parameters(index = "0", paramLabel = "FILE", description = "The length table CSV.")
    Path file;

    @Option(names = "--rate", required = true, paramLabel = "REQ_PER_S", description = "Poisson arrival rate.")
    String rate;

    @Option(names = "--seed", paramLabel = "N", description = "Random seed of the arrivals (default: 1).")
    String seed;

    @Override
    public Integer call() throws IOException {
      Map<String, String> p = options.params();
      p.put("rate", rate);
      RequestImportOptions.put(p, "seed", seed);
      return writeRequests(spec, "lengths", file, p, options);
    }
  }

  /** {@code kvsim import burstgpt FILE [--model M] [--log-type T] -o trace.jsonl}. */
  @Command(
      name = "burstgpt",
      mixinStandardHelpOptions = true,
      description = {"Turn a BurstGPT trace CSV (Timestamp in s from the trace's start, Model, Request tokens, Response tokens, Total tokens, Log Type) "
          + "into a kvsim request trace: ids are row numbers from 0, times the Timestamp in ns. Total tokens must equal request + response tokens. "
          + "Failed requests have 0 response tokens: see --zero-output. A filter that matches no row of the file is an error."})
  static final class BurstGpt implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin RequestImportOptions options;

    @Parameters(index = "0", paramLabel = "FILE", description = "The BurstGPT trace CSV.")
    Path file;

    @Option(names = "--model", paramLabel = "NAME", description = "Keep only rows whose Model is exactly NAME (ChatGPT, GPT-4; default: all).")
    String model;

    @Option(names = "--log-type", paramLabel = "TYPE", description = "Keep only rows whose Log Type is exactly TYPE ('Conversation log', 'API log'; default: all).")
    String logType;

    @Override
    public Integer call() throws IOException {
      Map<String, String> p = options.params();
      RequestImportOptions.put(p, "model", model);
      RequestImportOptions.put(p, "log-type", logType);
      return writeRequests(spec, "burstgpt", file, p, options);
    }
  }
}

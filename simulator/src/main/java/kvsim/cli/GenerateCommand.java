package kvsim.cli;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OutputFile;
import kvsim.devicemodel.DeviceSpec;
import kvsim.registry.WorkloadRegistry;
import kvsim.trace.BinaryTraceFormat;
import kvsim.trace.EventSource;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.TraceEvent;
import kvsim.workload.ChurnGenerator;
import kvsim.workload.KvGenerator;
import kvsim.workload.RequestGenerator;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import kvsim.core.InputException;
import kvsim.trace.AzureCsvWriter;
import kvsim.trace.RequestTraceWriter;
import kvsim.trace.RequestWriter;
import picocli.CommandLine.Option;

/** {@code kvsim generate churn|kv}: writes a generator's events as an L1 trace file. */
@Command(
    name = "generate",
    mixinStandardHelpOptions = true,
    description = {"Write a synthetic workload: allocator events as an L1 trace (churn, kv; every allocation is taken as served, open loop), or LLM requests as a request trace (requests). Both are JSONL, or binary for an output named .kvt (L1) or .kvr (requests)."},
    subcommands = {GenerateCommand.Churn.class, GenerateCommand.Kv.class, GenerateCommand.Requests.class})
final class GenerateCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "name a generator: churn, kv or requests");
  }

  /** Options every generator takes. */
  static final class Common {
    @Option(names = {"-o", "--output"}, required = true, paramLabel = "FILE", description = "Trace file to write: JSONL, or binary when FILE ends in .kvt (L1 trace) or .kvr (request trace).")
    Path output;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "" + ChurnGenerator.DEFAULT_SEED, description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--force", description = "Replace FILE even if it is not a trace of this kind that kvsim wrote.")
    boolean force;

    /** The output, checked before anything is generated (Note [Output rule] on {@code core.OutputFile}). */
    OutputFile output(OutputFile.Kind kind) {
      return OutputFile.of(output, kind, force, List.of()).check();
    }
  }

  static int write(CommandLine.Model.CommandSpec spec, String generator, Map<String, String> params, Common common, ModelPreset model, DeviceSpec device)
      throws IOException {
    params.put("seed", Long.toString(common.seed));
    WorkloadRegistry.Workload w = WorkloadRegistry.resolve(generator, params);
    BinaryTraceFormat.checkL1Output(common.output);
    OutputFile file = common.output(L1TraceWriter.OUTPUT_KIND);
    long[] count = new long[1];
    try (EventSource source = w.open(model, device)) {
      Map<String, Object> header = new LinkedHashMap<>(source.describe());
      file.write(out -> {
        L1TraceWriter writer = L1TraceWriter.forFile(common.output, out, header);
        TraceEvent e;
        while ((e = source.next()) != null) {
          writer.write(e);
        }
        writer.finish();
        count[0] = writer.eventsWritten();
      });
    }
    spec.commandLine().getOut().println("wrote " + count[0] + " events to " + common.output);
    spec.commandLine().getOut().flush();
    return KvSim.EXIT_OK;
  }

  /** {@code kvsim generate churn}. */
  @Command(name = "churn", mixinStandardHelpOptions = true, description = "The random churn workload of the slab-allocator literature.")
  static final class Churn implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(names = "--ops", defaultValue = "" + ChurnGenerator.DEFAULT_OPS, description = "Operations (default: ${DEFAULT-VALUE}).")
    long ops;

    @Option(names = "--free-probability", defaultValue = "" + ChurnGenerator.DEFAULT_FREE_PROBABILITY, description = "Probability of a free when something is live (default: ${DEFAULT-VALUE}).")
    double freeProbability;

    @Option(names = "--min-size-mib", defaultValue = "" + ChurnGenerator.DEFAULT_MIN_SIZE_MIB, description = "Smallest allocation in MiB (default: ${DEFAULT-VALUE}).")
    long minSizeMiB;

    @Option(names = "--max-size-mib", defaultValue = "" + ChurnGenerator.DEFAULT_MAX_SIZE_MIB, description = "Largest allocation in MiB (default: ${DEFAULT-VALUE}).")
    long maxSizeMiB;

    @Override
    public Integer call() throws IOException {
      Map<String, String> p = new LinkedHashMap<>();
      p.put("ops", Long.toString(ops));
      p.put("free-probability", Double.toString(freeProbability));
      p.put("min-size-mib", Long.toString(minSizeMiB));
      p.put("max-size-mib", Long.toString(maxSizeMiB));
      return write(spec, "churn", p, common, ModelPreset.defaultModel(), DeviceSpec.defaultDevice());
    }
  }

  /** {@code kvsim generate kv}. */
  @Command(name = "kv", mixinStandardHelpOptions = true, description = "LLM requests with KV and activation buffers, lengths fitted to public serving traces.")
  static final class Kv implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(names = "--preset", defaultValue = KvGenerator.DEFAULT_PRESET, description = "Length preset: ${COMPLETION-CANDIDATES} (see `kvsim list`; default: ${DEFAULT-VALUE}).", completionCandidates = PresetNames.class)
    String preset;

    @Option(names = "--requests", defaultValue = "" + KvGenerator.DEFAULT_REQUESTS, description = "Requests (default: ${DEFAULT-VALUE}).")
    long requests;

    @Option(names = "--rate", paramLabel = "REQ_PER_S", description = "Arrival rate; default: the preset's default rate (`kvsim list`).")
    Double rate;

    @Option(names = "--decode-step-ms", description = "Time per output token; default: the bandwidth roofline of model and device.")
    Double decodeStepMs;

    @Option(names = "--model", defaultValue = ModelPreset.DEFAULT_NAME, description = "Model preset (default: ${DEFAULT-VALUE}).")
    String model;

    @Option(names = "--device", defaultValue = DeviceSpec.DEFAULT_NAME, description = "Device preset or size (default: ${DEFAULT-VALUE}).")
    String device;

    @Override
    public Integer call() throws IOException {
      Map<String, String> p = new LinkedHashMap<>();
      p.put("preset", preset);
      p.put("requests", Long.toString(requests));
      if (rate != null) {
        p.put("rate", Double.toString(rate));
      }
      if (decodeStepMs != null) {
        p.put("decode-step-ms", Double.toString(decodeStepMs));
      }
      ModelPreset m;
      DeviceSpec d;
      try {
        m = ModelPreset.parse(model);
        d = DeviceSpec.parse(device);
      } catch (IllegalArgumentException e) {
        throw new InputException(e.getMessage());
      }
      return write(spec, "kv", p, common, m, d);
    }
  }

  /** {@code kvsim generate requests}. */
  @Command(name = "requests", mixinStandardHelpOptions = true, description = "LLM requests with Poisson arrivals, lengths fitted to public serving traces, as a request trace.")
  static final class Requests implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @CommandLine.Mixin Common common;

    @Option(names = "--preset", defaultValue = RequestGenerator.DEFAULT_PRESET, description = "Length preset: ${COMPLETION-CANDIDATES} (see `kvsim list`; default: ${DEFAULT-VALUE}).", completionCandidates = PresetNames.class)
    String preset;

    @Option(names = "--count", defaultValue = "" + RequestGenerator.DEFAULT_COUNT, description = "Requests (default: ${DEFAULT-VALUE}).")
    long count;

    @Option(names = "--rate", paramLabel = "REQ_PER_S", description = "Arrival rate; default: the preset's default rate (`kvsim list`).")
    Double rate;

    @Option(names = "--n", paramLabel = "N", description = "Parallel samples per request (default 1).")
    Integer samples;

    @Option(names = "--beam", paramLabel = "WIDTH", description = "Beam width per request (default 1: no beam search); not with --n.")
    Integer beamWidth;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "kvsim", description = "kvsim (a request trace, default) or azure-csv "
        + "(an Azure LLM inference trace of the 2024 week-long shape: TIMESTAMP with microseconds and +00:00 from 2024-05-10 00:00:00, "
        + "ContextTokens, GeneratedTokens; what `kvsim import azure` reads).")
    String format;

    @Override
    public Integer call() throws IOException {
      Map<String, String> p = new LinkedHashMap<>();
      p.put("preset", preset);
      p.put("count", Long.toString(count));
      if (rate != null) {
        p.put("rate", Double.toString(rate));
      }
      p.put("seed", Long.toString(common.seed));
      if (samples != null) {
        p.put("n", Integer.toString(samples));
      }
      if (beamWidth != null) {
        p.put("beam", Integer.toString(beamWidth));
      }
      if ((samples != null || beamWidth != null) && format.equals("azure-csv")) {
        throw new InputException("--n and --beam: an Azure CSV has no column for them; use --format kvsim");
      }
      RequestWriter.Factory writer = switch (format) {
        case "kvsim" -> (out, source) -> RequestTraceWriter.forFile(common.output, out, source.describe(), source.hashBlockTokens());
        case "azure-csv" -> (out, source) -> new AzureCsvWriter(out, AzureCsvWriter.DEFAULT_START);
        default -> throw new InputException("--format: expected kvsim or azure-csv, got '" + format + "'");
      };
      BinaryTraceFormat.checkRequestOutput(common.output);
      if (format.equals("azure-csv") && BinaryTraceFormat.writesRequestsBinary(common.output)) {
        throw new InputException(common.output + ": .kvr names a binary request trace, and --format azure-csv writes a CSV; use --format kvsim or another name");
      }
      OutputFile file = common.output(format.equals("kvsim") ? RequestTraceWriter.OUTPUT_KIND : AzureCsvWriter.OUTPUT_KIND);
      long written = ImportCommand.writeRequests(WorkloadRegistry.resolveRequests("requests", p), file, writer, source -> {});
      spec.commandLine().getOut().println("wrote " + written + " requests to " + common.output);
      spec.commandLine().getOut().flush();
      return KvSim.EXIT_OK;
    }
  }

  /** The length presets' names, for the help of {@code --preset}. */
  static final class PresetNames implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return kvsim.workload.LengthPreset.presets().keySet().iterator();
    }
  }
}

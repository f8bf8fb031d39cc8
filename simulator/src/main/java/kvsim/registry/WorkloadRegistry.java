package kvsim.registry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.devicemodel.DeviceSpec;
import kvsim.trace.AzureTraceReader;
import kvsim.trace.BurstGptTraceReader;
import kvsim.trace.EventSource;
import kvsim.trace.LengthTableReader;
import kvsim.trace.MooncakeTraceReader;
import kvsim.trace.RequestSource;
import kvsim.trace.TraceFiles;
import kvsim.trace.SpeedupRequestSource;
import kvsim.workload.ChurnGenerator;
import kvsim.workload.KvGenerator;
import kvsim.workload.RequestGenerator;

/**
 * Names the workload sources: the L1 generators ({@code churn}, {@code kv}) and L1 trace files,
 * and the request generator ({@code requests}), request trace files and importers of foreign request
 * logs ({@code azure}, {@code mooncake}, {@code lengths}, {@code burstgpt}) of serving-level runs. A workload is
 * written {@code NAME[:key=value,...]} for a generator, {@code NAME:PATH[,key=value,...]} for an
 * importer, or as a path to a file.
 */
public final class WorkloadRegistry {

  /** One generator: its name and a one-line description for {@code kvsim list}. */
  public record Generator(String name, String description) {}

  private static final Map<String, Generator> GENERATORS = new LinkedHashMap<>();

  static {
    GENERATORS.put("churn", new Generator("churn", "random alloc/free churn of 1-256 MiB, the slab literature's workload (ops, free-probability, min-size-mib, max-size-mib, seed)"));
    GENERATORS.put("kv", new Generator("kv", "Poisson LLM requests with KV and activation buffers, lengths fitted to public traces (preset, requests, rate, decode-step-ms, seed)"));
  }

  private static final Map<String, Generator> REQUEST_GENERATORS = new LinkedHashMap<>();

  static {
    REQUEST_GENERATORS.put("requests", new Generator("requests",
        "Poisson LLM requests, lengths fitted to public traces, for serving-level runs (preset, rate, count, seed)"));
  }

  private static final Map<String, Generator> REQUEST_IMPORTERS = new LinkedHashMap<>();

  static {
    REQUEST_IMPORTERS.put("azure", new Generator("azure",
        "an Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens; 2023 and 2024 files): azure:PATH[,from=S,to=S,speedup=X,spread=S,zero-output=error|one|drop]"));
    REQUEST_IMPORTERS.put("mooncake", new Generator("mooncake",
        "a Mooncake trace JSONL (timestamp ms, input_length, output_length, hash_ids of 512 tokens): mooncake:PATH[,from=S,to=S,speedup=X,spread=S,zero-output=…]; spread=3 evens out its 3 s ticks"));
    REQUEST_IMPORTERS.put("lengths", new Generator("lengths",
        "a length table CSV (num_prefill_tokens, num_decode_tokens; e.g. ShareGPT) with seeded Poisson arrivals, one request per row: lengths:PATH,rate=R[,seed=N,from=S,to=S,speedup=X,spread=S,zero-output=…]"));
    REQUEST_IMPORTERS.put("burstgpt", new Generator("burstgpt",
        "a BurstGPT trace CSV (Timestamp s, Model, Request tokens, Response tokens, Total tokens, Log Type), filtered exactly by model and log type: "
            + "burstgpt:PATH[,model=ChatGPT|GPT-4,log-type=Conversation log|API log,from=S,to=S,speedup=X,spread=S,zero-output=…]"));
  }

  private WorkloadRegistry() {}

  /** Returns the importers of foreign request logs, usable as request workloads {@code NAME:PATH[,key=value,...]}. */
  public static Map<String, Generator> requestImporters() {
    return java.util.Collections.unmodifiableMap(REQUEST_IMPORTERS);
  }

  /** Returns the L1 generators in a stable order. */
  public static Map<String, Generator> generators() {
    return java.util.Collections.unmodifiableMap(GENERATORS);
  }

  /** Returns the request generators in a stable order. */
  public static Map<String, Generator> requestGenerators() {
    return java.util.Collections.unmodifiableMap(REQUEST_GENERATORS);
  }

  /**
   * A resolved workload that can be opened any number of times, giving the same events each time
   * (one fresh source per allocator run).
   *
   * @param spec the workload as written
   * @param generator the generator name, or null for a trace file
   * @param params generator parameters (seed included), empty for a file
   * @param file the trace file, or null
   * @param header the trace file's header fields, empty for a generator
   */
  public record Workload(String spec, String generator, Map<String, String> params, Path file, Map<String, Object> header) {
    /** Returns whether this workload is a generator (and so takes seeds). */
    public boolean isGenerator() {
      return generator != null;
    }

    /** Returns the same workload with another seed. */
    public Workload withSeed(long seed) {
      if (!isGenerator()) {
        throw new InputException(spec + ": seeds apply to generators, not to trace files");
      }
      Map<String, String> p = new LinkedHashMap<>(params);
      p.put("seed", Long.toString(seed));
      return new Workload(spec, generator, p, null, Map.of());
    }

    /** Opens a fresh source. */
    public EventSource open(ModelPreset model, DeviceSpec device) throws IOException {
      if (file != null) {
        return TraceFiles.openL1(file);
      }
      OptionMap options = new OptionMap("generator " + generator, params);
      return switch (generator) {
        case "churn" -> new ChurnGenerator(options);
        case "kv" -> new KvGenerator(options, model, device);
        default -> throw new IllegalStateException(generator);
      };
    }
  }

  /** Resolves a workload written as a generator spec or a trace path. */
  public static Workload resolve(String spec, Map<String, String> extraParams) {
    int colon = spec.indexOf(':');
    String head = colon < 0 ? spec : spec.substring(0, colon);
    if (REQUEST_GENERATORS.containsKey(head)) {
      throw new InputException(spec + ": " + head + " generates LLM requests for serving-level runs, not allocator events (L1 generators: "
          + String.join(", ", GENERATORS.keySet()) + ")");
    }
    if (GENERATORS.containsKey(head)) {
      Map<String, String> params = OptionMap.parsePairs("generator " + head, colon < 0 ? "" : spec.substring(colon + 1));
      for (Map.Entry<String, String> e : extraParams.entrySet()) {
        params.putIfAbsent(e.getKey(), e.getValue());
      }
      Workload w = new Workload(spec, head, params, null, Map.of());
      // Validate the parameters now, so a typo fails before any run starts.
      try (EventSource probe = w.open(ModelPreset.defaultModel(), DeviceSpec.defaultDevice())) {
        return w;
      } catch (IOException e) {
        throw new InputException(spec + ": " + e.getMessage());
      }
    }
    Path file = Path.of(spec);
    if (Files.isDirectory(file)) {
      throw new InputException(spec + ": is a folder, not a trace file (expected an L1 trace .jsonl, a .yaml spec or a generator spec)");
    }
    if (Files.isRegularFile(file)) {
      if (!extraParams.isEmpty()) {
        throw new InputException(spec + ": generator parameters " + extraParams.keySet() + " do not apply to a trace file");
      }
      // Read the header now: a file that is no trace fails before anything runs, and the run can
      // use the model and device the trace was written for.
      try {
        return new Workload(spec, null, Map.of(), file, TraceFiles.l1Header(file));
      } catch (IOException e) {
        throw new InputException(spec + ": cannot read: " + e.getMessage());
      }
    }
    throw new InputException(
        spec + ": no such trace file, and not a generator (generators: " + String.join(", ", GENERATORS.keySet()) + ")");
  }

  /**
   * A resolved request workload that can be opened any number of times, giving the same requests
   * each time.
   *
   * @param spec the workload as written
   * @param generator the generator or importer name, or null for a request trace file
   * @param params generator or importer parameters (seed included); for a request trace file empty,
   *     or only {@code speedup} (its times divided by that, as a capacity probe runs a trace)
   * @param file the request trace file or the imported file, or null for a generator
   */
  public record RequestWorkload(String spec, String generator, Map<String, String> params, Path file) {
    /** Opens a fresh source. */
    public RequestSource open() throws IOException {
      if (generator == null) {
        RequestSource trace = TraceFiles.openRequests(file);
        String speedup = params.get("speedup");
        return speedup == null ? trace : new SpeedupRequestSource(trace, Double.parseDouble(speedup));
      }
      OptionMap options = new OptionMap((REQUEST_IMPORTERS.containsKey(generator) ? "import " : "generator ") + generator, params);
      return switch (generator) {
        case "requests" -> new RequestGenerator(options);
        case "azure" -> new AzureTraceReader(file, options);
        case "mooncake" -> new MooncakeTraceReader(file, options);
        case "lengths" -> new LengthTableReader(file, options);
        case "burstgpt" -> new BurstGptTraceReader(file, options);
        default -> throw new IllegalStateException(generator);
      };
    }
  }

  /**
   * Resolves an importer of a foreign request log: {@code format} one of {@link #requestImporters()},
   * {@code file} the log, {@code params} its options. Opens it once, so a bad option or a missing
   * file fails before anything runs (the rows are checked as they are read).
   */
  public static RequestWorkload resolveImport(String format, Path file, Map<String, String> params) {
    if (!REQUEST_IMPORTERS.containsKey(format)) {
      throw new InputException(format + ": not a request importer (importers: " + String.join(", ", REQUEST_IMPORTERS.keySet()) + ")");
    }
    RequestWorkload w = new RequestWorkload(format + ":" + file, format, new LinkedHashMap<>(params), file);
    try (RequestSource probe = w.open()) {
      return w;
    } catch (IOException e) {
      throw new InputException(file + ": cannot read: " + e.getMessage());
    }
  }

  /**
   * Splits the part after {@code NAME:} of an importer spec into the path and its options: trailing
   * {@code ,key=value} segments (a key of letters and '-') are options, the rest is the path, so a
   * path may hold ':' and ',' but not a ',' followed by {@code key=}.
   */
  static Map.Entry<String, Map<String, String>> splitImportSpec(String name, String rest) {
    String path = rest;
    java.util.ArrayDeque<String> pairs = new java.util.ArrayDeque<>();
    java.util.regex.Pattern option = java.util.regex.Pattern.compile(",([a-z][a-z-]*=[^,]*)$");
    java.util.regex.Matcher m;
    while ((m = option.matcher(path)).find()) {
      pairs.addFirst(m.group(1));
      path = path.substring(0, m.start());
    }
    if (path.isEmpty()) {
      throw new InputException(name + ": expected " + name + ":PATH[,key=value,...], got no path");
    }
    return Map.entry(path, OptionMap.parsePairs("import " + name, String.join(",", pairs)));
  }

  /** Resolves a request workload written as a generator spec or a request trace path. */
  public static RequestWorkload resolveRequests(String spec, Map<String, String> extraParams) {
    int colon = spec.indexOf(':');
    String head = colon < 0 ? spec : spec.substring(0, colon);
    if (REQUEST_IMPORTERS.containsKey(head) && !Files.exists(Path.of(spec))) {
      Map.Entry<String, Map<String, String>> split = splitImportSpec(head, colon < 0 ? "" : spec.substring(colon + 1));
      Map<String, String> params = new LinkedHashMap<>(split.getValue());
      extraParams.forEach(params::putIfAbsent);
      RequestWorkload w = resolveImport(head, Path.of(split.getKey()), params);
      return new RequestWorkload(spec, w.generator(), w.params(), w.file());
    }
    if (REQUEST_GENERATORS.containsKey(head)) {
      Map<String, String> params = OptionMap.parsePairs("generator " + head, colon < 0 ? "" : spec.substring(colon + 1));
      extraParams.forEach(params::putIfAbsent);
      RequestWorkload w = new RequestWorkload(spec, head, params, null);
      // Validate the parameters now, so a typo fails before any run starts.
      try (RequestSource probe = w.open()) {
        return w;
      } catch (IOException e) {
        throw new InputException(spec + ": " + e.getMessage());
      }
    }
    if (GENERATORS.containsKey(head)) {
      throw new InputException(spec + ": " + head + " generates allocator events, not LLM requests (request generators: "
          + String.join(", ", REQUEST_GENERATORS.keySet()) + ")");
    }
    Path file = Path.of(spec);
    if (Files.isRegularFile(file)) {
      if (!extraParams.isEmpty()) {
        throw new InputException(spec + ": generator parameters " + extraParams.keySet() + " do not apply to a request trace file");
      }
      try (RequestSource probe = TraceFiles.openRequests(file)) {
        return new RequestWorkload(spec, null, Map.of(), file);
      } catch (IOException e) {
        throw new InputException(spec + ": cannot read: " + e.getMessage());
      }
    }
    if (Files.isDirectory(file)) {
      throw new InputException(spec + ": is a folder, not a request trace file");
    }
    throw new InputException(
        spec + ": no such request trace file, and not a request generator or importer (request generators: " + String.join(", ", REQUEST_GENERATORS.keySet())
            + "; importers: " + String.join(", ", REQUEST_IMPORTERS.keySet()) + ")");
  }
}

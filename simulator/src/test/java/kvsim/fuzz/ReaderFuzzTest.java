package kvsim.fuzz;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import kvsim.blocks.BlockScriptRunner;
import kvsim.config.GridSpec;
import kvsim.config.WorkloadSpec;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import kvsim.regress.Suite;
import kvsim.run.CalibrationFile;
import kvsim.run.GridSweep;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import kvsim.torch.PickleScanner;
import kvsim.torch.PickleWriter;
import kvsim.torch.SnapshotImporter;
import kvsim.torch.SnapshotInspector;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import kvsim.trace.AzureCsvWriter;
import kvsim.trace.AzureTraceReader;
import kvsim.trace.BurstGptTraceReader;
import kvsim.trace.EventSource;
import kvsim.trace.L1TraceReader;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.LengthTableReader;
import kvsim.trace.MooncakeTraceReader;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;
import kvsim.trace.RequestTraceReader;
import kvsim.trace.RequestTraceWriter;
import kvsim.trace.TraceEvent;
import kvsim.workload.ChurnGenerator;
import kvsim.workload.RequestGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzzes every reader of user files (Note [Reader oracle] in {@link Fuzzer}): L1 traces, request
 * traces, the four request-log importers, PyTorch snapshot pickles, workload specs, sweep grids,
 * regression suites, block scripts and calibration files. Each target reads the whole input
 * through the API the CLI uses; its seed corpus is the committed examples (workloads/, the test
 * resources, the README's examples) and small files written by kvsim's own writers.
 *
 * <p>The build runs a fixed number of tries per target with a fixed seed (Note [Fuzz counts]);
 * {@code mvn -o test -Dtest=ReaderFuzzTest -Dkvsim.fuzz.tries=100000} runs longer (README,
 * "Fuzzing the readers"). Findings so far are regression tests beside each reader's tests.
 */
final class ReaderFuzzTest {
  /** The repository root, seen from the module (tests run in simulator/). */
  private static final Path ROOT = Path.of("..");

  @TempDir Path tmp;

  // ---- L1 traces --------------------------------------------------------------------------

  @Test
  void mutatedL1TracesAreReadOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = new ArrayList<>();
    corpus.add(readme("{\"format\":\"kvsim-l1\""));
    corpus.add(head(ROOT.resolve("workloads/regress/torch-snapshot-churn.jsonl"), 40));
    corpus.add(l1Written(1, 60));
    corpus.add(l1Written(2, 20));
    corpus.add(utf8("""
        {"format":"kvsim-l1","version":1}
        {"t":5,"op":"alloc","id":3,"size":4096,"tag":"weights","splittable":true,"stream":2,"addr":0}
        {"op":"annotate","action":"segment_alloc","size":2097152,"addr":0,"stream":2}
        {"t":7,"op":"free","id":3,"stream":2}
        {"t":9,"op":"annotate","action":"oom"}
        """));
    fuzz("l1-trace", "trace.jsonl", f -> drain(L1TraceReader.open(f)), true, null, corpus,
        words("format", "kvsim-l1", "version", "t", "op", "id", "size", "tag", "splittable", "stream", "addr", "action", "alloc", "free",
            "annotate", "kv", "weights", "activation", "temp", "segment_alloc"), 2000);
  }

  // ---- request traces ---------------------------------------------------------------------

  @Test
  void mutatedRequestTracesAreReadOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = new ArrayList<>();
    corpus.add(readme("{\"format\":\"kvsim-requests\""));
    corpus.add(requestsWritten(true));
    corpus.add(requestsWritten(false));
    fuzz("request-trace", "requests.jsonl", f -> drain(RequestTraceReader.open(f)), true, null, corpus,
        words("format", "kvsim-requests", "version", "hash_block_tokens", "id", "t", "prompt_tokens", "output_tokens", "hash_ids", "n",
            "beam_width"), 2000);
  }

  // ---- request-log importers --------------------------------------------------------------

  /**
   * An importer's whole-file refusal: no row selected (the file has none, or the window or filters
   * keep none), which has no line of its own (Note [An empty selection] on ImportedRequestSource).
   */
  private static final Pattern SELECTS_NONE = Pattern.compile("^: selects no request: ");

  @Test
  void mutatedAzureLogsAreImportedOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = new ArrayList<>();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    AzureCsvWriter azure = new AzureCsvWriter(out, AzureCsvWriter.DEFAULT_START);
    writeRequests(azure::write, 12);
    azure.flush();
    corpus.add(out.toByteArray());
    corpus.add(utf8("""
        TIMESTAMP,ContextTokens,GeneratedTokens
        2023-11-16 18:15:46.6805900,374,44
        2023-11-16 18:15:50.9951690,396,109
        2023-11-16 18:15:50.9951690Z,879,0
        2023-11-16T18:15:51+01:00,45,2
        2023-11-16 19:15:52.123456789-00:30,1,1
        """));
    fuzz("azure-csv", "azure.csv", f -> importAll(f, (file, o) -> new AzureTraceReader(file, o)), true, SELECTS_NONE, corpus,
        words("TIMESTAMP", "ContextTokens", "GeneratedTokens", "2023-11-16 18:15:46", "Z", "+23:59", "-00:00", ".1234567891",
            "1677-09-21 00:12:44", "2262-04-11 23:47:16.854775807", "0000-01-01 00:00:00", "9999-12-31 23:59:59", "2024-02-30 24:60:60",
            "+24:00", "-99:99"), 2000);
  }

  @Test
  void mutatedBurstGptLogsAreImportedOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(Files.readAllBytes(ROOT.resolve("workloads/burstgpt-sample.csv")), utf8("""
        Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
        0,GPT-4,1,1,2,API log
        0.000000001,ChatGPT,5,0,5,Conversation log
        1e2,GPT-4,7,3,10,API log
        """));
    fuzz("burstgpt-csv", "burstgpt.csv", f -> {
      importAll(f, (file, o) -> new BurstGptTraceReader(file, o));
      importAll(f, (file, o) -> new BurstGptTraceReader(file, o), "model", "GPT-4", "log-type", "API log");
    }, true, SELECTS_NONE, corpus, words("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type", "ChatGPT", "GPT-4",
        "API log", "Conversation log", "1E+2147483647", "1E-2147483647", "9.223372036854775807E9", "1e-9"), 1500);
  }

  @Test
  void mutatedLengthTablesAreImportedOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(utf8("""
        id,num_prefill_tokens,num_decode_tokens,other
        0,153,12,x
        1,2048,1,y
        2,1,0,z
        """), utf8("num_decode_tokens,num_prefill_tokens\r\n7,9\r\n1,1\r\n"));
    fuzz("lengths-csv", "lengths.csv", f -> {
      importAll(f, (file, o) -> new LengthTableReader(file, o), "rate", "2");
      importAll(f, (file, o) -> new LengthTableReader(file, o), "rate", "1e-6", "seed", "-1"); // arrivals inside the window of importAll
    }, true, SELECTS_NONE, corpus, words("num_prefill_tokens", "num_decode_tokens"), 2000);
  }

  @Test
  void mutatedMooncakeTracesAreImportedOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(utf8("""
        {"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]}
        {"timestamp": 3000, "input_length": 513, "output_length": 7, "hash_ids": [0, 1]}
        {"timestamp": 3000, "input_length": 512, "output_length": 2, "hash_ids": [0]}
        {"timestamp": 6001, "input_length": 1, "output_length": 1, "hash_ids": [9]}
        """));
    fuzz("mooncake-jsonl", "mooncake.jsonl", f -> importAll(f, (file, o) -> new MooncakeTraceReader(file, o)), true, SELECTS_NONE, corpus,
        words("timestamp", "input_length", "output_length", "hash_ids"), 1500);
  }

  // ---- PyTorch snapshots ------------------------------------------------------------------

  @Test
  void mutatedPicklesAreScannedOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(snapshotPickle(true), snapshotPickle(false));
    fuzz("pickle-scanner", "scan.pickle", f -> {
      try {
        PickleScanner.scan(Files.readAllBytes(f));
      } catch (PickleScanner.Refused e) {
        throw new InputException(f + ": " + e.getMessage());
      }
    }, false, null, corpus, List.of("segments", "device_traces", "c", "R", "os\nsystem\n", "L" + "9".repeat(99) + "L\n", "I-1\n"), 3000);
  }

  @Test
  void mutatedSnapshotsAreReadInspectedAndImportedOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(snapshotPickle(true), snapshotPickle(false));
    fuzz("torch-snapshot", "snapshot.pickle", f -> {
      TorchSnapshot s = SnapshotReader.read(f);
      SnapshotInspector.toText(s);
      SnapshotInspector.toJson(s);
      int device;
      try {
        device = SnapshotImporter.chooseDevice(s, -1);
      } catch (InputException noHistory) {
        return; // a snapshot without history inspects, but does not import
      }
      ByteArrayOutputStream trace = new ByteArrayOutputStream();
      SnapshotImporter.write(s, device, trace);
      // What the importer writes, the L1 reader reads.
      try (L1TraceReader r = L1TraceReader.open("import.jsonl", new ByteArrayInputStream(trace.toByteArray()))) {
        while (r.next() != null) {
          // read to the end
        }
      } catch (InputException e) {
        throw new AssertionError("the importer accepted the snapshot and wrote a trace the L1 reader refuses: " + e.getMessage(), e);
      }
    }, false, null, corpus, words("segments", "device_traces", "allocator_settings", "address", "total_size", "blocks", "size", "state",
        "requested_size", "segment_type", "device", "stream", "action", "addr", "time_us", "alloc", "free_requested", "free_completed",
        "segment_alloc", "segment_free", "active_allocated", "inactive", "large", "small", "oom"), 2000);
  }

  // ---- YAML and JSON files ----------------------------------------------------------------

  @Test
  void mutatedWorkloadSpecsResolveOrAreRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(
        Files.readAllBytes(ROOT.resolve("workloads/churn-5000.yaml")),
        Files.readAllBytes(ROOT.resolve("workloads/kv-azure-conv.yaml")),
        Files.readAllBytes(Path.of("src/main/resources/kvsim/default-workload.yaml")),
        utf8("""
            workload: churn
            params: {ops: 50}
            allocators: [slab, pytorch-caching]
            options: {slab: {block-size: 2MiB}}
            torch-alloc-conf: "expandable_segments:True"
            calibration: cal.json
            """));
    PrintWriter quiet = new PrintWriter(OutputStream.nullOutputStream());
    fuzz("workload-spec", "spec.yaml", f -> {
      WorkloadSpec spec = WorkloadSpec.read(f);
      // As `kvsim replay spec.yaml` resolves it, up to building the allocators; nothing runs.
      RunSpec.resolve(RunRequest.of(null).withSpec(spec, f.getParent()), quiet);
    }, false, null, corpus, words("workload", "params", "seed", "device", "model", "plan", "allocators", "options", "torch-alloc-conf",
        "calibration", "churn", "kv", "ops", "free-probability", "weights", "activations", "slab", "paged", "first-fit", "h100-80",
        "llama-2-7b", "preset", "requests", "rate", "block-size"), 500);
  }

  @Test
  void mutatedSweepGridsAreReadOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(Files.readAllBytes(ROOT.resolve("workloads/sweeps/churn-seeds.yaml")), utf8("""
        workloads: ["requests:count=20", trace.jsonl]
        systems: [vllm, orca-oracle]
        set:
          block-size: [16, 32]
          kv-memory: 2GiB
        seeds: [1, 2, 3]
        device: h100-80
        model: [llama-2-7b, opt-13b]
        """), utf8("""
        workloads: churn
        allocators: first-fit
        set: {first-fit.alignment: [512, 2MiB]}
        plan: {weights: 0, activations: 0}
        seeds: 7
        """));
    fuzz("sweep-grid", "grid.yaml", f -> {
      // As `kvsim sweep` reads a grid before anything runs. A grid of more than 100,000 cells is a
      // valid sweep that takes seconds to expand (a mutant with a list of 50,000 values crossed with
      // the others); its size is checked, its cells are not listed.
      GridSpec g = GridSweep.GridFile.read(f).spec();
      long cells = (long) g.workloads().size() * Math.max(1, g.devices().size()) * Math.max(1, g.models().size())
          * (g.serving() ? g.systems().size() : g.allocators().size()) * Math.max(1, g.seeds().size());
      for (List<String> values : g.sets().values()) {
        cells = Math.multiplyHigh(cells, values.size()) != 0 ? Long.MAX_VALUE : cells * values.size();
      }
      if (cells <= 100_000) {
        GridSweep.cells(g);
      }
    }, false, null, corpus, words("workloads", "allocators", "systems", "seeds", "device", "model", "set", "plan", "weights",
        "activations", "block-size", "kv-memory", "first-fit.alignment", "vllm", "1..200", "churn:ops=1000"), 1000);
  }

  @Test
  void mutatedSuitesAreReadOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(Files.readAllBytes(ROOT.resolve("workloads/regress/default.yaml")), utf8("""
        version: 1
        scenarios:
          - name: small
            workload: churn:ops=100
            allocators: [first-fit, pytorch-caching]
            torch-alloc-conf: "expandable_segments:True"
            watch:
              - {metric: oom_count, better: lower, tolerance: 0}
              - {metric: external_fragmentation.peak, better: lower, tolerance: 5%}
          - name: serve
            serving: requests:count=10
            systems: [vllm]
            watch: [{metric: requests_finished, better: higher}]
        """));
    fuzz("regress-suite", "suite.yaml", f -> Suite.read(f), false, null, corpus,
        words("version", "watch", "allocators", "serving", "scenarios", "name", "workload", "systems", "metric", "better", "tolerance",
            "lower", "higher", "torch-alloc-conf", "device", "model", "plan", "options", "activations", "first-fit", "vllm", "5%", "1e-9"),
        300);
  }

  @Test
  void mutatedBlockScriptsRunOrAreRefusedInOneLine() throws Exception {
    List<byte[]> corpus = new ArrayList<>();
    try (var files = Files.list(ROOT.resolve("workloads/blocks"))) {
      for (Path p : files.sorted().toList()) {
        if (p.toString().endsWith(".jsonl") && !p.toString().endsWith(".out.jsonl")) {
          corpus.add(Files.readAllBytes(p));
        }
      }
    }
    corpus.add(Files.readAllBytes(Path.of("src/test/resources/blocks/chunked-salt-reset.jsonl")));
    corpus.add(readme("{\"op\":\"config\",\"num_blocks\":9"));
    corpus.add(readme("{\"op\":\"config\",\"num_blocks\":5"));
    fuzz("block-script", "script.jsonl", f -> {
      try (InputStream in = Files.newInputStream(f)) {
        new BlockScriptRunner(f.toString(), true).run(in, OutputStream.nullOutputStream());
      }
    }, true, Pattern.compile("^: the script has no operations"), corpus,
        words("op", "config", "num_blocks", "block_size", "enable_caching", "add", "lookup", "allocate", "admit", "append", "decode", "free",
            "preempt", "fork", "swap_out", "swap_in", "reset_prefix_cache", "state", "submit", "step", "req", "prompt", "prompt_range",
            "token", "max_tokens", "output", "mode", "v0", "v1", "max_num_batched_tokens", "max_num_seqs", "salt"), 1000);
  }

  @Test
  void mutatedCalibrationFilesAreReadOrRefusedInOneLine() throws Exception {
    List<byte[]> corpus = List.of(utf8("""
        {"format": "kvsim-calibration", "version": 2,
         "device": "NVIDIA H100 80GB HBM3", "driver": "580.65.06", "date": "2026-11-23",
         "forward": {"compute_efficiency": 0.45, "memory_efficiency": 0.85},
         "copies": {"hbm_efficiency": 0.7, "host_link_efficiency": 0.9},
         "latency": {"pytorch-caching": {"device_alloc_ns": 41000, "device_free_ns": 33000},
                     "slab": {"alloc_base_ns": 25, "free_per_step_ns": 3}}}
        """), utf8("""
        {"format": "kvsim-calibration", "version": 1,
         "device": "NVIDIA H100 80GB HBM3", "driver": "580.65.06", "date": "2026-11-23",
         "latency": {"pytorch-caching": {"device_alloc_ns": 41000, "device_free_ns": 33000},
                     "slab": {"alloc_base_ns": 25, "free_per_step_ns": 3}}}
        """));
    fuzz("calibration", "h100.json", CalibrationFile::read, false, null, corpus,
        words("format", "kvsim-calibration", "version", "device", "driver", "date", "latency", "fragmentation", "pytorch-caching", "slab",
            "device_alloc_ns", "device_free_ns", "alloc_base_ns", "alloc_per_step_ns", "free_base_ns", "free_per_step_ns", "forward", "copies",
            "compute_efficiency", "memory_efficiency", "hbm_efficiency", "host_link_efficiency", "2", "0.5", "1.5"), 2000);
  }

  // ---- the driver -------------------------------------------------------------------------

  private void fuzz(String name, String fileName, Fuzzer.Target target, boolean lineOriented, Pattern wholeFile, List<byte[]> corpus,
      List<String> dictionary, long buildTries) throws Exception {
    Fuzzer.Counts c = new Fuzzer(new Fuzzer.Spec(name, fileName, target, lineOriented, wholeFile, corpus, dictionary), tmp)
        .run(Fuzzer.tries(buildTries));
    assertTrue(c.accepted() > 0, name + ": the corpus and its mutants were all rejected; the seeds are not valid inputs");
    assertTrue(c.rejected() > 0, name + ": nothing was rejected; the mutator does not reach the reader's checks");
  }

  private static List<String> words(String... w) {
    return List.of(w);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void drain(EventSource s) throws IOException {
    try (s) {
      while (s.next() != null) {
        // read to the end
      }
    }
  }

  private static void drain(RequestSource s) throws IOException {
    try (s) {
      while (s.next() != null) {
        // read to the end
      }
    }
  }

  /** An importer built from a file and its options. */
  private interface Importer {
    RequestSource open(Path file, OptionMap options) throws IOException;
  }

  /**
   * Reads a file through an importer twice, as {@code kvsim import} does with the options {@code
   * extra} (pairs) only, and as a serving workload with every shared option set as well (a window,
   * a speedup, a spread, zero-output).
   */
  private static void importAll(Path f, Importer importer, String... extra) throws IOException {
    Map<String, String> plain = new LinkedHashMap<>();
    for (int i = 0; i < extra.length; i += 2) {
      plain.put(extra[i], extra[i + 1]);
    }
    Map<String, String> all = new LinkedHashMap<>(plain);
    // A window that keeps the seeds' rows (an empty selection is refused: Note [An empty selection]).
    all.putAll(Map.of("from", "1e-9", "to", "1e9", "speedup", "3", "spread", "0.001", "zero-output", "one"));
    drain(importer.open(f, new OptionMap("import", plain)));
    drain(importer.open(f, new OptionMap("import", all)));
  }

  /** The README's example block that starts with {@code firstLine}. */
  private static byte[] readme(String firstLine) throws IOException {
    String text = Files.readString(ROOT.resolve("README.md"));
    int at = text.indexOf("\n" + firstLine);
    if (at < 0) {
      throw new IllegalStateException("README.md has no example starting " + firstLine);
    }
    int end = text.indexOf("\n```", at + 1);
    return utf8(text.substring(at + 1, end + 1));
  }

  /** The first {@code lines} lines of a committed file. */
  private static byte[] head(Path p, int lines) throws IOException {
    try (var s = Files.lines(p)) {
      return utf8(String.join("\n", s.limit(lines).toList()) + "\n");
    }
  }

  private static byte[] l1Written(long seed, int ops) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Map<String, String> params = Map.of("ops", Integer.toString(ops), "seed", Long.toString(seed), "max-size-mib", "4");
    ChurnGenerator g = new ChurnGenerator(new OptionMap("generator churn", new LinkedHashMap<>(params)));
    try (L1TraceWriter w = new L1TraceWriter(out, Map.of("generator", "churn", "params", params))) {
      for (TraceEvent e; (e = g.next()) != null; ) {
        w.write(e);
        g.acknowledge(e, true);
      }
    }
    return out.toByteArray();
  }

  private interface RequestSink {
    void write(Request r) throws IOException;
  }

  private static void writeRequests(RequestSink w, int count) throws IOException {
    try (RequestGenerator g = new RequestGenerator(new OptionMap("generator requests", new LinkedHashMap<>(Map.of("count", Integer.toString(count)))))) {
      for (Request r; (r = g.next()) != null; ) {
        w.write(r);
      }
    }
  }

  private static byte[] requestsWritten(boolean hashes) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int hbt = hashes ? 16 : 0;
    RequestTraceWriter w = new RequestTraceWriter(out, Map.of("generator", "requests"), hbt);
    if (hashes) {
      w.write(new Request(0, 0, 0, 33, 5, new long[] {1, 2, 3}, 1, 1));
      w.write(new Request(0, 1, 10, 16, 1, new long[] {1}, 4, 1));
      w.write(new Request(0, 5, 10, 17, 2, new long[] {1, -7}, 1, 3));
    } else {
      writeRequests(w::write, 10);
    }
    w.flush();
    return out.toByteArray();
  }

  /** A small memory snapshot in the shape of {@code torch.cuda.memory._dump_snapshot}, pickled by kvsim's writer. */
  private static byte[] snapshotPickle(boolean dict) {
    Map<String, Object> b0 = block(0, 2 << 20, 2_000_000, "active_allocated");
    Map<String, Object> b1 = block(2 << 20, 2 << 20, 0, "inactive");
    Map<String, Object> seg = new LinkedHashMap<>();
    seg.put("device", 0);
    seg.put("address", 0L);
    seg.put("total_size", 4L << 20);
    seg.put("allocated_size", 2L << 20);
    seg.put("active_size", 2L << 20);
    seg.put("requested_size", 2_000_000L);
    seg.put("stream", 0);
    seg.put("segment_type", "large");
    seg.put("is_expandable", false);
    seg.put("blocks", List.of(b0, b1));
    List<Object> trace = List.of(
        entry("segment_alloc", 0, 4L << 20, 1),
        entry("alloc", 0, 2_000_000, 2),
        entry("alloc", 2 << 20, 1_000_000, 3),
        entry("free_requested", 2 << 20, 1_000_000, 4),
        entry("free_completed", 2 << 20, 1_000_000, 5));
    Object root;
    if (dict) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("segments", List.of(seg));
      m.put("device_traces", List.of(trace));
      m.put("allocator_settings", Map.of("expandable_segments", false));
      root = m;
    } else {
      root = List.of(seg);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      PickleWriter.write(root, out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  private static Map<String, Object> block(long addr, long size, long requested, String state) {
    Map<String, Object> b = new LinkedHashMap<>();
    b.put("address", addr);
    b.put("size", size);
    b.put("requested_size", requested);
    b.put("state", state);
    return b;
  }

  private static Map<String, Object> entry(String action, long addr, long size, long timeUs) {
    Map<String, Object> e = new LinkedHashMap<>();
    e.put("action", action);
    e.put("addr", addr);
    e.put("size", size);
    e.put("stream", 0);
    e.put("time_us", timeUs);
    e.put("frames", List.of());
    return e;
  }
}

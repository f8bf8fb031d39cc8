package kvsim.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.core.Bytes;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.run.ServingRunner;
import kvsim.run.ServingSpec;
import kvsim.serving.ServingMetrics;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim serving}: LLM requests through serving systems, compared in a table and a result folder. */
@Command(
    name = "serving",
    mixinStandardHelpOptions = true,
    description = {
      "Run LLM requests through serving systems (a continuous-batching scheduler over a KV manager over an allocator) and compare",
      "throughput, latencies, batch sizes, preemptions and the KV memory breakdown. Writes summary.json, timeseries.csv,",
      "kv-breakdown.png/.svg (the KV region by use over time) and timing.json.",
      "WORKLOAD is a request trace (.jsonl, see `kvsim generate requests` and `kvsim import`), a generator spec such as requests:preset=sharegpt,rate=2,count=2000, or a request log through an importer: azure:FILE.csv, mooncake:FILE.jsonl, lengths:FILE.csv,rate=2 (options after the path: from, to, speedup; see `kvsim list`)."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class ServingCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "WORKLOAD", description = "Request trace file, request generator spec, or importer spec NAME:PATH[,key=value,...].")
  String workload;

  @CommandLine.Mixin ServingOptions options;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default results/runs/<time>-serving-<workload>); as for replay.")
  Path output;

  @Option(names = "--force", description = "Also replace a kvsim result folder into which files of your own were added.")
  boolean force;

  @Option(names = {"-q", "--quiet"}, description = "No progress on stderr.")
  boolean quiet;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    ServingSpec s = ServingSpec.resolve(options.request(workload));
    String name = "serving-" + workload.replaceAll(".*/", "").replaceAll("[:,=]", "-").replaceAll("\\.jsonl$", "").replaceAll("[^A-Za-z0-9._-]", "");
    ResultFolder.Target target = (output != null ? ResultFolder.Target.at(output, force) : ResultFolder.Target.fresh(Path.of("results", "runs"), name)).check();
    long start = System.nanoTime();
    ServingRunner.Progress progress = quiet ? null : (system, iterations, finished, wallNanos) -> {
      if (System.nanoTime() - start >= 3_000_000_000L) {
        synchronized (err) {
          err.printf(Locale.ROOT, "kvsim: %s: %d iterations, %d requests finished%n", system, iterations, finished);
          err.flush();
        }
      }
    };
    List<ServingRunner.SystemResult> results = new ServingRunner().run(s, progress);
    ServingRunner.Outputs o = ServingRunner.Outputs.of(results);
    Path dir = ResultsWriter.writeServing(target, s.configEcho(), o.summaries(), o.timings(), ServingMetrics.SERIES_COLUMNS, o.series(),
        ServingMetrics.QUANTILE_COLUMNS, o.quantiles());
    out.printf(Locale.ROOT, "workload: %s; %s on %s, KV memory %s%n", s.workload().spec(), s.model().name(), s.device().name(), Bytes.format(s.kvMemoryBytes()));
    table(out, results);
    out.println();
    out.println("results: " + dir);
    out.flush();
    return KvSim.EXIT_OK;
  }

  @SuppressWarnings("unchecked")
  private static void table(PrintWriter out, List<ServingRunner.SystemResult> results) {
    String format = "%-12s %8s %8s %9s %9s %9s %10s %8s %7s %7s %7s %7s %7s%n";
    out.printf(Locale.ROOT, format,
        "system", "requests", "rejected", "tokens/s", "TTFT p50", "TPOT p50", "norm. lat", "batch", "preempt", "tokens", "reserv.", "int.", "ext.");
    out.printf(Locale.ROOT, format, "-".repeat(12), "-".repeat(8), "-".repeat(8), "-".repeat(9), "-".repeat(9), "-".repeat(9), "-".repeat(10),
        "-".repeat(8), "-".repeat(7), "-".repeat(7), "-".repeat(7), "-".repeat(7), "-".repeat(7));
    for (ServingRunner.SystemResult r : results) {
      Map<String, Object> m = r.metrics().toMap();
      Map<String, Object> ttft = (Map<String, Object>) m.get("ttft_seconds");
      Map<String, Object> tpot = (Map<String, Object>) m.get("tpot_seconds");
      Map<String, Object> norm = (Map<String, Object>) m.get("normalized_latency_seconds_per_token");
      out.printf(Locale.ROOT, "%-12s %8d %8d %9s %9s %9s %10s %8s %7d %7s %7s %7s %7s%n",
          r.system(), r.metrics().finished(), r.metrics().rejected(), num(m.get("throughput_tokens_per_second"), "%.0f"),
          seconds(ttft.get("p50")), seconds(tpot.get("p50")), seconds(norm.get("mean")), num(m.get("batch_size_mean"), "%.1f"),
          r.metrics().preemptions(), frac(r.metrics().meanFraction("token_states")), frac(r.metrics().meanFraction("reserved_future")),
          frac(r.metrics().meanFraction("internal_waste")), frac(r.metrics().meanFraction("external_waste")));
    }
  }

  private static String num(Object v, String format) {
    return v == null ? "-" : String.format(Locale.ROOT, format, ((Number) v).doubleValue());
  }

  private static String seconds(Object v) {
    if (v == null) {
      return "-";
    }
    double s = ((Number) v).doubleValue();
    return s < 1 ? String.format(Locale.ROOT, "%.1f ms", s * 1e3) : String.format(Locale.ROOT, "%.2f s", s);
  }

  private static String frac(double f) {
    return Double.isNaN(f) ? "-" : String.format(Locale.ROOT, "%.3f", f);
  }
}

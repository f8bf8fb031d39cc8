package kvsim.run;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.core.InputException;
import kvsim.metrics.SeedSweep;
import kvsim.report.ServingResults;

/**
 * Reproductions of published experiments: each runs kvsim on the published setup and puts its
 * numbers beside the published ones. Nothing here is tuned towards those numbers; where a source
 * gives no number, the table says so.
 *
 * <ul>
 *   <li>{@code seed000-churn}: the slab-allocator article's first-fit churn experiment (its Python,
 *       {@code bench/churn_reference.py}: 80 GiB as 81,920 MiB, sizes 1–256 MiB, free probability
 *       0.4, seeds 0–199) at 100, 500, 1,000 and 5,000 operations, as a seed sweep of {@code
 *       first-fit} on {@code churn}.
 *   <li>{@code vllm-fig2}: the vLLM paper's Fig. 2 (Kwon et al., "Efficient Memory Management for
 *       Large Language Model Serving with PagedAttention", SOSP 2023, arXiv 2309.06180): the KV memory breakdown of Orca(Max), Orca(Pow2), Orca(Oracle) and vLLM serving
 *       OPT-13B on an A100-40GB with 12 GiB of KV memory, ShareGPT lengths at 2 requests/s.
 *   <li>{@code vllm-fig13}: the paper's Fig. 13, the mean batch size of the same systems on ShareGPT at
 *       2 requests/s and Alpaca at 30 requests/s.
 * </ul>
 */
public final class Reproductions {
  /** The reproductions this class runs. */
  public static final List<String> NAMES = List.of("seed000-churn", "vllm-fig2", "vllm-fig13");
  /** The systems of the vLLM paper's comparisons, in its order. */
  public static final List<String> VLLM_SYSTEMS = List.of("orca-max", "orca-pow2", "orca-oracle", "vllm");
  /** Requests per serving run: 2,000 ShareGPT requests at 2/s are about 17 simulated minutes. */
  public static final int REQUESTS = 2000;
  private static final int[] CHURN_OPS = {100, 500, 1000, 5000};
  private static final int CHURN_SEEDS = 200;
  /**
   * What the article's own Python prints ({@code python3 bench/churn_reference.py 100 500 1000
   * 5000}, CPython 3.11): per operation count, the median, mean, p10 and p90 of peak external
   * fragmentation over seeds 0–199 ({@code statistics.quantiles(n=10)}, its default "exclusive"
   * method) and the mean number of failed allocations.
   */
  private static final double[][] CHURN_REFERENCE = {
    {0.012, 0.013, 0.008, 0.018, 0.0},
    {0.033, 0.033, 0.026, 0.041, 0.0},
    {0.059, 0.060, 0.047, 0.074, 0.0},
    {0.985, 0.985, 0.983, 0.986, 309.9},
  };
  private static final String NOT_GIVEN = "not given";

  /** One seed sweep of a reproduction, to be written as a result folder of its own. */
  public record Sweep(String name, SweepResult result) {}

  /**
   * One serving run of a reproduction, to be written as a result folder of its own.
   *
   * @param name its folder's name
   * @param results what its result folder holds
   * @param timings its systems' wall-clock figures
   */
  public record Serving(String name, ServingResults results, List<ServingResults.Timing> timings) {}

  /**
   * What a reproduction produced.
   *
   * @param name its name
   * @param title a one-line title
   * @param notes what was run and how to read the table (Markdown paragraphs)
   * @param header the comparison table's columns
   * @param rows its rows
   * @param numbers kvsim's numbers for {@code --json}
   * @param sweeps seed sweeps run
   * @param servings serving runs run
   */
  public record Reproduction(
      String name, String title, String notes, List<String> header, List<List<String>> rows, Map<String, Object> numbers,
      List<Sweep> sweeps, List<Serving> servings) {}

  private Reproductions() {}

  /** Runs reproduction {@code name}; progress lines go to {@code err}. */
  public static Reproduction run(String name, String kvsimVersion, PrintWriter err) throws IOException {
    return switch (name) {
      case "seed000-churn" -> seed000Churn(kvsimVersion, err);
      case "vllm-fig2" -> vllmFig2(err);
      case "vllm-fig13" -> vllmFig13(err);
      default -> throw new InputException("reproduce: unknown reproduction '" + name + "' (known: " + String.join(", ", NAMES) + ")");
    };
  }

  private static Reproduction seed000Churn(String kvsimVersion, PrintWriter err) throws IOException {
    List<Sweep> sweeps = new ArrayList<>();
    List<List<String>> rows = new ArrayList<>();
    Map<String, Object> numbers = new LinkedHashMap<>();
    long[] seeds = new long[CHURN_SEEDS];
    for (int i = 0; i < seeds.length; i++) {
      seeds[i] = i;
    }
    for (int k = 0; k < CHURN_OPS.length; k++) {
      int ops = CHURN_OPS[k];
      progress(err, "seed000-churn: first-fit, " + ops + " operations, " + CHURN_SEEDS + " seeds");
      RunSpec spec = RunSpec.resolve(RunRequest.of("churn:ops=" + ops).withAllocators(List.of("first-fit")).withDevice("h100-80"), err);
      SweepResult r = new Runner(kvsimVersion).sweep(spec, seeds, null);
      sweeps.add(new Sweep("ops-" + ops, r));
      SeedSweep s = r.sweeps().get("first-fit");
      SeedSweep.Stats peak = s.stats().get("external_fragmentation.peak");
      SeedSweep.Stats fails = s.stats().get("oom_count");
      double[] ref = CHURN_REFERENCE[k];
      String setting = String.format(Locale.ROOT, "%,d ops", ops);
      rows.add(List.of(setting, "peak ext. frag., median", f3(peak.median()), f3(ref[0]), NOT_GIVEN));
      rows.add(List.of(setting, "peak ext. frag., mean", f3(peak.mean()), f3(ref[1]), NOT_GIVEN));
      rows.add(List.of(setting, "peak ext. frag., p10", f3(peak.p10()), f3(ref[2]), NOT_GIVEN));
      rows.add(List.of(setting, "peak ext. frag., p90", f3(peak.p90()), f3(ref[3]), NOT_GIVEN));
      rows.add(List.of(setting, "failed allocations, mean", String.format(Locale.ROOT, "%.1f", fails.mean()),
          String.format(Locale.ROOT, "%.1f", ref[4]), NOT_GIVEN));
      Map<String, Object> n = new LinkedHashMap<>();
      n.put("peak_external_fragmentation_median", peak.median());
      n.put("peak_external_fragmentation_mean", peak.mean());
      n.put("peak_external_fragmentation_p10", peak.p10());
      n.put("peak_external_fragmentation_p90", peak.p90());
      n.put("failed_allocations_mean", fails.mean());
      numbers.put(Integer.toString(ops), n);
    }
    String notes = """
        The slab-allocator article's churn experiment with first-fit: on each operation, if anything is
        live and a uniform draw is below 0.4, free a uniformly chosen live allocation, else allocate
        1–256 MiB (uniform, whole MiB) on 80 GiB; seeds 0–199. kvsim's column is `first-fit` on kvsim's
        `churn` generator (`./kvsim replay churn:ops=N -a first-fit --seeds 0..199`); the reference code's
        column is what the article's own Python (`bench/churn_reference.py`) prints. Both draw from
        different random generators, so they agree in distribution, not seed by seed. The p10 and p90
        of kvsim interpolate linearly (numpy's default); the Python's `statistics.quantiles` uses the
        "exclusive" method, which differs slightly on 200 values. The numbers the article's text states
        are not available in this repository or its shared files, so that column says "not given"
        rather than guessing them.""";
    return new Reproduction("seed000-churn", "The slab-allocator article's first-fit churn table", notes,
        List.of("setting", "quantity", "kvsim", "article's code", "article's text"), rows, numbers, sweeps, List.of());
  }

  private static ServingSpec vllmSpec(String preset, double rate) {
    Settings settings = Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.KV_MEMORY, "12GiB");
    return ServingSpec.resolve(ServingSpec.Request.of("requests:preset=" + preset + ",rate=" + rate + ",count=" + REQUESTS + ",seed=1", VLLM_SYSTEMS,
        settings));
  }

  private static Serving serve(String name, ServingSpec spec, PrintWriter err) throws IOException {
    progress(err, name + ": " + spec.workload().spec() + " on " + String.join(", ", spec.systems()));
    List<ServingRunner.SystemResult> results = new ServingRunner().run(spec, null);
    return new Serving(name, ServingRunner.results(spec, results), ServingRunner.timings(results));
  }

  private static Reproduction vllmFig2(PrintWriter err) throws IOException {
    Serving s = serve("sharegpt-2rps", vllmSpec("sharegpt", 2), err);
    List<List<String>> rows = new ArrayList<>();
    Map<String, Object> numbers = new LinkedHashMap<>();
    List<String> categories = List.of("token_states", "reserved_future", "internal_waste", "external_waste");
    for (ServingResults.Entry system : s.results().entries()) {
      Map<String, Object> fractions = new LinkedHashMap<>();
      List<String> row = new ArrayList<>(List.of(system.system()));
      for (String c : categories) {
        double v = system.kvMeanShare(c);
        fractions.put(c, v);
        row.add(String.format(Locale.ROOT, "%.1f %%", 100 * v));
      }
      row.add(system.system().equals("vllm") ? "\"nearly all\" of KV memory holds token states" : "\"only a small fraction\" holds token states");
      rows.add(row);
      numbers.put(system.system(), fractions);
    }
    String notes = """
        The vLLM paper's Fig. 2: the average share of KV-cache memory by use while OPT-13B serves
        ShareGPT-like requests on an A100-40GB with 12 GiB of KV memory (Table 1), Poisson arrivals at
        2 requests/s, %,d requests (seed 1). Shares are kvsim's time-weighted means over the run
        (`kv_breakdown` in summary.json), with the paper's four uses: token states, reserved for future
        tokens, internal fragmentation, external fragmentation (and others). The figure's values are not
        transcribed in this repository; the last column quotes the paper's own summary of it (its
        introduction).""".formatted(REQUESTS);
    return new Reproduction("vllm-fig2", "The vLLM paper's KV memory breakdown (Fig. 2)", notes,
        List.of("system", "token states", "reserved", "internal fragmentation", "external fragmentation", "published (paper's text)"),
        rows, numbers, List.of(), List.of(s));
  }

  private static Reproduction vllmFig13(PrintWriter err) throws IOException {
    List<Serving> servings = List.of(
        serve("sharegpt-2rps", vllmSpec("sharegpt", 2), err),
        serve("alpaca-30rps", vllmSpec("alpaca", 30), err));
    List<List<String>> rows = new ArrayList<>();
    Map<String, Object> byWorkload = new LinkedHashMap<>();
    for (Serving s : servings) {
      String workload = s.name().startsWith("sharegpt") ? "sharegpt" : "alpaca";
      Map<String, Object> systems = new LinkedHashMap<>();
      for (ServingResults.Entry system : s.results().entries()) {
        double mean = system.number("batch_size_mean");
        systems.put(system.system(), mean);
        rows.add(List.of(workload + (workload.equals("sharegpt") ? " @ 2 req/s" : " @ 30 req/s"), system.system(),
            String.format(Locale.ROOT, "%.2f", mean), NOT_GIVEN));
      }
      byWorkload.put(workload, systems);
    }
    Map<String, Object> numbers = new LinkedHashMap<>();
    numbers.put("mean_batch_size", byWorkload);
    String notes = """
        The vLLM paper's Fig. 13: the mean number of requests batched per iteration, OPT-13B on an
        A100-40GB with 12 GiB of KV memory, for ShareGPT at 2 requests/s and Alpaca at 30 requests/s,
        %,d requests each (seed 1). kvsim's number is `batch_size_mean` (sequences scheduled per
        iteration, averaged over iterations). The Alpaca lengths are the `alpaca` preset: the paper's
        means (19.31 prompt, 58.45 output tokens) with an assumed log-normal shape (Note [Alpaca
        preset] in LengthPreset). The figure's values are not transcribed in this repository,
        so that column says "not given".""".formatted(REQUESTS);
    return new Reproduction("vllm-fig13", "The vLLM paper's mean batch size (Fig. 13)", notes,
        List.of("workload", "system", "kvsim mean batch size", "published"), rows, numbers, List.of(), servings);
  }

  private static String f3(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
  }

  private static void progress(PrintWriter err, String line) {
    if (err != null) {
      err.println("kvsim: " + line);
      err.flush();
    }
  }
}

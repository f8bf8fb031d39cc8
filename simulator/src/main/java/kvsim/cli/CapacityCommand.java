package kvsim.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.report.CapacityResults;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.report.TextTable;
import kvsim.run.CapacitySearch;
import kvsim.run.ServingGrid;
import kvsim.run.ServingSpec;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim capacity}: the highest request rate at which each serving system meets latency targets. */
@Command(
    name = "capacity",
    mixinStandardHelpOptions = true,
    description = {
      "Find, per serving system, the highest request rate that meets every latency target: a bisection over the workload's arrival rate,",
      "each probe a full serving run of the same seed. WORKLOAD with a rate option (requests:…, lengths:FILE.csv,rate=…) gets each rate as that option;",
      "a recorded trace (azure:, mooncake:, burstgpt:, a request trace .jsonl) has its arrival times scaled so that its mean rate is the rate probed.",
      "A rate at which any request fails to finish (rejected, e.g. a prompt of max_model_len tokens, or aborted) does not meet the targets,",
      "unless --slo rejected.fraction<=F allows that share; each rate comes with its goodput and the requests not finished.",
      "Prints a table (or JSON with --json) and writes summary.json, probes.csv and capacity.png/.svg (latency against rate).",
      "With --set KEY=V1,V2,… (repeatable), every combination of the values is searched with every --system: one rate per cell."
    },
    footer = {"", "Exit status: 0 success, 1 run failed, 2 bad input or usage."})
final class CapacityCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "WORKLOAD", description = "A request generator spec (requests:preset=…,count=…), lengths:FILE.csv,rate=…, an importer spec (azure:FILE.csv, …) or a request trace file.")
  String workload;

  @CommandLine.Mixin ServingOptions options;

  @Option(names = "--slo", required = true, paramLabel = "TARGET",
      description = "A target, repeatable: a latency METRIC.STAT<=VALUE(s|ms) (METRIC ttft, tpot, e2e or normalized_latency; STAT mean, p50, p90 or p99;"
          + " e.g. normalized_latency.mean<=0.2s), or rejected.fraction<=F, the largest share of requests that may fail to finish"
          + " (rejected or aborted) at a rate that meets the targets. Default rejected.fraction<=0: a rate at which any request is rejected fails."
          + " Or per request METRIC<=VALUE(s|ms) (e.g. ttft<=1s) with attainment>=A: at least the share A of the requests finish within every"
          + " per-request limit (rejected and aborted ones count as missing; then no rejection target unless given). Per-request targets"
          + " without attainment mean attainment>=1. At least one latency or per-request target.")
  List<String> slos = new ArrayList<>();

  @Option(names = "--min-rate", paramLabel = "REQ_PER_S", defaultValue = "0.1", description = "Lowest rate probed (default: ${DEFAULT-VALUE}).")
  double minRate;

  @Option(names = "--max-rate", paramLabel = "REQ_PER_S", defaultValue = "50", description = "Highest rate probed (default: ${DEFAULT-VALUE}).")
  double maxRate;

  @Option(names = "--steps", paramLabel = "N", defaultValue = "8", description = "Bisection probes after the two bounds (default: ${DEFAULT-VALUE}).")
  int steps;

  @Option(names = "--json", description = "Print {\"systems\": {NAME: {\"max_rate_rps\": …, \"goodput_rps\": …, \"rejected_fraction\": …, \"probes\": […]}}} instead of the table.")
  boolean json;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default results/runs/<time>-capacity-<workload>); as for replay.")
  Path output;

  @Option(names = "--force", description = "Also replace a kvsim result folder into which files of your own were added.")
  boolean force;

  @CommandLine.Mixin QuietOption quiet;

  @CommandLine.Mixin NoReportOption report;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (steps < 0 || steps > 40) {
      throw new kvsim.core.InputException("--steps: must be in 0..40, got " + steps);
    }
    CapacitySearch.Targets targets = CapacitySearch.Targets.parse(slos);
    List<ServingGrid.Axis> axes = options.axes();
    List<ServingGrid.Cell> cells = ServingGrid.cells(options.request(workload), axes);
    ServingSpec s = cells.get(0).spec();
    ServingOptions.warnAboutCalibration(s, spec.commandLine().getErr());
    String name = "capacity-" + workload.replaceAll(".*/", "").replaceAll("[:,=]", "-").replaceAll("[^A-Za-z0-9._-]", "");
    ResultFolder.Target target = (output != null ? ResultFolder.Target.at(output, ResultFolder.Kind.CAPACITY, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.CAPACITY)).reading(Inputs.of(workload, s.workload().file())).withReport(report.report()).check();
    if (target.report()) {
      kvsim.report.ChartWarmUp.start(); // Note [Charts off the critical path] on report.ChartJobs
    }
    Progress lines = Progress.of(quiet.quiet, spec.commandLine().getErr(), "capacity", "probes");
    long[] seeds = options.seeds(workload);
    List<CapacitySearch.Capacity> result;
    CapacityResults results;
    java.util.concurrent.Callable<Path> writer; // the files after the table (Note [Charts off the critical path] on report.ChartJobs)
    Map<String, Map<String, Object>> intervals = Map.of();
    if (seeds != null) {
      kvsim.run.SeedRuns.Capacity run = kvsim.run.SeedRuns.capacity(seed -> options.request(workload, seed), workload, axes, seeds, targets, slos,
          minRate, maxRate, steps, lines == null ? null : lines::update);
      result = run.found();
      results = run.results();
      intervals = run.intervals();
      Map<String, Map<String, Object>> found = intervals;
      CapacityResults all = results;
      writer = () -> ResultsWriter.writeCapacity(target, all, found, tmp -> kvsim.core.AtomicFiles.write(tmp.resolve(kvsim.run.SeedRuns.PerSeed.FILE),
          o -> o.write(run.perSeed().csv().getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    } else {
      result = CapacitySearch.searchCells(cells, targets, minRate, maxRate, steps, lines == null ? null : lines::update);
      results = CapacitySearch.results(cells, axes, targets, slos, minRate, maxRate, steps, result);
      CapacityResults all = results;
      writer = () -> ResultsWriter.writeCapacity(target, all);
    }
    List<String> targetTexts = results.targets();
    if (json) {
      Map<String, Object> jsonSystems = new LinkedHashMap<>();
      for (CapacityResults.SystemEntry e : results.systems()) {
        Map<String, Object> js = ResultsWriter.capacityAnswer(e);
        js.remove("at_upper_bound");
        js.put("probes", e.probes().stream().map(ResultsWriter::capacityProbe).toList());
        if (intervals.containsKey(e.label())) {
          js.put("intervals", intervals.get(e.label()));
        }
        jsonSystems.put(e.label(), js);
      }
      out.println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(Map.of("systems", jsonSystems)));
    } else {
      List<String> written = new ArrayList<>(targetTexts);
      if (targets.perRequest().isEmpty() && !written.contains(targets.rejectedText())) {
        written.add(targets.rejectedText() + " (the default: every request must finish)");
      }
      if (CapacitySearch.Targets.ALL_REQUESTS.equals(targets.attainmentText())) {
        written.add(targets.attainmentText() + " (the default: every request meets the per-request targets)");
      }
      if (!targets.perRequest().isEmpty()) {
        written.add("rejected and aborted requests count as missing the per-request targets");
      }
      out.println("workload: " + (seeds != null ? workload + ", seeds " + options.seeds.trim() + " (" + seeds.length + " searches per system)"
          : s.workload().spec()) + "; targets: " + String.join(", ", written));
      List<String[]> table = new ArrayList<>();
      List<String> header = new ArrayList<>(ServingGrid.keys(axes));
      header.addAll(List.of("system", "max rate req/s", "goodput req/s", "not finished", "probes"));
      boolean attainment = !targets.perRequest().isEmpty();
      if (attainment) {
        header.add(header.size() - 1, "attainment");
      }
      table.add(header.toArray(String[]::new));
      List<String> notes = new ArrayList<>();
      for (int i = 0; i < result.size(); i++) {
        CapacitySearch.Capacity c = result.get(i);
        CapacitySearch.Probe a = c.answer();
        String r;
        if (c.rejectsAtLowBound()) {
          r = "none";
          notes.add(rejectionNote(axes.isEmpty() ? c.system() : cells.get(i).label(), a, targets));
        } else if (!c.anyMet()) {
          r = "< " + CapacitySearch.rate(minRate);
        } else {
          r = (c.atUpperBound() ? ">= " : "") + CapacitySearch.rate(c.maxRate());
        }
        List<String> row = new ArrayList<>(cells.get(i).settings().values());
        String goodput = c.anyMet() ? CapacitySearch.rate(a.goodputRps()) : "-";
        if (seeds != null && !c.rejectsAtLowBound()) { // the median seed's answer, with the interval over the seeds (README, "Seeds and intervals")
          Map<String, Map<String, Object>> in = kvsim.report.SeedTable.intervals(intervals.get(results.systems().get(i).label()));
          r = kvsim.report.SeedTable.cell(in.get("max_rate_rps"), CapacitySearch::rate);
          goodput = kvsim.report.SeedTable.cell(in.get("goodput_rps"), CapacitySearch::rate);
        }
        row.addAll(List.of(c.system(), r, goodput, notFinished(a), Integer.toString(c.probes().size())));
        if (attainment) {
          row.add(row.size() - 1, String.format(java.util.Locale.ROOT, "%.1f %%", 100 * a.attainment()));
        }
        table.add(row.toArray(String[]::new));
      }
      TextTable.print(out, table, axes.size() + 1);
      for (String n : notes) {
        out.println(n);
      }
      if (seeds != null) {
        out.println(kvsim.report.SeedTable.legend(kvsim.report.SeedTable.intervals(intervals.get(results.systems().get(0).label())))
            .replace("per_seed.csv", "per_seed.csv; other columns: the median seed's search"));
      }
      out.println();
    }
    // With --json, stdout holds the JSON alone; where the files went goes to stderr.
    PrintWriter where = json ? spec.commandLine().getErr() : out;
    out.flush();
    Path dir = writer.call();
    where.println("results: " + dir);
    where.flush();
    out.flush();
    return KvSim.EXIT_OK;
  }

  /** Returns {@code "416 of 1000 (41.6 %)"}, or {@code "0"}. */
  private static String notFinished(CapacitySearch.Probe p) {
    long n = p.requests() - p.finished();
    return n == 0 ? "0" : n + " of " + p.requests() + " (" + String.format(java.util.Locale.ROOT, "%.1f %%", 100 * p.rejectedFraction()) + ")";
  }

  /** Returns the line under the table for a system that rejects more than allowed at the low bound. */
  private static String rejectionNote(String label, CapacitySearch.Probe low, CapacitySearch.Targets targets) {
    double suggest = Math.ceil(low.rejectedFraction() * 100) / 100;
    return label + ": no rate meets " + targets.rejectedText() + ": " + notFinished(low) + " requests not finished at "
        + CapacitySearch.rate(low.rate()) + " req/s, the lowest rate probed (" + low.rejected() + " rejected on arrival, " + low.aborted()
        + " aborted); to count only the finished ones, allow that share with --slo 'rejected.fraction<="
        + String.format(java.util.Locale.ROOT, "%.2f", suggest) + "'";
  }
}

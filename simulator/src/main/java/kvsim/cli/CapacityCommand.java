package kvsim.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
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
      description = "A latency target METRIC.STAT<=VALUE(s|ms), repeatable: METRIC ttft, tpot, e2e or normalized_latency; STAT mean, p50, p90 or p99; e.g. normalized_latency.mean<=0.2s.")
  List<String> slos = new ArrayList<>();

  @Option(names = "--min-rate", paramLabel = "REQ_PER_S", defaultValue = "0.1", description = "Lowest rate probed (default: ${DEFAULT-VALUE}).")
  double minRate;

  @Option(names = "--max-rate", paramLabel = "REQ_PER_S", defaultValue = "50", description = "Highest rate probed (default: ${DEFAULT-VALUE}).")
  double maxRate;

  @Option(names = "--steps", paramLabel = "N", defaultValue = "8", description = "Bisection probes after the two bounds (default: ${DEFAULT-VALUE}).")
  int steps;

  @Option(names = "--json", description = "Print {\"systems\": {NAME: {\"max_rate_rps\": …, \"probes\": […]}}} instead of the table.")
  boolean json;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Result folder (default results/runs/<time>-capacity-<workload>); as for replay.")
  Path output;

  @Option(names = "--force", description = "Also replace a kvsim result folder into which files of your own were added.")
  boolean force;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (steps < 0 || steps > 40) {
      throw new kvsim.core.InputException("--steps: must be in 0..40, got " + steps);
    }
    List<CapacitySearch.Slo> targets = new ArrayList<>();
    for (String s : slos) {
      targets.add(CapacitySearch.Slo.parse(s));
    }
    List<ServingGrid.Axis> axes = options.axes();
    List<ServingGrid.Cell> cells = ServingGrid.cells(options.request(workload), axes);
    ServingSpec s = cells.get(0).spec();
    String name = "capacity-" + workload.replaceAll(".*/", "").replaceAll("[:,=]", "-").replaceAll("[^A-Za-z0-9._-]", "");
    ResultFolder.Target target = (output != null ? ResultFolder.Target.at(output, ResultFolder.Kind.CAPACITY, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.CAPACITY)).reading(Inputs.of(workload, s.workload().file())).check();
    List<CapacitySearch.Capacity> result = CapacitySearch.searchCells(cells, targets, minRate, maxRate, steps);

    List<String> columns = new ArrayList<>(List.of("system"));
    columns.addAll(ServingGrid.keys(axes));
    columns.addAll(List.of("rate_rps", "met", "finished", "rejected"));
    for (CapacitySearch.Slo t : targets) {
      columns.add(t.metric() + "_" + t.statistic() + "_seconds");
    }
    List<List<Object>> rows = new ArrayList<>();
    List<Map<String, Object>> systems = new ArrayList<>();
    Map<String, Object> jsonSystems = new LinkedHashMap<>();
    Map<String, List<double[]>> points = new LinkedHashMap<>();
    for (int i = 0; i < result.size(); i++) {
      CapacitySearch.Capacity c = result.get(i);
      ServingGrid.Cell cell = cells.get(i);
      String label = axes.isEmpty() ? c.system() : cell.label();
      List<Map<String, Object>> probes = new ArrayList<>();
      List<double[]> pts = new ArrayList<>();
      for (CapacitySearch.Probe p : c.probes()) {
        List<Object> row = new ArrayList<>(List.of(c.system()));
        row.addAll(cell.settings().values());
        row.addAll(List.of(p.rate(), p.met(), p.finished(), p.rejected()));
        row.addAll(p.values().values());
        rows.add(row);
        Map<String, Object> pm = new LinkedHashMap<>();
        pm.put("rate_rps", p.rate());
        pm.put("met", p.met());
        Map<String, Object> values = new LinkedHashMap<>();
        p.values().forEach((k, v) -> values.put(k, Double.isNaN(v) ? null : v));
        pm.put("values_seconds", values);
        probes.add(pm);
        pts.add(new double[] {p.rate(), p.values().get(targets.get(0).text())});
      }
      points.put(label, pts);
      Map<String, Object> sys = new LinkedHashMap<>();
      sys.put("system", c.system());
      if (!axes.isEmpty()) {
        sys.put("cell", new LinkedHashMap<>(cell.settings()));
        sys.put("kv_memory_bytes", cell.spec().kvMemoryBytes());
      }
      sys.put("max_rate_rps", c.maxRate());
      sys.put("at_upper_bound", c.atUpperBound());
      sys.put("probes", probes);
      systems.add(sys);
      Map<String, Object> js = new LinkedHashMap<>();
      js.put("max_rate_rps", c.maxRate());
      js.put("probes", probes);
      jsonSystems.put(label, js);
    }
    Map<String, Object> config = ServingGrid.configEcho(cells, axes);
    config.put("min_rate_rps", minRate);
    config.put("max_rate_rps", maxRate);
    config.put("steps", steps);
    if (!s.hasRateOption()) {
      config.put("trace_mean_rate_rps", s.recordedMeanRate());
    }
    List<Object> targetTexts = new ArrayList<>(slos.stream().map(String::strip).toList());
    Path dir = ResultsWriter.writeCapacity(target, config, targetTexts, systems, columns, rows, targets.get(0).text(), targets.get(0).limitSeconds(), points);
    if (json) {
      out.println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(Map.of("systems", jsonSystems)));
    } else {
      out.println("workload: " + s.workload().spec() + "; targets: " + String.join(", ", targetTexts.stream().map(Object::toString).toList()));
      List<String[]> table = new ArrayList<>();
      List<String> header = new ArrayList<>(ServingGrid.keys(axes));
      header.addAll(List.of("system", "max rate req/s", "probes"));
      table.add(header.toArray(String[]::new));
      for (int i = 0; i < result.size(); i++) {
        CapacitySearch.Capacity c = result.get(i);
        String r = c.maxRate() == 0 ? "< " + CapacitySearch.rate(minRate) : (c.atUpperBound() ? ">= " : "") + CapacitySearch.rate(c.maxRate());
        List<String> row = new ArrayList<>(cells.get(i).settings().values());
        row.addAll(List.of(c.system(), r, Integer.toString(c.probes().size())));
        table.add(row.toArray(String[]::new));
      }
      TextTable.print(out, table, axes.size() + 1);
      out.println();
    }
    // With --json, stdout holds the JSON alone; where the files went goes to stderr.
    PrintWriter where = json ? spec.commandLine().getErr() : out;
    where.println("results: " + dir);
    where.flush();
    out.flush();
    return KvSim.EXIT_OK;
  }
}

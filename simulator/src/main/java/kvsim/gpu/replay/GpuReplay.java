package kvsim.gpu.replay;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.gpu.device.DeviceInfo;
import kvsim.gpu.device.GpuDevice;
import kvsim.gpu.plan.Plan;
import kvsim.gpu.plan.PlanOp;
import kvsim.gpu.plan.Planner;
import kvsim.metrics.AllocatorResult;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsWriter;
import kvsim.run.RunResult;
import kvsim.run.RunSpec;
import kvsim.run.Runner;
import kvsim.trace.EventSource;

/**
 * {@code kvsim gpu replay}'s library side (README, "gpu replay"; {@code results/SCHEMA.md}): plans
 * a replay ({@link Planner}), simulates the same workload on the model as {@code kvsim replay}
 * does, runs the plan on a device ({@link Executor}), and writes a replay result folder with the
 * measured files beside the simulated ones, so that {@code kvsim report} reads it.
 *
 * <p>Note [Measured beside modelled]: the simulated run's {@code summary.json}, {@code
 * timeseries.csv} and charts are those of {@code kvsim replay} on the same workload and allocator
 * (in raw mode, {@code --allocator}, by default {@code first-fit}, stands for the device's own
 * allocator). {@code gpu-comparison.csv} puts each measured figure beside the model's: the refusals
 * ({@code oom_count}), the peak and final external fragmentation (the device's from its probes),
 * and the time per allocator call: measured, the median and p99 wall time of the timed calls of
 * the mode's kind (raw: {@code alloc}/{@code free}; arena: every timed call); modelled, {@code
 * modelled_allocator_nanos} over the model's allocations and frees.
 */
public final class GpuReplay {
  /** The {@code format} of {@code gpu-replay.json}. */
  public static final String FORMAT = "kvsim-gpu-replay";
  /** The plan file. */
  public static final String PLAN_FILE = "plan.jsonl";
  /** The measured and modelled figures side by side. */
  public static final String COMPARISON_FILE = kvsim.report.HtmlReport.GPU_COMPARISON_FILE;
  /** Every timed device call. */
  public static final String CALLS_FILE = "gpu-calls.csv";
  /** Every fragmentation probe. */
  public static final String PROBES_FILE = "gpu-probes.csv";
  /** The device and the run's setting. */
  public static final String REPLAY_FILE = "gpu-replay.json";

  /** The step of the probes' bisection: 2 MiB. */
  public static final long PROBE_GRANULARITY_BYTES = 2L << 20;
  /** The most allocate-and-free steps of one probe. */
  public static final int MAX_PROBE_STEPS = 40;

  private GpuReplay() {}

  /**
   * What to replay.
   *
   * @param spec the resolved run (workload, device preset, the allocator to model)
   * @param arena whether the mode is arena (else raw)
   * @param probeEvery events between fragmentation probes
   */
  public record Setting(RunSpec spec, boolean arena, long probeEvery) {
    /** Returns the allocator modelled (the spec's first). */
    public String allocator() {
      return spec.allocators().get(0);
    }

    /** Returns {@code raw} or {@code arena}. */
    public String mode() {
      return arena ? "arena" : "raw";
    }
  }

  /** Plans the replay for a device whose page granularity is {@code granularityBytes} (0: the planner's default). */
  public static Plan plan(Setting s, long granularityBytes) throws IOException {
    long g = granularityBytes > 0 ? granularityBytes : Planner.DEFAULT_GRANULARITY_BYTES;
    RunSpec spec = s.spec();
    try (EventSource source = spec.workload().open(spec.model(), spec.device())) {
      if (s.arena()) {
        return Planner.arena(
            spec.newAllocator(s.allocator()), source, spec.workload().spec(), spec.plan().testedRegion().sizeBytes(), g, s.probeEvery());
      }
      return Planner.raw(source, spec.workload().spec(), s.probeEvery());
    }
  }

  /** Plans, simulates, runs on {@code device} and writes the folder; returns it. */
  public static Path run(Setting s, GpuDevice device, ResultFolder.Target target, String kvsimVersion) throws IOException {
    DeviceInfo info = device.info();
    Plan plan = plan(s, info.vmmGranularityBytes());
    RunResult simulated = new Runner(kvsimVersion, 1).run(s.spec(), name -> null, null);
    Executor.Result measured = new Executor(device, PROBE_GRANULARITY_BYTES, MAX_PROBE_STEPS).run(plan);
    AllocatorResult model = simulated.results().get(0);
    List<String[]> comparison = comparison(s.arena(), measured, model);
    Map<String, Object> replay = new LinkedHashMap<>();
    replay.put("format", FORMAT);
    replay.put("version", 1);
    replay.put("mode", s.mode());
    replay.put("allocator", s.allocator());
    Map<String, Object> dev = new LinkedHashMap<>();
    dev.put("name", info.name());
    dev.put("driver_version", info.driverVersion());
    dev.put("cuda_version", info.cudaVersion());
    dev.put("total_bytes", info.totalBytes());
    dev.put("vmm_granularity_bytes", info.vmmGranularityBytes());
    dev.put("compute_capability", info.computeCapability());
    replay.put("device", dev);
    replay.put("plan_ops", plan.ops().size());
    replay.put("events", plan.events());
    replay.put("oom_count", measured.oomCount());
    replay.put("skipped_count", measured.skippedCount());
    replay.put("wall_nanos", measured.wallNanos());
    return ResultsWriter.write(target, simulated.config(), simulated.results(), simulated.timings(), simulated.memoryMaps(), dir -> {
      writeText(dir.resolve(PLAN_FILE), plan.toJsonLines());
      ResultsWriter.json().writeValue(dir.resolve(REPLAY_FILE).toFile(), replay);
      StringBuilder csv = new StringBuilder("metric,measured,modelled\n");
      for (String[] row : comparison) {
        csv.append(String.join(",", row)).append('\n');
      }
      writeText(dir.resolve(COMPARISON_FILE), csv.toString());
      StringBuilder calls = new StringBuilder("op_index,op,event,size_bytes,nanos,refused\n");
      for (Executor.Call c : measured.calls()) {
        calls.append(c.opIndex()).append(',').append(c.kind().label()).append(',').append(c.event()).append(',')
            .append(c.sizeBytes()).append(',').append(c.nanos()).append(',').append(c.refused()).append('\n');
      }
      writeText(dir.resolve(CALLS_FILE), calls.toString());
      StringBuilder probes = new StringBuilder("event,free_bytes,largest_bytes,external_fragmentation\n");
      for (Executor.Probe p : measured.probes()) {
        probes.append(p.event()).append(',').append(p.freeBytes()).append(',').append(p.largestBytes()).append(',')
            .append(num(p.fragmentation())).append('\n');
      }
      writeText(dir.resolve(PROBES_FILE), probes.toString());
    });
  }

  /** Note [Measured beside modelled]. */
  static List<String[]> comparison(boolean arena, Executor.Result measured, AllocatorResult model) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"oom_count", Long.toString(measured.oomCount()), Long.toString(model.counters().getOrDefault("oom_count", 0L))});
    double peak = 0;
    double last = 0;
    for (Executor.Probe p : measured.probes()) {
      peak = Math.max(peak, p.fragmentation());
      last = p.fragmentation();
    }
    var frag = model.summaries().get("external_fragmentation");
    rows.add(new String[] {"peak_external_fragmentation", num(peak), frag == null ? "" : num(frag.peak())});
    rows.add(new String[] {"final_external_fragmentation", num(last), frag == null ? "" : num(frag.last())});
    long[] nanos = measured.calls().stream()
        .filter(c -> arena || c.kind() == PlanOp.Kind.ALLOC || c.kind() == PlanOp.Kind.FREE)
        .filter(c -> c.event() > 0)
        .mapToLong(Executor.Call::nanos)
        .sorted()
        .toArray();
    long modelCalls = model.counters().getOrDefault("alloc_count", 0L) + model.counters().getOrDefault("free_count", 0L);
    String modelled = modelCalls == 0 ? "" : num((double) model.modelledAllocatorNanos() / modelCalls);
    rows.add(new String[] {"call_nanos_median", nanos.length == 0 ? "" : Long.toString(quantile(nanos, 0.5)), modelled});
    rows.add(new String[] {"call_nanos_p99", nanos.length == 0 ? "" : Long.toString(quantile(nanos, 0.99)), ""});
    rows.add(new String[] {"allocator_nanos_total", Long.toString(Arrays.stream(nanos).sum()), Long.toString(model.modelledAllocatorNanos())});
    return rows;
  }

  /** The nearest-rank quantile of sorted values. */
  static long quantile(long[] sorted, double q) {
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  private static String num(Double v) {
    return v == null ? "" : String.format(Locale.ROOT, "%.6f", v);
  }

  private static void writeText(Path file, String text) throws IOException {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write(text);
    }
  }
}

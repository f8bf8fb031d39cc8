package kvsim.tune;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.run.CapacitySearch;
import kvsim.run.Parallel;
import kvsim.run.ServingGrid;
import kvsim.run.ServingSpec;

/**
 * The search of {@code kvsim tune WORKLOAD --system S --slo …}: which serving settings let one
 * system sustain the highest request rate within the SLO (each cell a {@link CapacitySearch} of its
 * own, as {@code kvsim capacity} runs it), or, with a given rate, which need the least KV memory to
 * meet the SLO at that rate (each cell one probe at the rate).
 *
 * <p>The settings are the serving settings of vLLM's command line that kvsim models ({@code
 * config.ServingSettings}): block size, GPU memory utilization (the KV memory share; not searched
 * when {@code --kv-memory} fixes the KV memory), max_num_seqs, max_num_batched_tokens (vLLM v1's
 * chunked-prefill token budget: v1 always chunks prefills, so there is no switch to search) and v1's
 * scheduler settings {@code scheduler-reserve-full-isl} and {@code async-scheduling}; each only for
 * a system that reads it. Defaults are vLLM's.
 *
 * <p>Note [Coordinate search of serving settings]: a full cross of six settings is hundreds of
 * capacity searches, each of ten or more serving runs; the default search is one setting at a time
 * instead: the default, then every other value of each setting with the rest at their defaults,
 * then the combination of each setting's best value (when it differs from every cell run), and, with
 * {@code --rate}, the memory values again under that combination. About 15 cells, which a
 * two-core machine runs in minutes on the paper's setup. It misses interactions that only show
 * when two settings change together and the one-at-a-time cells do not point to; {@code --grid
 * full} crosses every value (within {@code --budget} cells) for that.
 */
public final class ServingTuner {
  private ServingTuner() {}

  /**
   * One searched setting.
   *
   * @param key the serving setting's name ({@code block-size})
   * @param defaultValue vLLM's default
   * @param values the values tried, the default among them
   * @param flag how vLLM's command line sets it ({@code --block-size})
   */
  public record Axis(String key, String defaultValue, List<String> values, String flag) {}

  /**
   * What to search.
   *
   * @param base the workload, the system and the fixed settings (model, device, KV memory)
   * @param targets the SLO
   * @param rate the rate to meet with the least memory, or null to find the highest rate
   * @param minRate the capacity search's lowest rate
   * @param maxRate its highest
   * @param steps its bisection steps
   * @param full whether to cross every value
   * @param budget the most cells
   * @param memoryFixed whether the KV memory is given (so gpu-memory-utilization is not searched)
   */
  public record Request(ServingSpec.Request base, CapacitySearch.Targets targets, Double rate, double minRate, double maxRate, int steps, boolean full,
      int budget, boolean memoryFixed) {}

  /**
   * One cell.
   *
   * @param order position in the order run
   * @param phase {@code axes}, {@code combined}, {@code memory} or {@code grid}
   * @param setting every axis's value
   * @param kvMemoryBytes the KV memory the setting gives
   * @param maxRateRps the highest rate met (capacity mode; 0 for none), or the rate given
   * @param met whether some rate (or the given rate) met the SLO
   * @param goodputRps the goodput at that rate
   * @param firstTargetSeconds the first latency target's value at that rate, or NaN
   * @param probes serving runs made
   */
  public record Cell(int order, String phase, Map<String, String> setting, long kvMemoryBytes, double maxRateRps, boolean met, double goodputRps,
      double firstTargetSeconds, int probes) {}

  /**
   * The search's answer.
   *
   * @param axes the settings searched
   * @param cells every cell in the order run
   * @param defaults vLLM's defaults' cell
   * @param best the recommended cell
   * @param runnerUp the second-ranked cell, or null when only one ran
   */
  public record Outcome(List<Axis> axes, List<Cell> cells, Cell defaults, Cell best, Cell runnerUp) {}

  /** Returns the settings searched for the request's system: those it reads. */
  public static List<Axis> axes(Request req) {
    List<Axis> all = new ArrayList<>();
    all.add(new Axis("block-size", "16", List.of("8", "16", "32"), "--block-size"));
    if (!req.memoryFixed()) {
      all.add(new Axis("gpu-memory-utilization", "0.9",
          req.rate() == null ? List.of("0.8", "0.85", "0.9", "0.95") : List.of("0.5", "0.6", "0.7", "0.8", "0.85", "0.9", "0.95"), "--gpu-memory-utilization"));
    }
    all.add(new Axis("max-num-seqs", "256", List.of("64", "128", "256", "512"), "--max-num-seqs"));
    all.add(new Axis("max-num-batched-tokens", "2048", List.of("1024", "2048", "4096", "8192"), "--max-num-batched-tokens"));
    all.add(new Axis("scheduler-reserve-full-isl", "true", List.of("true", "false"), "--scheduler-reserve-full-isl"));
    all.add(new Axis("async-scheduling", "true", List.of("true", "false"), "--async-scheduling"));
    List<Axis> read = new ArrayList<>();
    for (Axis a : all) {
      try {
        ServingGrid.cells(req.base(), List.of(new ServingGrid.Axis(a.key(), List.of(a.defaultValue()))));
        read.add(a);
      } catch (InputException e) {
        if (!e.getMessage().contains("does not read")) {
          throw e;
        }
      }
    }
    return read;
  }

  /** Told how many cells are done. */
  @FunctionalInterface
  public interface Progress {
    void update(int done, int total);
  }

  /** Runs the search. */
  public static Outcome run(Request req, Progress progress) throws IOException {
    List<Axis> axes = axes(req);
    Map<String, String> defaults = new LinkedHashMap<>();
    axes.forEach(a -> defaults.put(a.key(), a.defaultValue()));
    List<Cell> cells = new ArrayList<>();
    if (req.full()) {
      List<Map<String, String>> grid = new ArrayList<>();
      grid.add(new LinkedHashMap<>());
      for (Axis a : axes) {
        List<Map<String, String>> next = new ArrayList<>();
        for (Map<String, String> g : grid) {
          for (String v : a.values()) {
            Map<String, String> m = new LinkedHashMap<>(g);
            m.put(a.key(), v);
            next.add(m);
          }
        }
        grid = next;
      }
      requireBudget(req, grid.size(), "the full grid");
      grid.remove(defaults);
      grid.add(0, defaults);
      evaluate(req, grid, "grid", cells, progress);
    } else {
      List<Map<String, String>> first = new ArrayList<>();
      first.add(defaults);
      for (Axis a : axes) {
        for (String v : a.values()) {
          if (!v.equals(a.defaultValue())) {
            Map<String, String> m = new LinkedHashMap<>(defaults);
            m.put(a.key(), v);
            first.add(m);
          }
        }
      }
      requireBudget(req, first.size() + 1 + (req.rate() == null ? 0 : 7), "the coordinate search");
      evaluate(req, first, "axes", cells, progress);
      Comparator<Cell> objective = objective(req, axes);
      Map<String, String> combined = new LinkedHashMap<>();
      for (Axis a : axes) {
        Cell bestOfAxis = cells.stream().filter(c -> differsAtMostIn(c.setting(), defaults, a.key())).min(objective).orElseThrow();
        combined.put(a.key(), bestOfAxis.setting().get(a.key()));
      }
      evaluate(req, untried(List.of(combined), cells), "combined", cells, progress);
      if (req.rate() != null && !req.memoryFixed()) {
        Map<String, String> at = new LinkedHashMap<>(cells.stream().min(objective).orElseThrow().setting());
        List<Map<String, String>> memory = new ArrayList<>();
        for (String v : axes.stream().filter(a -> a.key().equals("gpu-memory-utilization")).findFirst().orElseThrow().values()) {
          Map<String, String> m = new LinkedHashMap<>(at);
          m.put("gpu-memory-utilization", v);
          memory.add(m);
        }
        evaluate(req, untried(memory, cells), "memory", cells, progress);
      }
    }
    List<Cell> ranked = cells.stream().sorted(objective(req, axes)).toList();
    Cell def = cells.stream().filter(c -> c.setting().equals(defaults)).findFirst().orElseThrow();
    return new Outcome(axes, cells, def, ranked.get(0), ranked.size() > 1 ? ranked.get(1) : null);
  }

  private static void requireBudget(Request req, int cells, String what) {
    if (cells > req.budget()) {
      throw new InputException("--budget " + req.budget() + ": " + what + " has " + cells + " cells; raise --budget to run it");
    }
  }

  private static boolean differsAtMostIn(Map<String, String> s, Map<String, String> defaults, String key) {
    for (Map.Entry<String, String> e : s.entrySet()) {
      if (!e.getKey().equals(key) && !e.getValue().equals(defaults.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  private static List<Map<String, String>> untried(List<Map<String, String>> settings, List<Cell> cells) {
    return settings.stream().filter(s -> cells.stream().noneMatch(c -> c.setting().equals(s))).toList();
  }

  /**
   * The ranking: with no rate given, the highest sustained rate, then the highest goodput there;
   * with a rate, meeting it, then the least memory, then the lowest value of the first latency
   * target; then the least memory, fewer settings changed, the cell run first. Memory is the share
   * of the device asked for ({@code gpu-memory-utilization}, what vLLM reserves), not the KV memory
   * left of it: a larger {@code max-num-batched-tokens} leaves less KV memory in the same share.
   */
  static Comparator<Cell> objective(Request req, List<Axis> axes) {
    Comparator<Cell> c = req.rate() == null
        ? Comparator.<Cell>comparingDouble(x -> -x.maxRateRps()).thenComparingDouble(x -> -x.goodputRps())
        : Comparator.<Cell>comparingInt(x -> x.met() ? 0 : 1).thenComparingDouble(ServingTuner::share)
            .thenComparingDouble(x -> Double.isNaN(x.firstTargetSeconds()) ? Double.MAX_VALUE : x.firstTargetSeconds());
    return c.thenComparingDouble(ServingTuner::share).thenComparingInt(x -> changed(axes, x.setting())).thenComparingInt(Cell::order);
  }

  /** The share of the device a cell asks for; 0 where the KV memory is fixed (not searched). */
  private static double share(Cell c) {
    String v = c.setting().get("gpu-memory-utilization");
    return v == null ? 0 : Double.parseDouble(v);
  }

  private static int changed(List<Axis> axes, Map<String, String> s) {
    int n = 0;
    for (Axis a : axes) {
      n += s.get(a.key()).equals(a.defaultValue()) ? 0 : 1;
    }
    return n;
  }

  private static void evaluate(Request req, List<Map<String, String>> settings, String phase, List<Cell> cells, Progress progress) throws IOException {
    if (settings.isEmpty()) {
      return;
    }
    List<ServingGrid.Cell> specs = new ArrayList<>();
    for (Map<String, String> s : settings) {
      List<ServingGrid.Axis> one = new ArrayList<>();
      s.forEach((k, v) -> one.add(new ServingGrid.Axis(k, List.of(v))));
      specs.addAll(ServingGrid.cells(req.base(), one));
    }
    int base = cells.size();
    int[] done = {0};
    if (req.rate() == null) {
      List<CapacitySearch.Capacity> found = CapacitySearch.searchCells(specs, req.targets(), req.minRate(), req.maxRate(), req.steps(),
          progress == null ? null : (d, planned) -> progress.update(d, planned));
      for (int i = 0; i < specs.size(); i++) {
        CapacitySearch.Capacity c = found.get(i);
        CapacitySearch.Probe a = c.answer();
        cells.add(new Cell(base + i, phase, settings.get(i), specs.get(i).spec().kvMemoryBytes(), c.maxRate(), c.anyMet(), c.anyMet() ? a.goodputRps() : 0,
            first(a), c.probes().size()));
      }
    } else {
      double rate = req.rate();
      List<CapacitySearch.Probe> probes = Parallel.map(specs.size(), Runtime.getRuntime().availableProcessors(), i -> {
        CapacitySearch.Probe p = CapacitySearch.probeAt(specs.get(i).spec(), req.targets(), rate);
        if (progress != null) {
          synchronized (done) {
            progress.update(++done[0], specs.size());
          }
        }
        return p;
      });
      for (int i = 0; i < specs.size(); i++) {
        CapacitySearch.Probe p = probes.get(i);
        cells.add(new Cell(base + i, phase, settings.get(i), specs.get(i).spec().kvMemoryBytes(), rate, p.met(), p.goodputRps(), first(p), 1));
      }
    }
  }

  private static double first(CapacitySearch.Probe p) {
    return p.values().isEmpty() ? Double.NaN : p.values().values().iterator().next();
  }

  /**
   * Returns a setting as vLLM's command line: {@code vllm serve MODEL --block-size 16 …}, every
   * setting searched, booleans as {@code --flag} / {@code --no-flag}.
   */
  public static String commandLine(String model, List<Axis> axes, Map<String, String> setting) {
    StringBuilder sb = new StringBuilder("vllm serve ").append(model);
    for (Axis a : axes) {
      String v = setting.get(a.key());
      if (v.equals("true")) {
        sb.append(' ').append(a.flag());
      } else if (v.equals("false")) {
        sb.append(" --no-").append(a.flag().substring(2));
      } else {
        sb.append(' ').append(a.flag()).append(' ').append(v);
      }
    }
    return sb.toString();
  }

  /** Returns a rate as the tables write it. */
  public static String rate(Cell c, Request req) {
    if (req.rate() != null) {
      return c.met() ? "meets " + CapacitySearch.rate(c.maxRateRps()) : "misses " + CapacitySearch.rate(c.maxRateRps());
    }
    if (!c.met()) {
      return "< " + CapacitySearch.rate(req.minRate());
    }
    return (c.maxRateRps() >= req.maxRate() ? ">= " : "") + CapacitySearch.rate(c.maxRateRps());
  }

  /** Returns a value in seconds as {@code 0.184 s}, or {@code -}. */
  public static String seconds(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3f s", v);
  }
}

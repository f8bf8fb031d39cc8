package kvsim.tune;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.report.SweepTable;
import kvsim.report.TuneResults;
import kvsim.run.GridSweep;

/**
 * The search of {@code kvsim tune WORKLOAD --allocator NAME}: which settings of one allocator serve
 * a recorded run best. Every setting tried is a cell of the sweep engine ({@link GridSweep}: this
 * machine's cores, or Spark), stored in the result folder's {@code cells/} as a sweep stores its
 * cells, so a second run on the same folder runs only the cells it has no result for.
 *
 * <p>The objective is lexicographic (Note [What "best" means]): no OOM first (then fewer OOMs),
 * then the lowest peak reserved bytes, then the lowest modelled allocator time; ties go to the
 * setting that changes fewer options, then to the one tried first. The recommendation is the
 * simplest setting as good as the best within 1 % of its allocator time (Note [The simpler of
 * equals]).
 *
 * <p>Note [Grid, then refinement]: the search runs the grid of every axis's grid values ({@link
 * TuneSpace.Axis#grid}; for pytorch-caching 2 × 7 × 6 = 84 cells), then a local search on the
 * axes' finer ladders: each round runs every one-step neighbour of the best cell so far on each
 * axis's ladder (one axis changed at a time, all of a round's cells at once on the engine), moves
 * to the best of them if it beats the best so far, and stops when a round improves nothing or has
 * no untried neighbour (at most {@link #MAX_ROUNDS} rounds). Where an axis's grid is its whole
 * ladder (the other allocators' options), the refinement has nothing to add.
 *
 * <p>Note [What "best" means]: a user who asks "which settings" first wants the run not to fail
 * (an OOM ends a PyTorch job), then the least memory it needs (what a larger batch or a smaller GPU
 * can use), and only then speed: the caching allocator's settings change the driver calls
 * (cudaMalloc, cudaFree, page maps), which the model times, but rarely by enough to matter against
 * memory. The Pareto front of the cells without OOM (peak reserved against allocator time) shows
 * what a user trading one for the other can have.
 */
public final class AllocatorTuner {
  /** The most refinement rounds. */
  public static final int MAX_ROUNDS = 8;

  private static final ObjectMapper JSON = new ObjectMapper();

  private AllocatorTuner() {}

  /**
   * What to search.
   *
   * @param workload the workload the cells replay (a trace path, or a generator spec)
   * @param gridDir the folder a relative workload is resolved against
   * @param device the device or size, or null for the default
   * @param space the allocator's search space
   * @param config what tune.json echoes as the run's configuration (input as given, device, grid)
   */
  public record Request(String workload, Path gridDir, String device, TuneSpace space, Map<String, Object> config) {}

  /** Told how many cells of a round are done. */
  @FunctionalInterface
  public interface Progress {
    void update(int done, int total);
  }

  /**
   * One evaluated setting.
   *
   * @param order position in the order tried
   * @param phase {@code grid} or {@code refine-N}
   * @param setting every axis's value
   * @param row the cell's stored row (the run's summary metrics)
   */
  record Tried(int order, String phase, Map<String, String> setting, JsonNode row) {
    long ooms() {
      return row.path("oom_count").asLong();
    }

    long peakReserved() {
      return row.path("reserved_bytes.peak").asLong();
    }

    long allocatorNanos() {
      return row.path("modelled_allocator_nanos").asLong();
    }
  }

  /**
   * Runs the search into the resumable folder {@code dir} (whose {@code cells/} exists) on {@code
   * engine} and returns its results; {@code ran[0]} receives the number of cells run now (the
   * others were stored).
   */
  public static TuneResults run(Request req, GridSweep.Engine engine, Path dir, Progress progress, int[] ran) throws IOException {
    TuneSpace space = req.space();
    Map<String, Tried> tried = new LinkedHashMap<>();
    List<Map<String, String>> grid = new ArrayList<>();
    grid.add(space.defaults()); // the default first, so that it is always a cell
    cross(space.axes(), 0, new LinkedHashMap<>(), grid);
    evaluate(req, engine, dir, dedupe(grid, tried), "grid", tried, progress, ran);
    int gridCells = tried.size();
    Tried best = best(tried.values(), space);
    int rounds = 0;
    while (rounds < MAX_ROUNDS) {
      List<Map<String, String>> next = dedupe(neighbours(space, best.setting()), tried);
      if (next.isEmpty()) {
        break;
      }
      rounds++;
      evaluate(req, engine, dir, next, "refine-" + rounds, tried, progress, ran);
      Tried b = best(tried.values(), space);
      if (b == best) {
        break;
      }
      best = b;
    }
    return results(req, tried, gridCells, rounds, best);
  }

  private static void cross(List<TuneSpace.Axis> axes, int i, Map<String, String> partial, List<Map<String, String>> out) {
    if (i == axes.size()) {
      out.add(new LinkedHashMap<>(partial));
      return;
    }
    for (String v : axes.get(i).grid()) {
      partial.put(axes.get(i).name(), v);
      cross(axes, i + 1, partial, out);
    }
    partial.remove(axes.get(i).name());
  }

  /** The settings not tried yet, each once, in order. */
  private static List<Map<String, String>> dedupe(List<Map<String, String>> settings, Map<String, Tried> tried) {
    Set<Map<String, String>> seen = new LinkedHashSet<>();
    for (Map<String, String> s : settings) {
      if (!tried.containsKey(s.toString())) {
        seen.add(s);
      }
    }
    return new ArrayList<>(seen);
  }

  /** Every setting one ladder step from {@code s} on one axis, axis by axis, the lower step first. */
  static List<Map<String, String>> neighbours(TuneSpace space, Map<String, String> s) {
    List<Map<String, String>> out = new ArrayList<>();
    for (TuneSpace.Axis a : space.axes()) {
      int i = a.ladder().indexOf(s.get(a.name()));
      if (i < 0) {
        continue;
      }
      for (int j : new int[] {i - 1, i + 1}) {
        if (j >= 0 && j < a.ladder().size()) {
          Map<String, String> n = new LinkedHashMap<>(s);
          n.put(a.name(), a.ladder().get(j));
          out.add(n);
        }
      }
    }
    return out;
  }

  /** Runs the settings' cells that have no stored row, then reads every one's row. */
  private static void evaluate(Request req, GridSweep.Engine engine, Path dir, List<Map<String, String>> settings, String phase,
      Map<String, Tried> tried, Progress progress, int[] ran) throws IOException {
    if (settings.isEmpty()) {
      return;
    }
    TuneSpace space = req.space();
    List<GridSweep.Cell> cells = new ArrayList<>();
    List<GridSweep.Cell> todo = new ArrayList<>();
    Map<String, List<String>> sets = new LinkedHashMap<>();
    for (Map<String, String> s : settings) {
      GridSweep.Cell c = cell(req, s, cells.size());
      cells.add(c);
      if (SweepTable.storedRow(dir, c.key()) == null) {
        todo.add(c);
        space.cellOptions(s).forEach((k, v) -> {
          List<String> values = sets.computeIfAbsent(k, x -> new ArrayList<>());
          if (!values.contains(v)) {
            values.add(v);
          }
        });
      }
    }
    if (!todo.isEmpty()) {
      int[] done = {0};
      engine.run(gridFile(req, sets), todo, (cell, row) -> {
        SweepTable.storeRow(dir, cell.key(), row);
        done[0]++;
        if (progress != null) {
          progress.update(done[0], todo.size());
        }
      });
      ran[0] += todo.size();
    }
    for (int i = 0; i < settings.size(); i++) {
      String row = SweepTable.storedRow(dir, cells.get(i).key());
      if (row == null) {
        throw new IllegalStateException("cell " + cells.get(i).key() + " has no stored row");
      }
      tried.put(settings.get(i).toString(), new Tried(tried.size(), phase, settings.get(i), JSON.readTree(row)));
    }
  }

  /** The sweep cell of a setting, its parameters in the order of {@link GridSweep#cells}. */
  static GridSweep.Cell cell(Request req, Map<String, String> setting, int index) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("workload", req.workload());
    if (req.device() != null) {
      p.put("device", req.device());
    }
    p.putAll(req.space().cellOptions(setting));
    p.put("allocator", req.space().allocator());
    return new GridSweep.Cell(index, p);
  }

  /** The grid file of one round's cells: the workload, the allocator, the device and each option's values. */
  static GridSweep.GridFile gridFile(Request req, Map<String, List<String>> sets) {
    Map<String, Object> g = new LinkedHashMap<>();
    g.put("workloads", List.of(req.workload()));
    g.put("allocators", List.of(req.space().allocator()));
    if (req.device() != null) {
      g.put("device", List.of(req.device()));
    }
    g.put("set", sets);
    try {
      return new GridSweep.GridFile("tune", JSON.writerWithDefaultPrettyPrinter().writeValueAsString(g), req.gridDir().toAbsolutePath().toString());
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The objective of Note [What "best" means], ties to fewer changed options, then the order tried. */
  static Comparator<Tried> objective(TuneSpace space) {
    return Comparator.<Tried>comparingInt(t -> t.ooms() > 0 ? 1 : 0)
        .thenComparingLong(Tried::ooms)
        .thenComparingLong(Tried::peakReserved)
        .thenComparingLong(Tried::allocatorNanos)
        .thenComparingInt(t -> space.changed(t.setting()))
        .thenComparingInt(Tried::order);
  }

  private static Tried best(java.util.Collection<Tried> all, TuneSpace space) {
    return all.stream().min(objective(space)).orElseThrow();
  }

  /**
   * The Pareto front of the cells without OOM: those no other such cell beats on both peak
   * reserved bytes and allocator time (of equal points, the one the objective ranks first).
   */
  static List<Tried> front(java.util.Collection<Tried> all, TuneSpace space) {
    List<Tried> ok = all.stream().filter(t -> t.ooms() == 0).sorted(objective(space)).toList();
    List<Tried> out = new ArrayList<>();
    long bestNanos = Long.MAX_VALUE;
    for (Tried t : ok) {
      if (t.allocatorNanos() < bestNanos) {
        out.add(t);
        bestNanos = t.allocatorNanos();
      }
    }
    return out;
  }

  /** Allocator times within this share of the best's count as equal when choosing the recommendation (Note [The simpler of equals]). */
  static final double TIME_TOLERANCE = 0.01;

  /**
   * Returns the recommendation: of the cells with the best's OOMs and peak reserved bytes and an
   * allocator time within {@link #TIME_TOLERANCE} of its, the one that changes fewest options
   * (then the faster, then the one tried first).
   *
   * <p>Note [The simpler of equals]: on a real snapshot the lexicographic best often differs from
   * a simpler setting only by a key that saves a tenth of a percent of modelled allocator time
   * (cs336_nothanmin on 21.5 GiB: expandable_segments:True with roundup_power2_divisions:16 at
   * 108.945 ms, expandable_segments:True alone at 109.045 ms, the same peak). The model's times are
   * not that exact, and every key pasted is one more to maintain, so the recommendation is the
   * simplest setting within 1 % of the best time at the same OOMs and peak.
   */
  static Tried recommend(java.util.Collection<Tried> all, Tried best, TuneSpace space) {
    return all.stream()
        .filter(t -> t.ooms() == best.ooms() && t.peakReserved() == best.peakReserved()
            && t.allocatorNanos() <= best.allocatorNanos() + TIME_TOLERANCE * best.allocatorNanos())
        .min(Comparator.<Tried>comparingInt(t -> space.changed(t.setting())).thenComparingLong(Tried::allocatorNanos).thenComparingInt(Tried::order))
        .orElseThrow();
  }

  private static TuneResults results(Request req, Map<String, Tried> tried, int gridCells, int rounds, Tried lexicographicBest) {
    TuneSpace space = req.space();
    Tried best = recommend(tried.values(), lexicographicBest, space);
    List<Tried> front = front(tried.values(), space);
    List<Tried> ranked = new ArrayList<>(tried.values().stream().sorted(objective(space)).toList());
    ranked.remove(best);
    ranked.add(0, best);
    List<TuneResults.Cell> cells = new ArrayList<>();
    for (Tried t : tried.values()) {
      cells.add(new TuneResults.Cell(t.order(), t.phase(), t.setting(), space.label(t.setting()), t.ooms(), t.peakReserved(),
          t.row().path("allocated_bytes.peak").asLong(), t.allocatorNanos(), t.row().path("external_fragmentation.peak").asDouble(),
          front.contains(t), ranked.indexOf(t) + 1));
    }
    Map<String, Object> search = new LinkedHashMap<>();
    search.put("grid_cells", gridCells);
    search.put("refinement", "local search on each option's ladder: every one-step neighbour of the best cell, a round at a time, until a round improves nothing (at most "
        + MAX_ROUNDS + " rounds)");
    search.put("refinement_rounds", rounds);
    search.put("refinement_cells", tried.size() - gridCells);
    search.put("cells", tried.size());
    Map<String, Object> axes = new LinkedHashMap<>();
    for (TuneSpace.Axis a : space.axes()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("default", a.defaultValue());
      m.put("grid", a.grid());
      m.put("ladder", a.ladder());
      axes.put(a.name(), m);
    }
    search.put("axes", axes);
    Tried def = tried.get(space.defaults().toString());
    return new TuneResults(req.config(), space.allocator(), space.torchConf(), search, cells, def.order(), best.order(),
        front.stream().map(Tried::order).toList(), space.recommendation(best.setting()));
  }
}

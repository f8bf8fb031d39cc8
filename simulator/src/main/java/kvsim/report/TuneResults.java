package kvsim.report;

import java.util.List;
import java.util.Map;

/**
 * The results of {@code kvsim tune WORKLOAD --allocator NAME}: every setting tried with its
 * numbers, the default, the Pareto front of the cells without OOM and the recommended setting. The
 * tune folder's files ({@link TuneReport}: {@code tune.json}, {@code tune.csv}, the front chart and
 * {@code report.html}) are written from it; the search is {@code kvsim.tune.AllocatorTuner}'s.
 *
 * @param config the run's configuration echo (input as given, device, grid)
 * @param allocator the allocator searched
 * @param torchConf whether a setting is a {@code PYTORCH_CUDA_ALLOC_CONF} string
 * @param search how the search went (grid cells, refinement rounds and cells, the axes)
 * @param cells every setting tried, in the order tried
 * @param defaultOrder the default setting's {@link Cell#order}
 * @param bestOrder the recommended setting's {@link Cell#order}
 * @param front the Pareto front's cells, by {@link Cell#order}, lowest peak reserved first
 * @param recommendation the line to paste ({@code PYTORCH_CUDA_ALLOC_CONF=…}), or what to keep
 */
public record TuneResults(Map<String, Object> config, String allocator, boolean torchConf, Map<String, Object> search, List<Cell> cells,
    int defaultOrder, int bestOrder, List<Integer> front, String recommendation) {
  /** {@code tune.json}'s format marker. */
  public static final String FORMAT = "kvsim-tune";
  /** {@code tune.json}'s version. */
  public static final int VERSION = 1;

  public TuneResults {
    config = Map.copyOf(config).isEmpty() ? Map.of() : config;
    cells = List.copyOf(cells);
    front = List.copyOf(front);
  }

  /**
   * One setting tried.
   *
   * @param order position in the order tried
   * @param phase {@code grid} or {@code refine-N}
   * @param setting every option's value
   * @param label the setting as written (the conf string, or {@code --set} options; {@code (defaults)})
   * @param oomCount the run's OOMs
   * @param peakReservedBytes the run's peak reserved bytes
   * @param peakAllocatedBytes the run's peak allocated bytes
   * @param allocatorNanos the run's modelled allocator time
   * @param peakExternalFragmentation the run's peak external fragmentation
   * @param onFront whether it is on the Pareto front
   * @param rank its place by the objective, 1 = recommended
   */
  public record Cell(int order, String phase, Map<String, String> setting, String label, long oomCount, long peakReservedBytes,
      long peakAllocatedBytes, long allocatorNanos, double peakExternalFragmentation, boolean onFront, int rank) {}

  /** Returns the default setting's cell. */
  public Cell defaults() {
    return cells.get(defaultOrder);
  }

  /** Returns the recommended setting's cell. */
  public Cell best() {
    return cells.get(bestOrder);
  }

  /** Returns the front's cells, lowest peak reserved first. */
  public List<Cell> frontCells() {
    return front.stream().map(cells::get).toList();
  }
}

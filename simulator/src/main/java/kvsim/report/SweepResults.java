package kvsim.report;

import java.util.List;
import java.util.Map;
import kvsim.metrics.SeedSweep;

/**
 * What a seed sweep's result folder holds (its {@code summary.json} only), as {@link
 * ResultsWriter#writeSweep} takes it and {@link ResultsReader#readSweep} gives it back.
 *
 * @param config the configuration echo of the first seed's run
 * @param seeds the seeds run, as given
 * @param entries one entry per allocator, in the order run
 */
public record SweepResults(Map<String, Object> config, List<Long> seeds, List<Entry> entries) {

  /**
   * One allocator's distribution over seeds.
   *
   * @param allocator registry name
   * @param sweep per {@link SeedSweep#HEADLINES} name, its statistics (null where no seed defined it)
   * @param perSeed the headline metrics of every seed's run, in seed order
   */
  public record Entry(String allocator, Map<String, SeedSweep.Stats> sweep, List<SeedSweep.Row> perSeed) {}

  /** Returns what a sweep's folder holds for these sweeps, one per allocator in the order given. */
  public static SweepResults of(Map<String, Object> config, long[] seeds, Map<String, SeedSweep> sweeps) {
    List<Entry> entries = new java.util.ArrayList<>();
    sweeps.forEach((name, sweep) -> entries.add(new Entry(name, sweep.stats(), sweep.perSeed())));
    return new SweepResults(config, java.util.Arrays.stream(seeds).boxed().toList(), entries);
  }
}

package kvsim.run;

import java.util.Map;
import kvsim.metrics.SeedSweep;

/**
 * A generator run over many seeds: the headline metrics' distribution per allocator, and each
 * seed's values, in the order of the seeds given.
 *
 * @param config the configuration echo of the first seed's run
 * @param seeds the seeds, as given
 * @param sweeps per allocator, in the order given
 */
public record SweepResult(Map<String, Object> config, long[] seeds, Map<String, SeedSweep> sweeps) {}

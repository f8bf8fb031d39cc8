package kvsim.serving;

import java.util.Map;
import java.util.Set;

/**
 * A kind of scheduler as a serving system is assembled from it ({@link ServingSystems}): its name in
 * results, the settings it reads, the limits it runs under given the requested ones, how it is
 * built over a KV manager, and the parts it echoes into a run's summary.
 */
public interface SchedulerFactory {
  /** Returns the name echoed as the summary's {@code scheduler} part ({@code vllm-v1}, {@code orca}, …). */
  String name();

  /**
   * Returns the serving settings this scheduler reads beyond those every system reads (Note
   * [Settings each system reads] in {@link ServingSystems}): {@code max-num-seqs}, {@code watermark}.
   */
  Set<String> reads();

  /** Returns the limits the scheduler runs under when {@code requested} are asked for (the requested ones by default). */
  default SchedulerConfig effective(SchedulerConfig requested) {
    return requested;
  }

  /** Builds a fresh scheduler with limits {@code config} (from {@link #effective}) over {@code kv}; throws when {@code kv} lacks a capability it needs. */
  Scheduler create(SchedulerConfig config, KvManager kv);

  /** Puts the scheduler's parts (its limits and preemption mode, by result-file name) into {@code parts}. */
  void describe(SchedulerConfig config, Map<String, Object> parts);
}

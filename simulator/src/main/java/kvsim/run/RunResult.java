package kvsim.run;

import java.util.List;
import java.util.Map;
import kvsim.metrics.AllocatorResult;
import kvsim.metrics.MemoryMap;

/**
 * What one run of a workload on several allocators produced, in the order the allocators were
 * given.
 *
 * @param config the configuration echo for summary.json (inputs only, nothing time-dependent)
 * @param results one result per allocator
 * @param timings wall-clock figures, same order
 * @param memoryMaps the memory map of each allocator's run, same order
 */
public record RunResult(
    Map<String, Object> config, List<AllocatorResult> results, List<AllocatorResult.Timing> timings, List<MemoryMap> memoryMaps) {
  /** Returns the events the workload had (every allocator sees the same stream). */
  public long events() {
    return timings.isEmpty() ? 0 : timings.get(0).events();
  }
}

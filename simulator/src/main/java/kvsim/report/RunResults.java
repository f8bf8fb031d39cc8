package kvsim.report;

import java.util.List;
import java.util.Map;
import kvsim.metrics.AllocatorResult;

/**
 * What a run's result folder holds, as {@link ResultsWriter#write} takes it and {@link
 * ResultsReader#read} gives it back.
 *
 * @param config the configuration echo: every top-level field of {@code summary.json} but the
 *     format marker and {@code allocators}, in file order
 * @param results one result per allocator, in the order run
 * @param timings wall-clock figures from {@code timing.json}, same order; empty for a committed
 *     folder, which holds no {@code timing.json}
 */
public record RunResults(Map<String, Object> config, List<AllocatorResult> results, List<AllocatorResult.Timing> timings) {}

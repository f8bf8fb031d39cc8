package kvsim.report;

import java.util.List;
import java.util.Map;

/**
 * What a capacity search's result folder holds, as {@link ResultsReader#readCapacity} gives it back.
 *
 * @param config the configuration echo of {@code summary.json}, in file order
 * @param targets the latency targets as written
 * @param systems one object per system, as written (results/SCHEMA.md)
 */
public record CapacityResults(Map<String, Object> config, List<Object> targets, List<Map<String, Object>> systems) {}

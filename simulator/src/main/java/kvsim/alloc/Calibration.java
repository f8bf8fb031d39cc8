package kvsim.alloc;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Latencies measured on a real GPU that replace a model's defaults: per allocator name, the fields
 * of its {@link LatencyModel} that were measured. A model asks its {@link AllocatorContext} for
 * {@link AllocatorContext#latency}, which applies the calibration over the model's defaults, so
 * every model takes a calibration the same way and a calibration file has one place to go.
 *
 * @param source where the calibration came from (a file name), for the run's summary
 * @param device the GPU it was measured on, as its driver names it
 * @param driver the driver version
 * @param date the date of the measurement (ISO 8601)
 * @param latency per allocator name, measured fields by name ({@link #FIELDS}), in nanoseconds
 */
public record Calibration(String source, String device, String driver, String date, Map<String, Map<String, Long>> latency) {
  /** No calibration: every model keeps its defaults. */
  public static final Calibration NONE = new Calibration(null, null, null, null, Map.of());

  /** The names of a {@link LatencyModel}'s fields in calibration files. */
  public static final Set<String> FIELDS =
      Set.of("alloc_base_ns", "alloc_per_step_ns", "free_base_ns", "free_per_step_ns", "device_alloc_ns", "device_free_ns");

  public Calibration {
    Map<String, Map<String, Long>> copy = new TreeMap<>();
    latency.forEach((name, fields) -> {
      for (Map.Entry<String, Long> f : fields.entrySet()) {
        if (!FIELDS.contains(f.getKey())) {
          throw new IllegalArgumentException("unknown latency field '" + f.getKey() + "' (known: " + new java.util.TreeSet<>(FIELDS) + ")");
        }
        if (f.getValue() == null || f.getValue() < 0) {
          throw new IllegalArgumentException(f.getKey() + " must be a non-negative number of nanoseconds");
        }
      }
      copy.put(name, Map.copyOf(fields));
    });
    latency = java.util.Collections.unmodifiableMap(copy);
  }

  /** Returns {@code defaults} with this calibration's measured fields for {@code allocator} in place. */
  public LatencyModel apply(String allocator, LatencyModel defaults) {
    Map<String, Long> m = latency.get(allocator);
    if (m == null) {
      return defaults;
    }
    return new LatencyModel(
        m.getOrDefault("alloc_base_ns", defaults.allocBaseNanos()),
        m.getOrDefault("alloc_per_step_ns", defaults.allocPerStepNanos()),
        m.getOrDefault("free_base_ns", defaults.freeBaseNanos()),
        m.getOrDefault("free_per_step_ns", defaults.freePerStepNanos()),
        m.getOrDefault("device_alloc_ns", defaults.deviceAllocNanos()),
        m.getOrDefault("device_free_ns", defaults.deviceFreeNanos()));
  }

  /** Returns whether this is {@link #NONE}. */
  public boolean isNone() {
    return source == null && latency.isEmpty();
  }
}

package kvsim.gpu.calibrate;

import java.util.List;
import java.util.Map;

/**
 * The raw measurements of a GPU calibration, as the calibration file keeps them for provenance
 * (its {@code samples} section; README, "Calibration files"): where they were taken, and per
 * measured kind and shape the time of every repetition, in nanoseconds, in the order taken.
 *
 * @param device the device's name ({@code cuDeviceGetName})
 * @param driver the driver's CUDA version, e.g. "13.0"
 * @param cuda the CUDA version the bindings were built for, e.g. "12.6"
 * @param date the day measured, ISO-8601
 * @param granularityBytes the VMM granularity the page series used (0 where none were measured)
 * @param totalBytes the device's memory
 * @param series the measured series, in the order taken
 * @param skipped per kind not measured at all, why (e.g. cuBLAS missing for {@code gemm})
 */
public record Samples(String device, String driver, String cuda, String date, long granularityBytes, long totalBytes, List<Series> series,
    Map<String, String> skipped) {

  /** The kinds a calibration measures, with the shape fields each names, in the file's order ({@link kvsim.run.CalibrationFile#SAMPLE_KINDS}). */
  public static final Map<String, List<String>> KINDS = kvsim.run.CalibrationFile.SAMPLE_KINDS;

  public Samples {
    series = List.copyOf(series);
    skipped = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(skipped));
  }

  /** The series of one kind, in the order taken. */
  public List<Series> of(String kind) {
    return series.stream().filter(s -> s.kind().equals(kind)).toList();
  }

  /**
   * One measured shape: {@code nanos[i]} is repetition i's time.
   *
   * <p>{@code alloc}/{@code free}: one {@code cuMemAlloc}/{@code cuMemFree} of {@code size_bytes}.
   * {@code map}: create and map {@code pages} pages of {@code page_bytes} each ({@code cuMemCreate},
   * {@code cuMemMap}, {@code cuMemSetAccess} per page); {@code unmap}: unmap and release them.
   * {@code copy_*}: one copy of {@code size_bytes}. {@code gemm}: one fp16 product of a {@code
   * tokens × inner} activation by an {@code inner × outer} weight.
   *
   * @param kind one of {@link #KINDS}
   * @param shape the kind's shape fields, in {@link #KINDS}' order
   * @param nanos the repetitions' times, at least one
   */
  public record Series(String kind, Map<String, Long> shape, long[] nanos) {
    public Series {
      List<String> fields = KINDS.get(kind);
      if (fields == null) {
        throw new IllegalArgumentException("unknown kind of sample '" + kind + "' (known: " + KINDS.keySet() + ")");
      }
      if (!shape.keySet().equals(new java.util.HashSet<>(fields))) {
        throw new IllegalArgumentException(kind + " samples name " + fields + ", got " + shape.keySet());
      }
      if (nanos.length == 0) {
        throw new IllegalArgumentException(kind + " " + shape + ": no repetitions");
      }
      Map<String, Long> ordered = new java.util.LinkedHashMap<>();
      for (String f : fields) {
        ordered.put(f, shape.get(f));
      }
      shape = java.util.Collections.unmodifiableMap(ordered);
      nanos = nanos.clone();
    }

    /** Shape field {@code name}. */
    public long get(String name) {
      Long v = shape.get(name);
      if (v == null) {
        throw new IllegalArgumentException(kind + " samples have no " + name);
      }
      return v;
    }

    /** The median repetition, in nanoseconds ({@link Stats#median}). */
    public double medianNanos() {
      return Stats.median(nanos);
    }

    /** The 99th percentile repetition, in nanoseconds ({@link Stats#p99}). */
    public long p99Nanos() {
      return Stats.p99(nanos);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Series s && s.kind.equals(kind) && s.shape.equals(shape) && java.util.Arrays.equals(s.nanos, nanos);
    }

    @Override
    public int hashCode() {
      return kind.hashCode() * 31 + shape.hashCode() * 17 + java.util.Arrays.hashCode(nanos);
    }

    @Override
    public String toString() {
      return kind + shape + java.util.Arrays.toString(nanos);
    }
  }
}

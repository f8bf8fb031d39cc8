package kvsim.metrics;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Records the metrics of one allocator run (README, "Metrics"; {@code results/SCHEMA.md}): after
 * every event the byte gauges (Note [Gauges recorded together] on {@link IntegerGauges}) and the
 * two fragmentation ratios go into exact {@link Gauge} summaries, and every {@code stride} events
 * a row goes into the time series. Counters count operations and refusals. With {@code
 * sampleEvery = 0} the series is bounded (Note [Bounded time series] in {@link SampledSeries}).
 *
 * <p>Note [Headline gauges only]: a seed sweep keeps, of each cell, only the values {@link
 * SeedSweep#HEADLINES} names, which read four of the eight gauges (reserved and allocated bytes,
 * internal and external fragmentation). A recorder made with {@link #SWEEP_HEADLINES} records those
 * four and no series; {@link #summaries()} then holds those four only. Each gauge records exactly
 * the values it would record in a full recorder, so the sweep's numbers are the same; {@link
 * #record} was 9 to 15 % of a sweep's JFR samples, half of it for four gauges nobody read.
 *
 * <p>Note [Ratios of an unchanged state]: a ratio is a function of its two inputs, so where they
 * are those of the previous event the previous ratio is reused, not divided again. Refusals and
 * frees of refused allocations change nothing in the model, and they are most of the events of a
 * trace that overfills the device (1.13 M of the 2 M-event churn trace's 1.2 M allocations are
 * refused). The inputs start at -1, which no byte count is, so the first event divides.
 */
public final class RunMetrics {
  /** Most rows kept when the sampling stride is automatic. */
  public static final int MAX_AUTO_SAMPLES = SampledSeries.MAX_AUTO_SAMPLES;

  /** Column names of a time-series row after {@code event} and {@code t_ns}. */
  public static final List<String> SAMPLE_COLUMNS =
      List.of(
          "reserved_bytes",
          "allocated_bytes",
          "requested_bytes",
          "free_bytes",
          "largest_free_bytes",
          "internal_fragmentation",
          "external_fragmentation",
          "oom_count");

  /** Names of the counters, in the order {@link #counters()} gives them. */
  public static final List<String> COUNTERS =
      List.of(
          "events",
          "alloc_count",
          "free_count",
          "oom_count",
          "fragmentation_oom_count",
          "no_memory_oom_count",
          "too_large_oom_count",
          "frees_of_refused_count");

  /** Names of the gauges summarised, in the order {@link #summaries()} gives them. */
  public static final List<String> GAUGES =
      List.of(
          "reserved_bytes",
          "allocated_bytes",
          "requested_bytes",
          "free_bytes",
          "largest_free_bytes",
          "internal_fragmentation",
          "external_fragmentation",
          "live_allocations");

  /** The integer gauges, in {@link #GAUGES} order less the two ratios (Note [Gauges recorded together]). */
  private final IntegerGauges integers;
  private final Gauge internal = new Gauge("internal_fragmentation");
  private final Gauge external = new Gauge("external_fragmentation");

  private final SampledSeries samples;
  private long events;
  private long lastTimeNanos;
  /** The previous event's ratio inputs and ratios (Note [Ratios of an unchanged state]). */
  private long ratioRequestedBytes = -1;
  private long ratioAllocatedBytes = -1;
  private long ratioLargestFreeBytes = -1;
  private long ratioFreeBytes = -1;
  private double internalRatio;
  private double externalRatio;

  private long allocCount;
  private long freeCount;
  private long oomNoMemory;
  private long oomFragmentation;
  private long oomTooLarge;
  private long freesOfRefused;

  /** The {@code sampleEvery} of a recorder that keeps no time series, only summaries and counters. */
  public static final long NO_SERIES = -1;

  /**
   * The {@code sampleEvery} of a recorder that keeps no time series and only the gauges {@link
   * SeedSweep#HEADLINES} read, with all counters (Note [Headline gauges only]).
   */
  public static final long SWEEP_HEADLINES = -2;

  /** The gauges a {@link #SWEEP_HEADLINES} recorder keeps, in {@link #GAUGES} order. */
  static final List<String> HEADLINE_GAUGES =
      List.of("reserved_bytes", "allocated_bytes", "internal_fragmentation", "external_fragmentation");

  /** Whether every gauge is recorded (false: {@link #HEADLINE_GAUGES} only). */
  private final boolean allGauges;

  /**
   * Creates a recorder that samples every {@code sampleEvery} events (0 = automatic stride, {@link
   * #NO_SERIES} = no time series, {@link #SWEEP_HEADLINES} = no time series and the headline
   * gauges only).
   */
  public RunMetrics(long sampleEvery) {
    if (sampleEvery < SWEEP_HEADLINES) {
      throw new IllegalArgumentException("sampleEvery must be SWEEP_HEADLINES, NO_SERIES, 0 or a stride");
    }
    this.samples = sampleEvery < 0 ? null : new SampledSeries(10, sampleEvery);
    this.allGauges = sampleEvery != SWEEP_HEADLINES;
    this.integers = new IntegerGauges((int) gaugeNames().stream().filter(n -> !isRatio(n)).count());
  }

  /** Records the state after one event. */
  public void record(
      long timeNanos,
      long reservedBytes,
      long allocatedBytes,
      long requestedBytes,
      long freeBytes,
      long largestFreeBytes,
      long liveAllocations) {
    events++;
    lastTimeNanos = timeNanos;
    if (requestedBytes != ratioRequestedBytes || allocatedBytes != ratioAllocatedBytes) {
      ratioRequestedBytes = requestedBytes;
      ratioAllocatedBytes = allocatedBytes;
      internalRatio = Fragmentation.internal(requestedBytes, allocatedBytes);
    }
    if (largestFreeBytes != ratioLargestFreeBytes || freeBytes != ratioFreeBytes) {
      ratioLargestFreeBytes = largestFreeBytes;
      ratioFreeBytes = freeBytes;
      externalRatio = Fragmentation.external(largestFreeBytes, freeBytes);
    }
    double internalFrag = internalRatio;
    double externalFrag = externalRatio;
    IntegerGauges g = integers;
    g.time(timeNanos);
    g.value(0, reservedBytes);
    g.value(1, allocatedBytes);
    internal.record(timeNanos, internalFrag);
    external.record(timeNanos, externalFrag);
    if (!allGauges) {
      return; // Note [Headline gauges only]
    }
    g.value(2, requestedBytes);
    g.value(3, freeBytes);
    g.value(4, largestFreeBytes);
    g.value(5, liveAllocations);
    if (samples == null || samples.skip()) {
      return; // Note [Rows not kept are not filled] on SampledSeries
    }
    fillRow(samples.next(), timeNanos);
    samples.commit();
  }

  /**
   * Fills a time-series row after its index ({@link #SAMPLE_COLUMNS} after {@code t_ns}) with the
   * values the last event recorded.
   */
  private void fillRow(double[] row, long timeNanos) {
    IntegerGauges g = integers;
    row[1] = timeNanos;
    row[2] = g.last(0);
    row[3] = g.last(1);
    row[4] = g.last(2);
    row[5] = g.last(3);
    row[6] = g.last(4);
    row[7] = internalRatio;
    row[8] = externalRatio;
    row[9] = oomCount();
  }

  /** Counts a served allocation. */
  public void countAlloc() {
    allocCount++;
  }

  /** Counts a free. */
  public void countFree() {
    freeCount++;
  }

  /** Counts a free of an allocation the allocator had refused (a no-op for the allocator). */
  public void countFreeOfRefused() {
    freesOfRefused++;
  }

  /** Counts a refusal by reason label ({@code no_memory}, {@code fragmentation}, {@code too_large}). */
  public void countOom(String reason) {
    switch (reason) {
      case "no_memory" -> oomNoMemory++;
      case "fragmentation" -> oomFragmentation++;
      case "too_large" -> oomTooLarge++;
      default -> throw new IllegalArgumentException("unknown OOM reason " + reason);
    }
  }

  /** Returns the refusals so far. */
  public long oomCount() {
    return oomNoMemory + oomFragmentation + oomTooLarge;
  }

  /** Returns the number of events recorded. */
  public long events() {
    return events;
  }

  /** Returns the time-series rows (event, t_ns, then {@link #SAMPLE_COLUMNS}); the last event is always included (none without a series). */
  public List<double[]> samples() {
    if (samples == null) {
      return List.of();
    }
    if (events > 0) { // the last event's row, which record may have skipped: the values held now
      fillRow(samples.lastRow(), lastTimeNanos);
    }
    return samples.rows();
  }

  /**
   * Returns the gauge summaries by metric name, in a fixed order ({@link #GAUGES}; for a {@link
   * #SWEEP_HEADLINES} recorder only its gauges, Note [Headline gauges only]).
   */
  public Map<String, Gauge.Summary> summaries() {
    Map<String, Gauge.Summary> m = new LinkedHashMap<>();
    int integer = 0;
    for (String name : gaugeNames()) {
      if (!isRatio(name)) {
        m.put(name, integers.summary(integer++));
      } else {
        m.put(name, (name.equals(internal.name()) ? internal : external).summary());
      }
    }
    return m;
  }

  /** The gauges this recorder keeps, in {@link #GAUGES} order. */
  private List<String> gaugeNames() {
    return allGauges ? GAUGES : HEADLINE_GAUGES;
  }

  private static boolean isRatio(String gauge) {
    return gauge.endsWith("_fragmentation");
  }

  /** Returns the counters by result-file name, in a fixed order. */
  public Map<String, Long> counters() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("events", events);
    m.put("alloc_count", allocCount);
    m.put("free_count", freeCount);
    m.put("oom_count", oomCount());
    m.put("fragmentation_oom_count", oomFragmentation);
    m.put("no_memory_oom_count", oomNoMemory);
    m.put("too_large_oom_count", oomTooLarge);
    m.put("frees_of_refused_count", freesOfRefused);
    return m;
  }

  /** Returns the simulated time of the last event. */
  public long lastTimeNanos() {
    return lastTimeNanos;
  }
}

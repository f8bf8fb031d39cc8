package kvsim.alloc;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.caching.CachingAllocator;
import kvsim.alloc.vattention.VAttentionAllocator;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.devicemodel.Region;
import kvsim.metrics.Gauge;
import kvsim.metrics.RunMetrics;
import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CheckedAllocator;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.Tuple.Tuple2;
import net.jqwik.api.constraints.Size;

/**
 * Request sizes anywhere in [1, {@code Long.MAX_VALUE}], for every registered model: random
 * operation sequences (generated and shrunk by jqwik) mix normal sizes with the values where size
 * arithmetic overflows — {@code Long.MAX_VALUE} and just below it, powers of two from 2^60, the
 * region's size ± 1, page and block sizes × 2^31 ± 1 — splittable and not. After every operation
 * {@link CheckedAllocator} checks that nothing was thrown, that a served request lies inside the
 * region (the virtual space of a virtual model) with at least the bytes asked for, the model's
 * invariants and the gauge relations; this class adds that a request above the region is refused
 * (as {@code too_large} where the model promises it), and feeds the gauges into {@link RunMetrics}
 * at times up to 2^63 so that its summaries stay in range: fragmentation within [0, 1], byte gauges
 * within [0, region].
 *
 * <p>Models run with their default options and with the options that change their size arithmetic
 * (a 1 KiB and a 2 MiB alignment, one-token pages, buddy blocks from 4 KiB and from 256 MiB,
 * multi-slab's splitting between classes, vAttention's 64 KiB pages, PyTorch's rounding divisions,
 * a {@code max_non_split_rounding_mb} near 2^43, a segment size near 2^63, a memory fraction), over
 * a small region at an unaligned base and over the default 80 GiB device. Expandable segments are
 * left out: their pages lie in virtual reservations beyond the region by design. Options the
 * registry refuses (a non-power-of-two alignment, a min-block larger than the region) are not
 * setups here; the models' constructors still take them, and their own tests cover those.
 */
class AllocatorSizeProperties {
  static final Region SMALL = AllocatorProperties.REGION;
  static final Region DEVICE = MemoryPlan.whole(DeviceSpec.defaultDevice()).testedRegion();

  /** The option sets run for a model besides its defaults, by registry name. */
  static final Map<String, List<Map<String, String>>> VARIANTS =
      Map.of(
          "first-fit", List.of(Map.of("alignment", "1KiB"), Map.of("alignment", "2MiB")),
          "best-fit", List.of(Map.of("alignment", "1KiB"), Map.of("alignment", "2MiB")),
          "buddy", List.of(Map.of("min-block", "4KiB"), Map.of("min-block", "256MiB")),
          "slab", List.of(Map.of("block-size", "3MiB")),
          "multi-slab",
          List.of(
              Map.of("classes", "512KiB:30,8MiB:30,64MiB:40"),
              Map.of("split", "true"),
              Map.of("classes", "512KiB:30,8MiB:30,64MiB:40", "split", "true")),
          "paged", List.of(Map.of("block-tokens", "1")),
          VAttentionAllocator.NAME, List.of(Map.of("page-size", "64KiB")),
          CachingAllocator.NAME,
          List.of(
              Map.of("torch-alloc-conf", "roundup_power2_divisions:[256:1,512:2,>:8]"),
              Map.of("torch-alloc-conf", "max_split_size_mb:20,max_non_split_rounding_mb:8796093022207"),
              Map.of("torch-alloc-conf", "large_segment_size_mb:8796093022206"),
              Map.of("torch-alloc-conf", "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6")));

  /**
   * One model to drive.
   *
   * @param name registry name
   * @param options its options
   * @param region the region it manages
   */
  record Setup(String name, Map<String, String> options, Region region) {
    Allocator build() {
      return AllocatorRegistry.create(
          new AllocatorContext(name, region, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), options));
    }

    @Override
    public String toString() {
      return name + " " + options + " over " + Bytes.format(region.sizeBytes());
    }
  }

  /**
   * One step: a request ({@code allocate}) of {@code sizeBytes}, or a free of the live allocation
   * at {@code pick} modulo the live count; then the clock advances by {@code dtNanos}.
   */
  record Op(boolean allocate, long sizeBytes, boolean splittable, int pick, long dtNanos) {}

  /** Every registered model with its defaults and with each of its {@link #VARIANTS}, over both regions. */
  static List<Setup> setups() {
    List<Setup> out = new ArrayList<>();
    for (Region region : List.of(SMALL, DEVICE)) {
      for (String name : AllocatorRegistry.names()) {
        out.add(new Setup(name, Map.of(), region));
        for (Map<String, String> options : VARIANTS.getOrDefault(name, List.of())) {
          out.add(new Setup(name, options, region));
        }
      }
    }
    return out;
  }

  /** Sizes at which size arithmetic overflows or changes regime, in the models and regions above. */
  static List<Long> edgeSizes() {
    List<Long> out = new ArrayList<>();
    long max = Long.MAX_VALUE;
    for (long s :
        new long[] {
          max, max - 1, max - 511, max - 512, max - Bytes.MiB, max - 2 * Bytes.MiB + 1, max / 2, max / 2 + 1,
          9_223_372_036_854_775_000L, 9_223_372_036_846_387_201L,
          1L << 62, (1L << 62) - 1, (1L << 62) + 1, (1L << 61) + 1, 1L << 60, (1L << 60) - 1, (1L << 60) + 1
        }) {
      out.add(s);
    }
    for (long unit : new long[] {512, 512 * Bytes.KiB, 2 * Bytes.MiB, 3 * Bytes.MiB, 8 * Bytes.MiB, 20 * Bytes.MiB, 256 * Bytes.MiB}) {
      for (long s : new long[] {unit << 31, (unit << 31) - 1, (unit << 31) + 1, unit << 32, unit * Integer.MAX_VALUE}) {
        out.add(s);
      }
    }
    for (Region r : List.of(SMALL, DEVICE)) {
      for (long s : new long[] {r.sizeBytes() - 1, r.sizeBytes(), r.sizeBytes() + 1, r.endBytes(), 2 * r.sizeBytes()}) {
        out.add(s);
      }
    }
    return out;
  }

  @Provide
  Arbitrary<Setup> setup() {
    return Arbitraries.of(setups());
  }

  @Provide
  Arbitrary<Op> op() {
    Arbitrary<Long> sizes =
        Arbitraries.frequencyOf(
            weighted(4, Arbitraries.longs().between(1, 64 * Bytes.MiB)),
            weighted(1, Arbitraries.longs().between(64 * Bytes.MiB, 200 * Bytes.GiB)),
            weighted(3, Arbitraries.of(edgeSizes())),
            weighted(2, Arbitraries.longs().between(1L << 40, Long.MAX_VALUE)),
            weighted(1, Arbitraries.longs().between(0, 1 << 24).map(k -> Long.MAX_VALUE - k)));
    Arbitrary<Long> dts =
        Arbitraries.frequencyOf(
            weighted(6, Arbitraries.longs().between(0, 1_000_000)),
            weighted(1, Arbitraries.longs().between(0, Long.MAX_VALUE)));
    return Combinators.combine(
            Arbitraries.integers().between(0, 99), sizes, Arbitraries.of(true, false), Arbitraries.integers().between(0, 1 << 20), dts)
        .as((dice, size, splittable, pick, dt) -> new Op(dice < 65, size, splittable, pick, dt));
  }

  private static Tuple2<Integer, Arbitrary<? extends Long>> weighted(int weight, Arbitrary<Long> values) {
    return Tuple.of(weight, values);
  }

  @Property(tries = 200)
  void everyModelRefusesOrServesAnySizeWithoutOverflow(
      @ForAll("setup") Setup setup, @ForAll @Size(max = 120) List<@From("op") Op> ops) {
    run(setup, ops);
  }

  /** Every edge size, splittable and not, on every setup, empty and part-full: coverage the random runs need not reach. */
  @Example
  void everyEdgeSizeIsRefusedOrServedByEverySetup() {
    List<Op> ops = new ArrayList<>();
    int pick = 0;
    for (long size : edgeSizes()) {
      for (boolean splittable : new boolean[] {true, false}) {
        ops.add(new Op(true, size, splittable, 0, 1000));
        ops.add(new Op(true, 3 * Bytes.MiB + 5, splittable, 0, 1000)); // keep some state live
        ops.add(new Op(pick++ % 3 == 0, 1, true, pick, Long.MAX_VALUE / 64));
      }
    }
    for (Setup setup : setups()) {
      run(setup, ops);
    }
  }

  static void run(Setup setup, List<Op> ops) {
    Allocator allocator = setup.build();
    Region region = setup.region();
    CheckedAllocator model = new CheckedAllocator(allocator, region);
    RunMetrics metrics = new RunMetrics(0);
    long t = 0;
    for (Op op : ops) {
      if (op.allocate() || model.liveHandles().isEmpty()) {
        AllocRequest request = new AllocRequest(op.sizeBytes(), Tag.KV, op.splittable(), 0);
        AllocOutcome outcome = model.allocate(request);
        checkOutcome(setup, request, outcome);
      } else {
        model.freeAt(op.pick() % model.liveHandles().size());
      }
      t = op.dtNanos() > Long.MAX_VALUE - t ? Long.MAX_VALUE : t + op.dtNanos();
      metrics.record(
          t,
          allocator.stats().reservedBytes(),
          allocator.stats().allocatedBytes(),
          allocator.stats().requestedBytes(),
          allocator.freeBytes(),
          allocator.largestFreeBytes(),
          allocator.stats().liveAllocations());
    }
    checkSummaries(setup, metrics);
    model.freeAll();
  }

  /**
   * Requests above the region are refused; paged, buddy, vattention and PyTorch's model call the
   * sizes they cannot represent too_large.
   */
  static void checkOutcome(Setup setup, AllocRequest request, AllocOutcome outcome) {
    long size = request.sizeBytes();
    String what = setup + ": request of " + size + " B (splittable " + request.splittable() + ")";
    if (size > setup.region().sizeBytes() && outcome.succeeded()) {
      throw new AssertionError(what + " was served from a smaller region: " + outcome);
    }
    boolean tooLarge =
        ((setup.name().equals("paged") || setup.name().equals("buddy") || setup.name().equals(VAttentionAllocator.NAME))
                && size > setup.region().sizeBytes())
            || (setup.name().equals(CachingAllocator.NAME) && size >= CachingAllocator.MAX_REQUEST_BYTES);
    if (tooLarge
        && !(outcome instanceof AllocOutcome.OutOfMemory oom && oom.reason() == OomReason.TOO_LARGE)) {
      throw new AssertionError(what + " should be refused as too_large, got " + outcome);
    }
  }

  /** Fragmentation ratios lie in [0, 1] and byte gauges in [0, region], for the peak, the mean and the last value. */
  static void checkSummaries(Setup setup, RunMetrics metrics) {
    Map<String, Double> bounds = new LinkedHashMap<>();
    bounds.put("internal_fragmentation", 1.0);
    bounds.put("external_fragmentation", 1.0);
    for (String gauge : List.of("reserved_bytes", "allocated_bytes", "requested_bytes", "free_bytes", "largest_free_bytes")) {
      bounds.put(gauge, (double) setup.region().sizeBytes());
    }
    for (Map.Entry<String, Double> e : bounds.entrySet()) {
      Gauge.Summary s = metrics.summaries().get(e.getKey());
      for (Double v : new Double[] {s.peak(), s.mean(), s.last()}) {
        if (v != null && !(v >= 0 && v <= e.getValue() * (1 + 1e-12))) {
          throw new AssertionError(setup + ": " + e.getKey() + " summary " + s + " leaves [0, " + e.getValue() + "]");
        }
      }
    }
  }
}

package kvsim.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * {@link IntegerGauges} keeps one clock for several gauges (Note [Gauges recorded together]); each
 * gauge's summary must equal, bit for bit ({@link Double#equals}), that of its own {@link Gauge}
 * fed the same records: equal times, steps of any size, times that stand still to the end, values
 * up to 2^53, and a recorder's full and headline layouts.
 */
class IntegerGaugesProperties {
  /** One event: the step from the previous event's time, and three gauges' values. */
  record Step(long stepNanos, long a, long b, long c) {}

  @Provide
  Arbitrary<List<Step>> runs() {
    Arbitrary<Long> step =
        Arbitraries.frequencyOf(
            Tuple.of(5, Arbitraries.just(0L)),
            Tuple.of(4, Arbitraries.longs().between(1, 1_000)),
            Tuple.of(1, Arbitraries.longs().between(1, 1L << 40)));
    Arbitrary<Long> value =
        Arbitraries.frequencyOf(
            Tuple.of(6, Arbitraries.longs().between(0, 100)),
            Tuple.of(3, Arbitraries.longs().between(0, 1L << 36)),
            Tuple.of(1, Arbitraries.longs().between(0, 1L << 53)));
    return Combinators.combine(step, value, value, value).as(Step::new).list().ofMaxSize(200);
  }

  @Property(tries = 500)
  void eachGaugeSummarisesAsItsOwnGauge(@ForAll("runs") List<Step> run, @ForAll boolean startLate) {
    IntegerGauges together = new IntegerGauges(3);
    Gauge[] alone = {new Gauge("a"), new Gauge("b"), new Gauge("c")};
    long t = startLate ? 1L << 50 : 0;
    for (Step s : run) {
      t += s.stepNanos();
      together.time(t);
      long[] values = {s.a(), s.b(), s.c()};
      for (int g = 0; g < 3; g++) {
        together.value(g, values[g]);
        alone[g].record(t, values[g]);
      }
    }
    for (int g = 0; g < 3; g++) {
      assertEquals(alone[g].summary(), together.summary(g), "gauge " + g + " after " + run.size() + " events");
    }
  }

  @Property(tries = 100)
  void aRecordersSummariesAreThoseOfOneGaugeEach(@ForAll("runs") List<Step> run, @ForAll boolean headlinesOnly) {
    RunMetrics metrics = new RunMetrics(headlinesOnly ? RunMetrics.SWEEP_HEADLINES : RunMetrics.NO_SERIES);
    List<String> names = headlinesOnly ? RunMetrics.HEADLINE_GAUGES : RunMetrics.GAUGES;
    Gauge[] alone = names.stream().map(Gauge::new).toArray(Gauge[]::new);
    long t = 0;
    for (Step s : run) {
      t += s.stepNanos();
      long allocated = s.a() + s.b();
      long requested = s.a();
      long free = s.c();
      long largest = s.c() / 3;
      long reserved = allocated + free;
      long live = s.b() % 1000;
      metrics.record(t, reserved, allocated, requested, free, largest, live);
      for (Gauge g : alone) {
        g.record(
            t,
            switch (g.name()) {
              case "reserved_bytes" -> reserved;
              case "allocated_bytes" -> allocated;
              case "requested_bytes" -> requested;
              case "free_bytes" -> free;
              case "largest_free_bytes" -> largest;
              case "internal_fragmentation" -> Fragmentation.internal(requested, allocated);
              case "external_fragmentation" -> Fragmentation.external(largest, free);
              case "live_allocations" -> live;
              default -> throw new AssertionError(g.name());
            });
      }
    }
    var summaries = metrics.summaries();
    assertEquals(names, List.copyOf(summaries.keySet()));
    for (Gauge g : alone) {
      assertEquals(g.summary(), summaries.get(g.name()), g.name());
    }
  }
}

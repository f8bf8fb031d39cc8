package kvsim.gpu.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import kvsim.core.Tag;
import kvsim.gpu.device.InMemoryDevice;
import kvsim.gpu.replay.Executor;
import kvsim.registry.AllocatorRegistry;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import kvsim.trace.EventSource;
import kvsim.trace.TraceEvent;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * The plan property of issue 28: for random small traces, in raw mode and in arena mode on every
 * registered allocator (with pytorch-caching also under expandable segments), a plan never
 * overlaps live ranges, never frees, unmaps or releases what is not live, and gives back everything
 * it made by its end ({@link PlanChecker}); and it runs on the in-memory device, which enforces the
 * same, leaving nothing live.
 */
class PlanPropertyTest {
  private static final long MiB = 1L << 20;

  /** A trace as (size in KiB, or -k to free the k-th oldest live allocation) steps. */
  @Provide
  Arbitrary<List<Integer>> steps() {
    return Arbitraries.oneOf(
            Arbitraries.integers().between(1, 96 * 1024), // alloc up to 96 MiB
            Arbitraries.integers().between(-8, -1)) // free one of the 8 oldest
        .list()
        .ofMinSize(1)
        .ofMaxSize(60);
  }

  @Provide
  Arbitrary<String> allocators() {
    List<String> names = new ArrayList<>(AllocatorRegistry.names());
    names.add("pytorch-caching+expandable");
    names.add("raw");
    return Arbitraries.of(names);
  }

  @Property(tries = 300)
  void plansNeverOverlapAndGiveEverythingBack(@ForAll("allocators") String allocator, @ForAll("steps") List<Integer> steps) throws IOException {
    Plan plan = plan(allocator, events(steps));
    assertNull(PlanChecker.check(plan), allocator);
    InMemoryDevice device = new InMemoryDevice(1L << 40, 2 * MiB);
    Executor.Result r = new Executor(device, 2 * MiB, 40).run(plan);
    assertEquals(0, device.liveCount(), "the device holds nothing after the plan");
    assertEquals(0, r.oomCount());
  }

  @Test
  void checkerCatchesAnOverlapADoubleFreeAndALeak() {
    long g = 2 * MiB;
    PlanOp reserve = new PlanOp(PlanOp.Kind.RESERVE, 0, -1, -1, 8 * g, -1);
    Plan overlap = new Plan("arena", "x", "w", g, 1, List.of(reserve,
        new PlanOp(PlanOp.Kind.CREATE_PHYSICAL, 1, 1, -1, 2 * g, -1),
        new PlanOp(PlanOp.Kind.MAP, 1, 1, 0, 2 * g, -1),
        new PlanOp(PlanOp.Kind.CREATE_PHYSICAL, 1, 2, -1, g, -1),
        new PlanOp(PlanOp.Kind.MAP, 1, 2, g, g, -1)));
    assertTrue(PlanChecker.check(overlap).contains("overlaps"), PlanChecker.check(overlap));
    Plan doubleFree = new Plan("raw", null, "w", 0, 2, List.of(
        new PlanOp(PlanOp.Kind.ALLOC, 1, 7, -1, 100, -1),
        new PlanOp(PlanOp.Kind.FREE, 2, 7, -1, 0, -1),
        new PlanOp(PlanOp.Kind.FREE, 2, 7, -1, 0, -1)));
    assertTrue(PlanChecker.check(doubleFree).contains("frees what is not live"));
    Plan leak = new Plan("raw", null, "w", 0, 1, List.of(new PlanOp(PlanOp.Kind.ALLOC, 1, 7, -1, 100, -1)));
    assertTrue(PlanChecker.check(leak).contains("still live: 1 allocations"));
  }

  static Plan plan(String allocator, List<TraceEvent> events) throws IOException {
    if (allocator.equals("raw")) {
      return Planner.raw(new ListSource(events), "random", 7);
    }
    boolean expandable = allocator.endsWith("+expandable");
    String name = expandable ? "pytorch-caching" : allocator;
    RunRequest request = RunRequest.of("churn:ops=1").withAllocators(List.of(name)).withDevice("4GiB")
        .withTorchAllocConf(expandable ? "expandable_segments:True" : null);
    RunSpec spec = RunSpec.resolve(request, new PrintWriter(new StringWriter()));
    return Planner.arena(spec.newAllocator(name), new ListSource(events), "random", spec.plan().testedRegion().sizeBytes(), 2 * MiB, 7);
  }

  /** Turns steps into alloc and free events, freeing only live ids. */
  static List<TraceEvent> events(List<Integer> steps) {
    List<TraceEvent> out = new ArrayList<>();
    List<Long> live = new ArrayList<>();
    long id = 0;
    long t = 0;
    for (int s : steps) {
      t += 1000;
      if (s > 0) {
        out.add(TraceEvent.alloc(t, id, s * 1024L, Tag.KV, true, 0));
        live.add(id++);
      } else if (!live.isEmpty()) {
        out.add(TraceEvent.free(t, live.remove(Math.min(live.size() - 1, -s - 1)), 0));
      }
    }
    return out;
  }

  /** An open-loop source over a list. */
  static final class ListSource implements EventSource {
    private final Iterator<TraceEvent> it;

    ListSource(List<TraceEvent> events) {
      this.it = events.iterator();
    }

    @Override
    public TraceEvent next() {
      return it.hasNext() ? it.next() : null;
    }

    @Override
    public String name() {
      return "list";
    }

    @Override
    public Map<String, Object> describe() {
      return Map.of();
    }
  }
}

package kvsim.gpu.replay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import kvsim.gpu.device.InMemoryDevice;
import kvsim.gpu.plan.Plan;
import kvsim.gpu.plan.PlanOp;
import org.junit.jupiter.api.Test;

/** The executor on the in-memory device: timed calls, the probe's bisection against a known layout, refusals counted. */
class ExecutorTest {
  private static final long MiB = 1L << 20;

  private static PlanOp alloc(long event, long id, long mib) {
    return new PlanOp(PlanOp.Kind.ALLOC, event, id, -1, mib * MiB, -1);
  }

  private static PlanOp free(long event, long id) {
    return new PlanOp(PlanOp.Kind.FREE, event, id, -1, 0, -1);
  }

  private static PlanOp probe(long event) {
    return new PlanOp(PlanOp.Kind.PROBE, event, -1, -1, 0, -1);
  }

  /** 64 MiB filled as 16|8|16|8|16 MiB, then the two 8 MiB holes freed: 16 MiB free, 8 MiB the largest block. */
  private static List<PlanOp> holes() {
    List<PlanOp> ops = new ArrayList<>();
    long[] sizes = {16, 8, 16, 8, 16};
    for (int i = 0; i < sizes.length; i++) {
      ops.add(alloc(i + 1, i, sizes[i]));
    }
    ops.add(free(6, 1));
    ops.add(free(7, 3));
    ops.add(probe(7));
    return ops;
  }

  @Test
  void probeFindsTheLargestBlockByBisection() {
    InMemoryDevice device = new InMemoryDevice(64 * MiB, 2 * MiB);
    List<PlanOp> ops = holes();
    for (long id : new long[] {0, 2, 4}) {
      ops.add(free(0, id));
    }
    Executor.Result r = new Executor(device, 2 * MiB, 40).run(new Plan("raw", null, "t", 0, 7, ops));
    assertEquals(1, r.probes().size());
    Executor.Probe p = r.probes().get(0);
    assertEquals(7, p.event());
    assertEquals(16 * MiB, p.freeBytes());
    assertEquals(8 * MiB, p.largestBytes());
    assertEquals(0.5, p.fragmentation(), 1e-12);
    assertEquals(0, device.liveCount(), "probe allocations are freed again");
    // 5 allocs + 2 frees + 3 teardown frees timed; the probe's own calls are not replay calls.
    assertEquals(10, r.calls().size());
    assertTrue(r.calls().stream().allMatch(c -> c.nanos() >= 0 && !c.refused()));
    assertEquals(List.of(PlanOp.Kind.ALLOC, PlanOp.Kind.FREE), List.of(r.calls().get(0).kind(), r.calls().get(5).kind()));
  }

  @Test
  void probeStopsAtItsStepBound() {
    InMemoryDevice device = new InMemoryDevice(64 * MiB, 2 * MiB);
    List<PlanOp> ops = holes();
    Executor.Result r = new Executor(device, 2 * MiB, 2).run(new Plan("raw", null, "t", 0, 7, ops));
    // 8 granules free: 8 fails (step 1), 4 succeeds (step 2), then the bound stops it at 4 granules.
    assertEquals(8 * MiB, r.probes().get(0).largestBytes());
    Executor.Result r1 = new Executor(new InMemoryDevice(64 * MiB, 2 * MiB), 2 * MiB, 1).run(new Plan("raw", null, "t", 0, 7, holes()));
    assertEquals(0, r1.probes().get(0).largestBytes(), "one step only tries all of the free memory");
  }

  @Test
  void aRefusedAllocationIsCountedAndItsFreeSkipped() {
    InMemoryDevice device = new InMemoryDevice(64 * MiB, 2 * MiB);
    List<PlanOp> ops = holes();
    ops.add(alloc(8, 9, 12)); // 16 MiB free, none of it 12 MiB in one piece
    ops.add(alloc(9, 10, 8));
    ops.add(free(10, 9));
    ops.add(probe(10));
    Executor.Result r = new Executor(device, 2 * MiB, 40).run(new Plan("raw", null, "t", 0, 10, ops));
    assertEquals(1, r.oomCount());
    assertEquals(1, r.skippedCount());
    Executor.Call refused = r.calls().stream().filter(Executor.Call::refused).findFirst().orElseThrow();
    assertEquals(12 * MiB, refused.sizeBytes());
    assertEquals(8, refused.event());
    Executor.Probe last = r.probes().get(1);
    assertEquals(8 * MiB, last.freeBytes());
    assertEquals(8 * MiB, last.largestBytes());
    assertEquals(0.0, last.fragmentation());
  }

  @Test
  void arenaMappingsRunAndARefusedPageSkipsItsMapping() {
    InMemoryDevice device = new InMemoryDevice(4 * MiB, 2 * MiB);
    long g = 2 * MiB;
    List<PlanOp> ops = List.of(
        new PlanOp(PlanOp.Kind.RESERVE, 0, -1, -1, 4 * g, -1),
        new PlanOp(PlanOp.Kind.CREATE_PHYSICAL, 1, 1, -1, 2 * g, -1),
        new PlanOp(PlanOp.Kind.MAP, 1, 1, 0, 2 * g, -1),
        new PlanOp(PlanOp.Kind.COPY_H2D, 1, -1, g, g, -1),
        new PlanOp(PlanOp.Kind.CREATE_PHYSICAL, 2, 2, -1, g, -1), // no memory left
        new PlanOp(PlanOp.Kind.MAP, 2, 2, 2 * g, g, -1),
        new PlanOp(PlanOp.Kind.UNMAP, 3, -1, 2 * g, g, -1),
        new PlanOp(PlanOp.Kind.RELEASE_PHYSICAL, 3, 2, -1, 0, -1),
        new PlanOp(PlanOp.Kind.UNMAP, 3, -1, 0, 2 * g, -1),
        new PlanOp(PlanOp.Kind.RELEASE_PHYSICAL, 3, 1, -1, 0, -1),
        new PlanOp(PlanOp.Kind.RELEASE, 0, -1, -1, 4 * g, -1));
    Executor.Result r = new Executor(device, g, 40).run(new Plan("arena", "x", "t", g, 3, ops));
    assertEquals(1, r.oomCount());
    assertEquals(3, r.skippedCount());
    assertEquals(0, device.liveCount());
    assertTrue(device.calls().contains("copy-h2d " + g), device.calls().toString());
    assertFalse(device.calls().contains("map " + g));
  }

  @Test
  void aPlanThatFreesWhatItNeverMadeFails() {
    InMemoryDevice device = new InMemoryDevice(64 * MiB, 2 * MiB);
    Plan bad = new Plan("raw", null, "t", 0, 1, List.of(free(1, 5)));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> new Executor(device, 2 * MiB, 40).run(bad));
    assertTrue(e.getMessage().contains("never made"), e.getMessage());
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.devicemodel.Roofline;
import kvsim.registry.AllocatorRegistry;
import kvsim.serving.ContiguousKvManager.Reservation;
import kvsim.trace.Request;
import org.junit.jupiter.api.Test;

/**
 * The KV breakdown's split of free memory into idle and external fragmentation (Note [Idle or
 * fragmented] in {@link ServingMetrics}), on scripted runs of one second per iteration, and its two
 * windows (Note [Breakdown windows]).
 */
class KvBreakdownTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");
  private static final long TOKEN = 1024;
  private static final long SECOND = 1_000_000_000L;
  private static final List<String> CATEGORIES = List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle");

  /** A contiguous manager over a first-fit allocator of {@code tokens} one-KiB tokens (no rounding). */
  private static ContiguousKvManager firstFit(long tokens, Reservation r, int maxModelLen) {
    Region region = new Region("kv", 0, tokens * TOKEN);
    Allocator a = AllocatorRegistry.create(new AllocatorContext("first-fit", region, DEVICE, MODEL, Map.of()));
    return new ContiguousKvManager(a, tokens * TOKEN, r, TOKEN, maxModelLen, 1e12);
  }

  /** Runs a scheduler one iteration per second as the engine does (schedule, sample, take the outcome), all requests arriving at 0. */
  private static final class Script {
    final Scheduler scheduler;
    final KvManager kv;
    final ServingMetrics metrics = new ServingMetrics();
    final StepPlan plan = new StepPlan();
    final List<Boolean> waitingForMemory = new ArrayList<>();
    long t;

    Script(Scheduler scheduler, KvManager kv) {
      this.scheduler = scheduler;
      this.kv = kv;
    }

    void submit(long id, int prompt, int output) {
      metrics.recordArrival(0);
      Sequence s = new Sequence(Request.of(id, 0, prompt, output), output);
      kv.add(s);
      scheduler.add(s);
    }

    /** Runs iterations until nothing is left, then samples the idle engine; returns the iterations. */
    int runToEnd() {
      int n = 0;
      while (step()) {
        n++;
      }
      return n;
    }

    /** Runs one iteration and returns true, or samples the idle engine and returns false when nothing can run. */
    boolean step() {
      scheduler.schedule(plan);
      if (plan.size() == 0) {
        metrics.recordIdle(t, kv);
        return false;
      }
      metrics.recordIteration(t, plan, kv, scheduler.running(), scheduler.waiting(), scheduler.waitingForMemory());
      waitingForMemory.add(scheduler.waitingForMemory());
      scheduler.updateFromOutput(plan, EngineTokens.INSTANCE);
      t += SECOND;
      return true;
    }

    double share(int row, String category) {
      return metrics.series().get(row)[ServingMetrics.SERIES_COLUMNS.indexOf(category)];
    }
  }

  @Test
  void freeMemoryIsIdleWhileNothingWaits() {
    // Two requests of final length 128 in 1,024 slots: both admitted at once, nothing ever waits.
    ContiguousKvManager kv = firstFit(1024, Reservation.ORACLE, 600);
    Script s = new Script(new OrcaScheduler(SchedulerConfig.defaults(600), kv), kv);
    s.submit(0, 100, 28);
    s.submit(1, 100, 28);
    assertEquals(28, s.runToEnd());
    assertFalse(s.waitingForMemory.contains(true));
    // After the first iteration: 200 token states, 56 reserved, 768 free and idle.
    assertEquals(200 / 1024.0, s.share(0, "token_states"), 1e-12);
    assertEquals(56 / 1024.0, s.share(0, "reserved_future"), 1e-12);
    assertEquals(768 / 1024.0, s.share(0, "idle"), 1e-12);
    for (int i = 0; i < 28; i++) {
      assertEquals(0, s.share(i, "external_fragmentation"), "iteration " + i);
      assertEquals(768 / 1024.0, s.share(i, "idle"), 1e-12, "the reservations are whole: the same memory is free throughout");
    }
    // Over 28 s: memory in use 256 slots throughout, 768 idle; the memory in use is all sequences'.
    assertEquals(0.75, s.metrics.meanFraction("idle"), 1e-12);
    assertEquals(0, s.metrics.meanFraction("external_fragmentation"));
    assertEquals(0, s.metrics.meanFraction("internal_fragmentation"));
    @SuppressWarnings("unchecked")
    Map<String, Object> used = (Map<String, Object>) ((Map<String, Object>) s.metrics.toMap().get("kv_breakdown")).get("used_memory");
    assertEquals(1.0, (Double) used.get("token_states") + (Double) used.get("reserved_future"), 1e-12);
    assertEquals(0.0, used.get("external_fragmentation"));
  }

  @Test
  void freeMemoryThatCannotHoldTheWaitingReservationIsExternalFragmentation() {
    // Orca(Max) reserves 600 slots per request in 1,024: the second request waits with 424 slots
    // free that cannot hold its reservation; once the first finishes, it runs and nothing waits.
    ContiguousKvManager kv = firstFit(1024, Reservation.MAX, 600);
    Script s = new Script(new OrcaScheduler(SchedulerConfig.defaults(600), kv), kv);
    s.submit(0, 100, 28);
    s.submit(1, 100, 28);
    assertEquals(56, s.runToEnd());
    assertTrue(kv.counters().get("reservations_refused") > 0, "the second reservation was refused while the first ran");
    for (int i = 0; i < 56; i++) {
      boolean waits = i < 28;
      assertEquals(waits, s.waitingForMemory.get(i), "iteration " + i);
      assertEquals(waits ? 424 / 1024.0 : 0, s.share(i, "external_fragmentation"), 1e-12, "iteration " + i);
      assertEquals(waits ? 0 : 424 / 1024.0, s.share(i, "idle"), 1e-12, "iteration " + i);
      double sum = 0;
      for (String c : CATEGORIES) {
        sum += s.share(i, c);
      }
      assertEquals(1.0, sum, 1e-12, "iteration " + i);
    }
    // Samples at 0..55 s and the idle end at 56 s, each holding 1 s: 28 s fragmented, 28 s idle.
    assertEquals(0.5 * 424 / 1024, s.metrics.meanFraction("external_fragmentation"), 1e-12);
    assertEquals(0.5 * 424 / 1024, s.metrics.meanFraction("idle"), 1e-12);
    assertEquals(472 / 1024.0, s.metrics.meanFraction("internal_fragmentation"), 1e-12, "600 reserved, 128 used, every second");
  }

  @Test
  void vllmV1FreeBlocksAreFragmentationOnlyWhileTheHeadCannotBeAllocated() {
    // 10 blocks of 16 slots: the first prompt takes 7, the second (7 blocks) cannot be allocated
    // with 3 free, and waits on memory until the first finishes.
    CountingKvManager kv = new CountingKvManager(10, 16);
    Script s = new Script(new VllmV1Scheduler(SchedulerConfig.defaults(2048), kv), kv);
    s.submit(0, 100, 4);
    s.submit(1, 100, 4);
    s.runToEnd();
    assertTrue(s.waitingForMemory.get(0), "the second prompt's allocation failed");
    assertEquals(3 * 16 / 160.0, s.share(0, "external_fragmentation"), 1e-12);
    assertEquals(0, s.share(0, "idle"));
    int last = s.metrics.series().size() - 1;
    assertFalse(s.waitingForMemory.get(last), "alone at the end, nothing waits");
    assertEquals(0, s.share(last, "external_fragmentation"));
    assertTrue(s.share(last, "idle") > 0);
  }

  /** A vLLM v0 paged manager of {@code numBlocks} blocks of 16 tokens, with v0's 1 % watermark. */
  private static PagedKvManager v0(int numBlocks) {
    BlockManagerConfig c = new BlockManagerConfig(numBlocks, 16, false, BlockManagerConfig.Mode.V0, BlockManagerConfig.DEFAULT_WATERMARK,
        BlockManagerConfig.FreeOrder.LIFO, 0, 2048, MODEL.kvBytesPerToken());
    return new PagedKvManager(AllocatorRegistry.blockManager(c), 0, AllocatorRegistry.blockManagerLatency());
  }

  @Test
  void vllmV0WaitsForMemoryOnTheWatermarkButNotOnTheTokenBudget() {
    // 100 blocks: a prompt of 97 leaves 3, and a prompt of 3 more would leave less than the
    // watermark's block: LATER, so its 3 free blocks are external fragmentation.
    PagedKvManager kv = v0(100);
    Script s = new Script(new VllmV0Scheduler(new SchedulerConfig(2048, 256, 2048, false, 0), kv), kv);
    s.submit(1, 97 * 16, 5);
    s.submit(2, 3 * 16, 5);
    assertTrue(s.step());
    assertTrue(s.waitingForMemory.get(0));
    assertEquals(1, s.scheduler.waiting());
    assertEquals(3 * 16 / 1600.0, s.share(0, "external_fragmentation"), 1e-12);
    assertEquals(0, s.share(0, "idle"));
    // 1,000 blocks: 1,500 + 1,000 prompt tokens pass the budget of 2,048, so the second waits for
    // the budget, not for memory, and the free blocks are idle.
    PagedKvManager big = v0(1000);
    Script t = new Script(new VllmV0Scheduler(new SchedulerConfig(2048, 256, 2048, false, 0), big), big);
    t.submit(1, 1500, 5);
    t.submit(2, 1000, 5);
    assertTrue(t.step());
    assertEquals(1, t.scheduler.waiting());
    assertFalse(t.waitingForMemory.get(0));
    assertEquals(0, t.share(0, "external_fragmentation"));
    assertEquals((1000 - 94) * 16 / 16000.0, t.share(0, "idle"), 1e-12);
  }

  @Test
  void theSteadyWindowRunsFromTheArrivalOfTheFirstTenthToTheLastArrival() throws IOException {
    assertEquals(0, KvBreakdownWindows.steadyFromIndex(1));
    assertEquals(0, KvBreakdownWindows.steadyFromIndex(10));
    assertEquals(1, KvBreakdownWindows.steadyFromIndex(11));
    assertEquals(1, KvBreakdownWindows.steadyFromIndex(20));
    assertEquals(2, KvBreakdownWindows.steadyFromIndex(21));
    // 25 requests, one a second from 0 s: the 3rd arrives at 2 s, the last at 24 s.
    List<Request> requests = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      requests.add(Request.of(i, i * SECOND, 64, 16));
    }
    CountingKvManager kv = new CountingKvManager(400, 16);
    SchedulerConfig config = SchedulerConfig.defaults(2048);
    ServingMetrics m = new ServingEngine(new VllmV1Scheduler(config, kv), kv, Roofline.of(MODEL, DEVICE), config, MODEL.kvBytesPerToken(), true, null)
        .run(ServingEngineTest.source(requests));
    assertArrayEquals(new double[] {2.0, 24.0}, m.steadyWindowSeconds());
    Map<String, Object> summary = m.toMap();
    assertEquals(Map.of("kind", "steady state", "from_s", 2.0, "to_s", 24.0), window(summary, "kv_breakdown_steady"));
    Map<String, Object> whole = window(summary, "kv_breakdown");
    assertEquals("whole run", whole.get("kind"));
    assertEquals(0.0, whole.get("from_s"));
    assertEquals((Double) summary.get("span_seconds"), (Double) whole.get("to_s"), 1e-9, "the whole run: first arrival to last finish");
    // Requests come one at a time and finish long before the next: mostly idle, nothing waits.
    assertEquals(0, m.meanFraction("external_fragmentation"));
    assertTrue(m.steadyMeanFraction("idle") > 0.9, "idle " + m.steadyMeanFraction("idle"));
    double sum = 0;
    for (String c : CATEGORIES) {
      sum += m.steadyMeanFraction(c);
    }
    assertEquals(1.0, sum, 1e-9);
  }

  @Test
  void oneRequestHasAnEmptySteadyWindow() throws IOException {
    CountingKvManager kv = new CountingKvManager(400, 16);
    SchedulerConfig config = SchedulerConfig.defaults(2048);
    ServingMetrics m = new ServingEngine(new VllmV1Scheduler(config, kv), kv, Roofline.of(MODEL, DEVICE), config, MODEL.kvBytesPerToken(), true, null)
        .run(ServingEngineTest.source(List.of(Request.of(0, 3 * SECOND, 64, 16))));
    assertArrayEquals(new double[] {3.0, 3.0}, m.steadyWindowSeconds());
    assertTrue(Double.isNaN(m.steadyMeanFraction("token_states")));
    @SuppressWarnings("unchecked")
    Map<String, Object> tokens = (Map<String, Object>) ((Map<String, Object>) m.toMap().get("kv_breakdown_steady")).get("token_states");
    assertNull(tokens.get("mean"));
    assertTrue(m.meanFraction("token_states") > 0, "the whole run is defined");
  }

  @Test
  void aWindowIsTheTimeWeightedMeanBetweenItsArrivals() {
    KvBreakdownWindows w = new KvBreakdownWindows();
    double[] busy = {0.5, 0.1, 0.1, 0.1, 0.2};
    double[] quiet = {0.1, 0, 0, 0, 0.9};
    // 20 arrivals at 0..19 s; the steady window is 1 s to 19 s. Busy from 0 s to 10 s, quiet after,
    // with a short peak of token states at 12 s, and a last sample at 30 s.
    for (int i = 0; i < 20; i++) {
      w.arrival(i * SECOND);
      if (i == 0) {
        w.record(0, busy);
      }
      if (i == 10) {
        w.record(10 * SECOND, quiet);
      }
      if (i == 12) {
        w.record(12 * SECOND, new double[] {0.8, 0, 0, 0, 0.2});
        w.record(12 * SECOND, quiet);
      }
    }
    w.record(30 * SECOND, quiet);
    KvBreakdownWindows.Window steady = w.steady();
    assertEquals(1.0, steady.fromSeconds());
    assertEquals(19.0, steady.toSeconds());
    assertEquals((9 * 0.5 + 9 * 0.1) / 18, steady.mean("token_states"), 1e-12);
    assertEquals((9 * 0.2 + 9 * 0.9) / 18, steady.mean("idle"), 1e-12);
    assertEquals(0.8, steady.peak()[0], 1e-12, "the peak sampled inside the window");
    KvBreakdownWindows.Window whole = w.whole();
    assertEquals(0.0, whole.fromSeconds());
    assertEquals(30.0, whole.toSeconds());
    assertEquals((10 * 0.5 + 20 * 0.1) / 30, whole.mean("token_states"), 1e-12);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> window(Map<String, Object> summary, String field) {
    return (Map<String, Object>) ((Map<String, Object>) summary.get(field)).get("window");
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.Request;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** vLLM v0's scheduling rules ({@code Scheduler._schedule_default} of vLLM v0 at commit 1fb9c1b, with {@code BlockSpaceManagerV2}'s watermark), one test per rule, over the v0 block manager. */
class VllmV0SchedulerTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");

  private static PagedKvManager manager(int numBlocks) {
    BlockManagerConfig c = new BlockManagerConfig(numBlocks, 16, false, BlockManagerConfig.Mode.V0, BlockManagerConfig.DEFAULT_WATERMARK,
        BlockManagerConfig.FreeOrder.LIFO, 0, 2048, MODEL.kvBytesPerToken());
    return new PagedKvManager(AllocatorRegistry.blockManager(c), 0, AllocatorRegistry.blockManagerLatency());
  }

  private static Sequence seq(PagedKvManager kv, long id, int prompt, int output) {
    Sequence s = new Sequence(Request.of(id, 0, prompt, output), output);
    kv.add(s);
    return s;
  }


  private static SchedulerConfig config(int budget, int maxSeqs) {
    return new SchedulerConfig(budget, maxSeqs, 2048, false, 0);
  }

  @Test
  void anIterationThatPrefillsRunsNoDecode() {
    PagedKvManager kv = manager(1000);
    VllmV0Scheduler sched = new VllmV0Scheduler(config(4096, 256), kv);
    Sequence a = seq(kv, 1, 100, 5);
    sched.add(a);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(100, plan.tokens(0));
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    Sequence b = seq(kv, 2, 50, 5);
    sched.add(b);
    sched.schedule(plan);
    // b's prefill runs alone: a does not decode in this iteration.
    assertEquals(1, plan.size());
    assertSame(b, plan.sequence(0));
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    sched.schedule(plan);
    assertEquals(2, plan.size()); // both decode
    assertEquals(1, plan.tokens(0));
    assertEquals(1, plan.tokens(1));
  }

  @Test
  void promptsAreAdmittedWholeWithinTheTokenBudget() {
    PagedKvManager kv = manager(1000);
    VllmV0Scheduler sched = new VllmV0Scheduler(config(2048, 256), kv);
    sched.add(seq(kv, 1, 1500, 5));
    sched.add(seq(kv, 2, 1000, 5)); // 1,500 + 1,000 > 2,048: waits for the next iteration
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(1500, plan.tokens(0));
    assertEquals(1, sched.waiting());
  }

  @Test
  void theWatermarkKeepsOnePercentOfTheBlocksFreeAtAdmission() {
    // 100 blocks, watermark int(0.01 × 100) = 1 block. A prompt of 97 blocks leaves 3: OK; then a
    // prompt of 3 blocks would leave 0 < 1: LATER, and admission stops.
    PagedKvManager kv = manager(100);
    VllmV0Scheduler sched = new VllmV0Scheduler(config(4096, 256), kv);
    sched.add(seq(kv, 1, 97 * 16, 1));
    sched.add(seq(kv, 2, 48, 1));
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(1, sched.waiting());
    assertEquals(0, sched.ignored());
    assertEquals(3, kv.blockManager().numFreeBlocks());
  }

  @Test
  void aPromptTheWatermarkCanNeverAdmitIsIgnored() {
    // 100 blocks, watermark 1: a prompt of 100 blocks leaves 0 < 1 even on an empty pool.
    PagedKvManager kv = manager(100);
    VllmV0Scheduler sched = new VllmV0Scheduler(config(4096, 256), kv);
    Sequence never = seq(kv, 1, 100 * 16, 1);
    sched.add(never);
    sched.add(seq(kv, 2, 16, 1));
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, sched.ignored());
    assertEquals(Sequence.Status.FINISHED, never.status());
    assertEquals(1, plan.size()); // the next request is admitted in the same iteration
  }

  @Test
  void decodeGrowthPreemptsTheLastRunningByRecompute() {
    // 5 blocks, watermark 0 (int(0.05)); a and b take 2 full blocks each, c takes 1.
    PagedKvManager kv = manager(5);
    VllmV0Scheduler sched = new VllmV0Scheduler(config(4096, 256), kv);
    Sequence a = seq(kv, 1, 32, 10);
    Sequence b = seq(kv, 2, 32, 10);
    Sequence c = seq(kv, 3, 16, 10);
    for (Sequence s : List.of(a, b, c)) {
      sched.add(s);
    }
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(3, plan.size());
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    // a and b each need a third block to decode, c a second; none is free. a's decode preempts the
    // last running, c, and takes its block; b's decode then finds none free and b, now the last
    // running, preempts itself. Both go to the front of the waiting queue: b, then c.
    sched.schedule(plan);
    assertEquals(2, plan.preempted());
    assertEquals(1, plan.size());
    assertSame(a, plan.sequence(0));
    for (Sequence s : List.of(b, c)) {
      assertEquals(Sequence.Status.WAITING, s.status());
      assertEquals(0, s.numComputedTokens());
      assertEquals(1, s.preemptions());
    }
    assertEquals(2, sched.waiting());
  }

  @Property(tries = 200)
  void everyRandomTraceFinishesWithInvariantsAfterEveryIteration(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 131, max = 600) int numBlocks,
      @ForAll @IntRange(min = 1, max = 60) int count) throws IOException {
    List<Request> requests = ServingEngineTest.randomRequests(seed, count, 50, 1500, 600);
    PagedKvManager kv = manager(numBlocks);
    SchedulerConfig config = config(2048, 256);
    ServingMetrics m = new ServingEngine(new VllmV0Scheduler(config, kv), kv, Roofline.of(MODEL, DeviceSpec.parse("a100-40")), config,
        MODEL.kvBytesPerToken(), true, null).run(ServingEngineTest.source(requests));
    assertEquals(count, m.arrived());
    assertEquals(count, m.finished() + m.rejected());
    assertEquals(numBlocks, kv.blockManager().numFreeBlocks(), "every block is free at the end");
    assertTrue(kv.blockManager().requests().isEmpty());
  }
}

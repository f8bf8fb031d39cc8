package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import kvsim.alloc.LatencyModel;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.Request;
import org.junit.jupiter.api.Test;

/**
 * vLLM v1's full-prompt admission gate ({@code scheduler_reserve_full_isl}) and asynchronous
 * scheduling ({@code AsyncScheduler}, {@code EngineCore.step_with_batch_queue}) at vLLM commit
 * ec5ef0a, through {@link ScriptedServing} and the timed {@link ServingEngine}.
 */
class VllmV1GateAndAsyncTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final Roofline ROOFLINE = Roofline.of(MODEL, DeviceSpec.parse("a100-40"));

  /** A v1 block manager of {@code numBlocks} blocks of 4 tokens (block 0 the null block). */
  private static KvBlockManager blocks(int numBlocks, int maxModelLen) {
    return AllocatorRegistry.blockManager(new BlockManagerConfig(numBlocks, 4, true, BlockManagerConfig.Mode.V1, 0,
        BlockManagerConfig.FreeOrder.FIFO, 0, maxModelLen, MODEL.kvBytesPerToken()));
  }

  private static int[] range(int from, int to) {
    int[] t = new int[to - from];
    for (int i = 0; i < t.length; i++) {
      t[i] = from + i;
    }
    return t;
  }

  private static String scheduled(ScriptedServing.StepResult r) {
    return r.scheduled().stream().map(s -> s.req() + ":" + s.tokens()).collect(Collectors.joining(",", "{", "}"));
  }

  /** The tight script: 4 usable blocks of 4 tokens, a budget of 4; A 8 prompt tokens and 4 outputs, B 12 prompt tokens. */
  private static List<ScriptedServing.StepResult> tightScript(boolean gate) {
    SchedulerConfig config = new SchedulerConfig(4, 256, 64, true, 0, 0.01, gate, false);
    ScriptedServing s = new ScriptedServing(blocks(5, 64), config);
    s.submit("A", range(0, 8), 4, null);
    s.submit("B", range(100, 112), 2, null);
    List<ScriptedServing.StepResult> steps = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      steps.add(s.step());
      s.checkInvariants();
    }
    return steps;
  }

  @Test
  void withTheGateOnBWaitsUntilAFinishesInsteadOfBeingAdmittedOnItsFirstChunk() {
    List<ScriptedServing.StepResult> on = tightScript(true);
    assertEquals("{A:4}", scheduled(on.get(0)));
    assertEquals("{A:4}", scheduled(on.get(1)));
    // Step 2: 3 tokens of budget are left, but B's 12 tokens need 3 blocks and 1 is free.
    assertEquals("{A:1}", scheduled(on.get(2)));
    assertEquals(List.of("B"), on.get(2).waiting());
    assertEquals("{A:1}", scheduled(on.get(3)));
    assertEquals("{A:1}", scheduled(on.get(4)));
    assertEquals(List.of("A"), on.get(4).finished());
    assertEquals("{B:4}", scheduled(on.get(5)));
    assertTrue(on.stream().allMatch(r -> r.preempted().isEmpty()), "the gate prevents B's preemption");
    assertEquals(List.of("B"), on.get(8).finished());
  }

  @Test
  void withTheGateOffBTakesTheLastBlockOnItsFirstChunkAndIsPreemptedAtTheNextStep() {
    List<ScriptedServing.StepResult> off = tightScript(false);
    assertEquals("{A:1,B:3}", scheduled(off.get(2)));
    assertEquals(4, off.get(2).scheduled().get(1).newBlockIds()[0], "B gets the last free block");
    assertEquals(List.of("B"), off.get(3).preempted());
    assertEquals("{A:1}", scheduled(off.get(3)));
    assertEquals("{A:1,B:3}", scheduled(off.get(4)));
    assertEquals(List.of("B"), off.get(8).finished());
  }

  /** Runs A (8 prompt, 4 out) and B (12 prompt, 2 out), both at time 0, through the timed engine over a 4-block pool. */
  private static ServingMetrics engineRun(boolean gate, boolean async) throws IOException {
    SchedulerConfig config = new SchedulerConfig(4, 256, 16, true, 0, 0.01, gate, async);
    PagedKvManager kv = new PagedKvManager(blocks(5, 16), 0, new LatencyModel(0, 0, 0, 0, 0, 0));
    VllmV1Scheduler sched = new VllmV1Scheduler(config, kv);
    ServingEngine engine = new ServingEngine(sched, kv, ROOFLINE, config, MODEL.kvBytesPerToken(), true, null);
    return engine.run(ServingEngineTest.source(List.of(Request.of(0, 0, 8, 4), Request.of(1, 0, 12, 2))));
  }

  @Test
  void theServingEngineRunsTheGateToo() throws IOException {
    for (boolean async : new boolean[] {false, true}) {
      ServingMetrics on = engineRun(true, async);
      ServingMetrics off = engineRun(false, async);
      assertEquals(2, on.finished());
      assertEquals(2, off.finished());
      assertEquals(6, on.outputTokens());
      assertEquals(0, on.preemptions(), "async " + async);
      assertTrue(off.preemptions() > 0, "async " + async + ": without the gate B is preempted");
    }
  }

  @Test
  void asynchronouslyARequestFinishingAtStepNIsNotScheduledInNPlusOneAndIsFreedAfterNsOutput() {
    ScriptedServing s = new ScriptedServing(blocks(3, 64), new SchedulerConfig(2048, 256, 64, true, 0, 0.01, true, true));
    s.submit("A", range(0, 4), 2, null);
    // Call 0 plans step 0 (A's prompt, block 1); nothing was in flight, so no output is taken.
    ScriptedServing.StepResult c0 = s.step();
    assertEquals("{A:4}", scheduled(c0));
    assertEquals(List.of(), c0.finished());
    // Call 1 plans step 1 before step 0's token is known: A decodes that token, whose slot takes
    // block 2 one step early; then step 0's output is taken.
    ScriptedServing.StepResult c1 = s.step();
    assertEquals("{A:1}", scheduled(c1));
    assertEquals(2, c1.scheduled().get(0).newBlockIds()[0]);
    s.submit("B", range(100, 104), 1, null);
    // Call 2 plans step 2 while step 1, which samples A's last token, is in flight: A is not
    // scheduled again, and it still holds both blocks, so B does not pass the gate. Then step 1's
    // output is taken: A finishes and its blocks are freed.
    ScriptedServing.StepResult c2 = s.step();
    assertEquals("{}", scheduled(c2));
    assertEquals(List.of("A"), c2.finished());
    assertEquals(List.of("B"), c2.waiting());
    // Call 3: the freed blocks admit B.
    assertEquals("{B:4}", scheduled(s.step()));
    s.checkInvariants();
  }

  @Test
  void synchronouslyTheSameRequestIsFreedInItsOwnStepAndBIsAdmittedAtOnce() {
    ScriptedServing s = new ScriptedServing(blocks(3, 64), new SchedulerConfig(2048, 256, 64, true, 0, 0.01, true, false));
    s.submit("A", range(0, 4), 2, null);
    assertEquals("{A:4}", scheduled(s.step()));
    ScriptedServing.StepResult s1 = s.step();
    assertEquals("{A:1}", scheduled(s1));
    assertEquals(List.of("A"), s1.finished());
    s.submit("B", range(100, 104), 1, null);
    assertEquals("{B:4}", scheduled(s.step()));
  }

  @Test
  void asynchronouslyAPreemptedRequestStillReceivesItsStepsLastToken() {
    // 2 usable blocks of 4 tokens. Step 0 prefills A (4 tokens, 2 outputs; block 1) and B (4
    // tokens, 1 output; block 2): B's first token is its last. Step 1 is planned before that
    // token is known: A's next token needs a block and none is free, so B, last in the running
    // list, is preempted (it was not scheduled: its step-0 token is its last). Step 0's output
    // then gives B its token, which finishes it while it waits (vLLM's update_from_output removes
    // it from the waiting queue).
    ScriptedServing s = new ScriptedServing(blocks(3, 64), new SchedulerConfig(2048, 256, 64, true, 0, 0.01, true, true));
    s.submit("A", range(0, 4), 2, null);
    s.submit("B", range(100, 104), 1, null);
    ScriptedServing.StepResult c0 = s.step();
    assertEquals("{A:4,B:4}", scheduled(c0));
    assertEquals(List.of(), c0.finished());
    ScriptedServing.StepResult c1 = s.step();
    s.checkInvariants();
    assertEquals("{A:1}", scheduled(c1));
    assertEquals(2, c1.scheduled().get(0).newBlockIds()[0], "A takes the block B gave up");
    assertEquals(List.of("B"), c1.preempted());
    assertEquals(List.of("B"), c1.finished());
    assertEquals(List.of(), c1.waiting());
    ScriptedServing.StepResult c2 = s.step();
    assertEquals("{}", scheduled(c2));
    assertEquals(List.of("A"), c2.finished());
    assertEquals(List.of(), c2.running());
    s.checkInvariants();
  }

  @Test
  void anArrivalWhileAStepRunsJoinsTheStepAfterNextAsynchronously() throws IOException {
    double[] maxTtft = new double[2];
    for (int a = 0; a < 2; a++) {
      SchedulerConfig config = new SchedulerConfig(2048, 256, 2048, true, 0, 0.01, true, a == 1);
      CountingKvManager kv = new CountingKvManager(1000, 16);
      ServingEngine engine = new ServingEngine(new VllmV1Scheduler(config, kv), kv, ROOFLINE, config, MODEL.kvBytesPerToken(), true, null);
      ServingMetrics m = engine.run(ServingEngineTest.source(List.of(Request.of(0, 0, 200, 20), Request.of(1, 1, 10, 2))));
      assertEquals(2, m.finished());
      assertEquals(22, m.outputTokens());
      assertEquals(kv.totalBlocks, kv.freeBlocks, "all memory returns");
      maxTtft[a] = m.ttft.max();
    }
    // Request 1 arrives while step 0 (request 0's prompt) runs: synchronously it joins step 1;
    // asynchronously step 1 was planned already, so it joins step 2, a decode step later.
    assertTrue(maxTtft[1] > maxTtft[0], "async " + maxTtft[1] + " s, sync " + maxTtft[0] + " s");
  }

  @Test
  void theFactoryEchoesTheVllmModelledAndBothSettings() {
    Map<String, Object> parts = new java.util.LinkedHashMap<>();
    VllmV1Scheduler.FACTORY.describe(new SchedulerConfig(2048, 256, 2048, true, 0, 0.01, false, true), parts);
    assertEquals(VllmV1Scheduler.UPSTREAM, parts.get("models"));
    assertEquals(false, parts.get("scheduler_reserve_full_isl"));
    assertEquals(true, parts.get("async_scheduling"));
    assertTrue(VllmV1Scheduler.FACTORY.reads().containsAll(List.of("scheduler-reserve-full-isl", "async-scheduling")));
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import kvsim.serving.ContiguousKvManager.Reservation;
import org.junit.jupiter.api.Test;

/**
 * Orca's scheduling rules, one test per rule, over a contiguous KV manager on first-fit with one
 * token per KiB and KiB alignment, so that reservations are exactly their tokens.
 */
class OrcaSchedulerTest {
  private static final long TOKEN = ContiguousKvManagerTest.TOKEN;

  private static ContiguousKvManager firstFit(long tokens, Reservation r) {
    Region region = new Region("kv", 0, tokens * TOKEN);
    Allocator a = AllocatorRegistry.create(new AllocatorContext("first-fit", region, ContiguousKvManagerTest.DEVICE, ContiguousKvManagerTest.MODEL,
        Map.of("alignment", "1KiB")));
    return new ContiguousKvManager(a, tokens * TOKEN, r, TOKEN, 2048, 1e12);
  }

  private static Sequence seq(long id, int prompt, int output) {
    return ContiguousKvManagerTest.seq(id, prompt, output);
  }

  private static OrcaScheduler orca(KvManager kv, int budget, int maxNumSeqs) {
    return new OrcaScheduler(new SchedulerConfig(budget, maxNumSeqs, 2048, true, 0), kv);
  }

  private static void add(OrcaScheduler sched, KvManager kv, Sequence s) {
    kv.add(s);
    sched.add(s);
  }


  @Test
  void aPromptIsPrefilledWholeInOneIteration() {
    ContiguousKvManager kv = firstFit(4096, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 2048, 256);
    add(sched, kv, seq(1, 1500, 5));
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(1500, plan.tokens(0));
  }

  @Test
  void runningSequencesComeFirstAndEachDecodesItsNextToken() {
    ContiguousKvManager kv = firstFit(4096, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 2048, 256);
    Sequence a = seq(1, 100, 5);
    Sequence b = seq(2, 200, 5);
    add(sched, kv, a);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    add(sched, kv, b);
    sched.schedule(plan);
    assertEquals(2, plan.size());
    assertSame(a, plan.sequence(0));
    assertEquals(1, plan.tokens(0));
    assertSame(b, plan.sequence(1));
    assertEquals(200, plan.tokens(1));
  }

  @Test
  void aSequenceIsAdmittedOnlyWithItsWholeReservationAndBlocksTheQueueBehindIt() {
    ContiguousKvManager kv = firstFit(1000, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 2048, 256);
    add(sched, kv, seq(1, 100, 500)); // reserves 600
    Sequence b = seq(2, 100, 400); // needs 500 of the 400 left, although its prompt would fit
    add(sched, kv, b);
    add(sched, kv, seq(3, 50, 50)); // 100 would fit, but FCFS blocks it
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(1, sched.running());
    assertEquals(2, sched.waiting());
    assertEquals(0, b.numComputedTokens());
    assertEquals(Sequence.Status.WAITING, b.status());
  }

  @Test
  void atMostMaxNumSeqsRun() {
    ContiguousKvManager kv = firstFit(100_000, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 2048, 3);
    for (int i = 0; i < 5; i++) {
      add(sched, kv, seq(i, 10, 10));
    }
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(3, plan.size());
    assertEquals(3, sched.running());
    assertEquals(2, sched.waiting());
  }

  @Test
  void aPromptThatDoesNotFitTheRemainingTokenBudgetWaits() {
    ContiguousKvManager kv = firstFit(100_000, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 100, 256);
    add(sched, kv, seq(1, 60, 5));
    add(sched, kv, seq(2, 60, 5));
    add(sched, kv, seq(3, 10, 5)); // fits the budget, but waits behind the second
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(2, sched.waiting());
  }

  @Test
  void aPromptLongerThanTheWholeBudgetRunsAlone() {
    ContiguousKvManager kv = firstFit(100_000, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 100, 256);
    Sequence a = seq(1, 10, 5);
    add(sched, kv, a);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    add(sched, kv, seq(2, 150, 5));
    // a's decode is scheduled: the long prompt waits for an iteration of its own.
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertSame(a, plan.sequence(0));
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    a.abort();
    kv.finish(a);
    sched.removeFinished();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(150, plan.tokens(0));
  }

  @Test
  void nothingIsEverPreempted() {
    // Memory for exactly two reservations; four sequences run to their end without preemption.
    ContiguousKvManager kv = firstFit(200, Reservation.ORACLE);
    OrcaScheduler sched = orca(kv, 2048, 256);
    Sequence[] all = {seq(1, 50, 50), seq(2, 50, 50), seq(3, 50, 50), seq(4, 50, 50)};
    for (Sequence s : all) {
      add(sched, kv, s);
    }
    StepPlan plan = new StepPlan();
    int iterations = 0;
    while (sched.running() + sched.waiting() > 0) {
      sched.schedule(plan);
      assertEquals(0, plan.preempted());
      assertTrue(sched.running() <= 2);
      for (int i = 0; i < plan.size(); i++) {
        assertEquals(0, plan.sequence(i).preemptions());
      }
      sched.updateFromOutput(plan, EngineTokens.INSTANCE);
      iterations++;
    }
    assertEquals(100, iterations, "two waves of 50 iterations");
    for (Sequence s : all) {
      assertEquals(Sequence.Status.FINISHED, s.status());
    }
  }

  @Test
  void aSequenceThatCannotGrowWaitsAnIterationAndNobodyIsAdmitted() {
    // 460 tokens. a holds [0, 150), b [150, 170); a's growth to 300 does not fit the 290 free.
    ContiguousKvManager kv = firstFit(460, Reservation.GROW);
    OrcaScheduler sched = orca(kv, 2048, 256);
    Sequence a = seq(1, 150, 10);
    Sequence b = seq(2, 20, 2);
    add(sched, kv, a);
    add(sched, kv, b);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    Sequence c = seq(3, 10, 1);
    add(sched, kv, c);
    sched.schedule(plan);
    // a stalls; b grows (to 40 tokens) and decodes; c, which would fit, is not admitted.
    assertEquals(1, plan.size());
    assertSame(b, plan.sequence(0));
    assertEquals(1, sched.stalls());
    assertEquals(150, a.numComputedTokens());
    assertEquals(1, sched.waiting());
    sched.updateFromOutput(plan, EngineTokens.INSTANCE); // b finishes: 310 free in one piece
    sched.schedule(plan);
    assertSame(a, plan.sequence(0));
    assertEquals(151, a.numComputedTokens());
    assertSame(c, plan.sequence(1));
    assertEquals(2, kv.counters().get("copies"), "b's growth, then a's");
  }

  @Test
  void whenEveryRunningSequenceStallsTheSchedulerFailsLoudly() {
    ContiguousKvManager kv = firstFit(256, Reservation.GROW);
    OrcaScheduler sched = orca(kv, 2048, 256);
    add(sched, kv, seq(1, 100, 10));
    add(sched, kv, seq(2, 100, 10));
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> sched.schedule(plan));
    assertTrue(e.getMessage().startsWith("out of KV memory"), e.getMessage());
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kvsim.trace.Request;
import org.junit.jupiter.api.Test;

/** vLLM v1's scheduling rules ({@code Scheduler.schedule} of vLLM v1 at commit ec5ef0a), one test per rule, on a counting KV manager. */
class VllmV1SchedulerTest {
  private static Sequence seq(long id, int prompt, int output) {
    return new Sequence(Request.of(id, 0, prompt, output), output);
  }


  @Test
  void runningSequencesComeFirstAndShareTheTokenBudget() {
    CountingKvManager kv = new CountingKvManager(100, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(100, 256, 2048, true, 0), kv);
    Sequence a = seq(1, 60, 5);
    Sequence b = seq(2, 60, 5);
    sched.add(a);
    sched.add(b);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    // a takes 60 tokens, b the 40 left: chunked prefill.
    assertEquals(2, plan.size());
    assertEquals(60, plan.tokens(0));
    assertEquals(40, plan.tokens(1));
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    sched.schedule(plan);
    // a decodes one token (running first), b prefills its last 20.
    assertSame(a, plan.sequence(0));
    assertEquals(1, plan.tokens(0));
    assertSame(b, plan.sequence(1));
    assertEquals(20, plan.tokens(1));
  }

  @Test
  void withoutChunkedPrefillAPromptThatDoesNotFitTheBudgetWaits() {
    CountingKvManager kv = new CountingKvManager(100, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(100, 256, 100, false, 0), kv);
    sched.add(seq(1, 60, 5));
    sched.add(seq(2, 60, 5));
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(1, sched.waiting());
  }

  @Test
  void theLongPrefillThresholdCapsEachSequencesTokens() {
    CountingKvManager kv = new CountingKvManager(100, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(1000, 256, 2048, true, 32), kv);
    sched.add(seq(1, 100, 5));
    sched.add(seq(2, 100, 5));
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(32, plan.tokens(0));
    assertEquals(32, plan.tokens(1));
  }

  @Test
  void whenMemoryRunsOutTheLastAdmittedIsPreemptedAndNobodyIsAdmitted() {
    // 4 blocks of 16 tokens. a and b each hold 2 full blocks after their prefill.
    CountingKvManager kv = new CountingKvManager(4, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(1000, 256, 2048, true, 0), kv);
    Sequence a = seq(1, 32, 10);
    Sequence b = seq(2, 32, 10);
    Sequence c = seq(3, 4, 10);
    sched.add(a);
    sched.add(b);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(2, plan.size());
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    sched.add(c);
    // a's decode needs a third block: the pool is full, so b (running.pop()) is preempted.
    sched.schedule(plan);
    assertEquals(1, plan.preempted());
    assertEquals(1, plan.size());
    assertSame(a, plan.sequence(0));
    assertEquals(Sequence.Status.WAITING, b.status());
    assertEquals(0, b.numComputedTokens());
    assertEquals(1, b.preemptions());
    // No admission in a step that preempted, although c would fit in the block b freed.
    assertEquals(1, sched.running());
    assertEquals(2, sched.waiting());
  }

  @Test
  void aSequenceThatIsItsOwnVictimStopsTheRunningLoop() {
    CountingKvManager kv = new CountingKvManager(2, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(1000, 256, 2048, true, 0), kv);
    Sequence a = seq(1, 32, 10);
    sched.add(a);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    sched.schedule(plan);
    // a alone needs a third block: it preempts itself and nothing runs.
    assertEquals(0, plan.size());
    assertEquals(1, plan.preempted());
    assertEquals(0, sched.running());
    assertEquals(1, sched.waiting());
  }

  @Test
  void waitingSequencesNeverPreemptAndBlockTheQueueBehindThem() {
    CountingKvManager kv = new CountingKvManager(4, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(1000, 256, 2048, true, 0), kv);
    sched.add(seq(1, 48, 10)); // 3 blocks
    sched.add(seq(2, 40, 10)); // 3 blocks: does not fit the 1 left
    sched.add(seq(3, 8, 10)); // 1 block: would fit, but FCFS blocks it
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(1, plan.size());
    assertEquals(0, plan.preempted());
    assertEquals(2, sched.waiting());
  }

  @Test
  void atMostMaxNumSeqsRun() {
    CountingKvManager kv = new CountingKvManager(1000, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(10_000, 3, 2048, true, 0), kv);
    for (int i = 0; i < 5; i++) {
      sched.add(seq(i, 10, 10));
    }
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    assertEquals(3, plan.size());
    assertEquals(3, sched.running());
    assertTrue(sched.waiting() == 2);
  }

  @Test
  void aPreemptedSequenceIsPrependedAndResumesWithItsOutputTokens() {
    CountingKvManager kv = new CountingKvManager(4, 16);
    VllmV1Scheduler sched = new VllmV1Scheduler(new SchedulerConfig(1000, 256, 2048, true, 0), kv);
    Sequence a = seq(1, 32, 10);
    Sequence b = seq(2, 32, 10);
    sched.add(a);
    sched.add(b);
    StepPlan plan = new StepPlan();
    sched.schedule(plan);
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    Sequence c = seq(3, 4, 10);
    sched.add(c);
    sched.schedule(plan); // preempts b, which goes before c
    sched.updateFromOutput(plan, EngineTokens.INSTANCE);
    a.abort();
    kv.finish(a);
    sched.removeFinished();
    sched.schedule(plan);
    // b comes back first, recomputing its prompt and its one output token: 33 tokens.
    assertSame(b, plan.sequence(0));
    assertEquals(33, plan.tokens(0));
  }
}

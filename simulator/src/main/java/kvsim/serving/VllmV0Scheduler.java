package kvsim.serving;

import kvsim.alloc.paged.OpLog;

/**
 * vLLM v0's default scheduler ({@code Scheduler._schedule_default}, vllm/core/scheduler.py, 0.5 to
 * 0.6) with chunked prefill off, for single-sequence requests, as {@code vllm-block-manager.md}
 * Part 2 specifies it:
 *
 * <ul>
 *   <li>Prefills first (§2.4, step 1): waiting sequences in FCFS order are admitted whole (no
 *       chunking) while the watermark test says OK (§2.1), their tokens fit what is left of
 *       {@code max_num_batched_tokens} and fewer than {@code max_num_seqs} run. LATER stops
 *       admission; NEVER ignores the request (vLLM finishes it as {@code FINISHED_IGNORED}),
 *       counted here among the rejected requests. An iteration that prefills runs no decode.
 *   <li>Otherwise every running sequence decodes one token (§2.4, step 2), in running order; when
 *       its slot cannot be allocated (decode growth has no watermark) the last running sequence is
 *       preempted by recompute (its blocks freed, its computed tokens reset, put at the front of
 *       the waiting queue) until it can, or the sequence preempts itself.
 *   <li>Swapping (§2.4, steps 3 and the swap mode) concerns multi-sequence groups (parallel
 *       sampling, beam search), which kvsim does not run yet; a single sequence is always
 *       recomputed, as v0 decides by default.
 * </ul>
 */
public final class VllmV0Scheduler extends QueueScheduler {
  private final PagedKvManager paged;
  private long ignored;

  /** A scheduler with these limits over a v0 paged KV manager. */
  public VllmV0Scheduler(SchedulerConfig config, PagedKvManager kv) {
    super(config, kv);
    this.paged = kv;
  }

  @Override
  public long ignored() {
    return ignored;
  }

  @Override
  public void schedule(StepPlan plan) {
    plan.clear();
    long budget = config.maxNumBatchedTokens();
    while (!waitingQueue.isEmpty() && runningList.size() < config.maxNumSeqs()) {
      Sequence s = waitingQueue.peekFirst();
      if (s.numTokens > budget) {
        break;
      }
      OpLog.Admission verdict = paged.admitWhole(s);
      if (verdict == OpLog.Admission.LATER) {
        break;
      }
      waitingQueue.pollFirst();
      if (verdict == OpLog.Admission.NEVER) {
        ignored++;
        s.status = Sequence.Status.FINISHED;
        kv.finish(s);
        continue;
      }
      runningList.add(s);
      s.status = Sequence.Status.RUNNING;
      plan.add(s, s.numTokens);
      budget -= s.numTokens;
    }
    if (plan.size() > 0) {
      return;
    }
    int i = 0;
    while (i < runningList.size()) {
      Sequence s = runningList.get(i);
      int n = s.numTokens - s.numComputedTokens;
      if (n <= 0) {
        i++;
        continue;
      }
      boolean scheduled = true;
      while (!kv.allocate(s, n)) {
        Sequence victim = runningList.remove(runningList.size() - 1);
        preemptByRecompute(victim);
        plan.countPreemption(victim);
        if (victim == s) {
          scheduled = false;
          break;
        }
      }
      if (!scheduled) {
        break;
      }
      plan.add(s, n);
      i++;
    }
  }
}

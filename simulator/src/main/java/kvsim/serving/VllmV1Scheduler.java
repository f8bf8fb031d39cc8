package kvsim.serving;

import java.util.Map;
import java.util.Set;

/**
 * vLLM v1's scheduler ({@code Scheduler.schedule} in {@code vllm/v1/core/sched/scheduler.py} and
 * {@code AsyncScheduler} in {@code async_scheduler.py}, {@link #UPSTREAM}), with the FCFS policy:
 *
 * <ul>
 *   <li>No prefill or decode phases: each sequence catches up from its computed tokens to its
 *       tokens.
 *   <li>Running sequences first, in running-list order. Tokens are capped by the remaining token
 *       budget, {@code long_prefill_token_threshold} (when set) and {@code max_model_len − 1 −
 *       computed}; that gives chunked prefill. A sequence with nothing to compute is skipped.
 *   <li>When the KV manager cannot allocate, the scheduler preempts {@code running.pop()}, the
 *       most recently admitted sequence, by recompute (its memory freed, its computed tokens set to
 *       zero, prepended to the waiting queue) and retries; if the victim is the sequence itself,
 *       it is not scheduled and the running loop stops.
 *   <li>Waiting sequences are admitted only when this iteration preempted nothing, while fewer than
 *       {@code max_num_seqs} run and budget remains: prefix lookup, then the prompt's uncomputed
 *       tokens (capped as above; without chunked prefill a prompt that does not fit the remaining
 *       budget stops admission), then the full-prompt admission gate (Note [Full-prompt
 *       admission gate]), then the allocation. A failed gate or allocation stops admission:
 *       waiting sequences never preempt (FCFS head-of-line blocking).
 *   <li>Asynchronous scheduling (Note [Asynchronous scheduling]), vLLM's default: the engine plans
 *       step N+1 before step N's sampled tokens are known.
 *   <li>Parallel sampling: vLLM v1 has no sequence groups. Its front end fans a request with
 *       {@code n} &gt; 1 out into {@code n} child requests ({@code ParentRequest},
 *       vllm/v1/engine/parallel_sampling.py) that the scheduler runs as any others; they share the
 *       prompt's full blocks only through the prefix cache, and v1 has no swap. A beam width is
 *       fanned out the same way ({@link #forksGroups} is false): v1's engine has no beam search
 *       (the offline {@code LLM.beam_search} drives it from outside), so kvsim runs its beams as
 *       independent samples, without re-selection.
 * </ul>
 */
public final class VllmV1Scheduler extends QueueScheduler {
  /**
   * The vLLM release kvsim's v1 scheduler and block manager follow: the commit the specs were read
   * at. Shown in {@code kvsim list}, in every serving summary ({@code systems[].parts.models}) and
   * in README.
   */
  public static final String UPSTREAM = "vLLM main at commit ec5ef0a (2026-04-21)";

  // Note [Full-prompt admission gate]: with scheduler_reserve_full_isl (default true at the commit
  // of UPSTREAM, added by PR #37307), Scheduler.schedule asks KVCacheManager.can_fit_full_sequence
  // for a waiting request after its prefix lookup and after its chunk is sized, before
  // allocate_slots. It counts the blocks the request's whole current sequence needs, its
  // num_tokens (the prompt, plus any tokens sampled before a preemption) capped at max_model_len,
  // as allocate_slots counts them (ceil(tokens / B) less the hit blocks and the table, plus the hit
  // blocks that sit in the free queue), with no lookahead, against the free blocks. When they do not
  // fit, the waiting loop stops (break), as after a failed allocation: the request stays at the
  // head of the queue and nothing behind it is admitted. The future output tokens are not counted,
  // and running requests are not gated. In kvsim the KV manager answers the question
  // (KvManager.FullSequenceFit): the paged manager counts blocks as vLLM does; vAttention counts its
  // growth steps against the pages left.
  //
  // Note [Asynchronous scheduling]: with async_scheduling (vLLM's default at that commit: VllmConfig
  // resolves an unset value to true unless speculative decoding, pooling or the executor forbids it),
  // the engine core runs AsyncScheduler with a batch queue of two (EngineCore.step_with_batch_queue):
  // it plans step N+1 and hands it to the GPU, then waits for step N's output and takes it. So:
  //   - step N+1 is planned before step N's sampled tokens are known. A request that samples in
  //     step N holds an output placeholder (num_output_placeholders) and is scheduled in N+1 for the
  //     token it has not seen yet: the slot of that token is taken one step earlier than in the
  //     synchronous engine (kvsim appends the token's id as soon as step N is planned,
  //     Scheduler.sampleAhead, as the engine knows the ids it will sample; the token is still
  //     counted, and timed, at the end of step N);
  //   - a request whose step N samples its last token (max_tokens) is not scheduled in N+1 (the
  //     scheduler's "avoid scheduling an extra step" test: num_computed_tokens + 2 −
  //     num_output_placeholders ≥ num_prompt_tokens + max_tokens), but it still holds its blocks
  //     while N+1 is planned: they are freed when N's output is taken, after N+1's plan (a request
  //     that stops early, on an end-of-sequence token, would compute one token that is thrown away;
  //     kvsim's requests stop at their output length, so that never happens here);
  //   - a request preempted while N+1 is planned still receives its step-N token, and finishes then
  //     if that was its last;
  //   - a request arriving while step N runs is first seen when N+1 is already planned: it can join
  //     step N+2 at the earliest;
  //   - the engine's CPU work for a step (planning, taking the output) overlaps the GPU's previous
  //     step: ServingEngine times an iteration as max(forward, overhead) instead of forward plus
  //     overhead (ServingEngine.iterationNanos).
  // Not modelled: the one-step-late caching of the block a placeholder fills (AsyncScheduler caches
  // it when the token arrives; kvsim caches it when it is scheduled, as the synchronous scheduler
  // does), speculative decoding and structured output.

  /**
   * vLLM v1's scheduler as a system part: reads {@code max-num-seqs}, {@code
   * scheduler-reserve-full-isl} and {@code async-scheduling}; echoes the vLLM it models, its
   * limits, chunked prefill, the admission gate and asynchronous scheduling.
   */
  public static final SchedulerFactory FACTORY = new SchedulerFactory() {
    @Override
    public String name() {
      return "vllm-v1";
    }

    @Override
    public Set<String> reads() {
      return Set.of("max-num-seqs", "scheduler-reserve-full-isl", "async-scheduling");
    }

    @Override
    public Scheduler create(SchedulerConfig config, KvManager kv) {
      return new VllmV1Scheduler(config, kv);
    }

    @Override
    public void describe(SchedulerConfig config, Map<String, Object> parts) {
      parts.put("max_num_batched_tokens", config.maxNumBatchedTokens());
      parts.put("max_num_seqs", config.maxNumSeqs());
      parts.put("max_model_len", config.maxModelLen());
      parts.put("enable_chunked_prefill", config.enableChunkedPrefill());
      parts.put("scheduler_reserve_full_isl", config.reserveFullIsl());
      parts.put("async_scheduling", config.asyncScheduling());
      parts.put("models", UPSTREAM);
    }
  };


  /** The KV manager's answer to the admission gate, or null with the gate off. */
  private final KvManager.FullSequenceFit fullFit;

  /**
   * A scheduler with these limits over this KV manager; with the admission gate on, the manager
   * must answer it ({@link KvManager.FullSequenceFit}).
   */
  public VllmV1Scheduler(SchedulerConfig config, KvManager kv) {
    super(config, kv);
    this.fullFit = config.reserveFullIsl() ? KvManager.require(kv, KvManager.FullSequenceFit.class, "the full-prompt admission gate (scheduler-reserve-full-isl)") : null;
  }

  /** Returns whether the engine plans each step before the last one's tokens are known (Note [Asynchronous scheduling]). */
  @Override
  public boolean asyncScheduling() {
    return config.asyncScheduling();
  }

  /** Takes quiet decode steps under asynchronous scheduling, where the KV manager offers them (Note [Quiet decode steps] in {@link QueueScheduler}). */
  @Override
  public void allowQuietSteps(StepOutput tokens) {
    if (config.asyncScheduling()) {
      takeQuietSteps(tokens);
    }
  }

  /** Returns false: v1 fans multi-sequence requests out into independent requests. */
  @Override
  public boolean forksGroups() {
    return false;
  }

  private int cap(int numNewTokens, int budget, Sequence s) {
    int n = numNewTokens;
    if (config.longPrefillTokenThreshold() > 0) {
      n = Math.min(n, config.longPrefillTokenThreshold());
    }
    n = Math.min(n, budget);
    return Math.min(n, config.maxModelLen() - 1 - s.numComputedTokens());
  }

  @Override
  public void schedule(StepPlan plan) {
    plan.clear();
    admissionStopped(false);
    int budget = config.maxNumBatchedTokens();
    int i = 0;
    int quiet = 0;
    long quietComputed = 0;
    while (i < runningList.size() && budget > 0) {
      Sequence s = runningList.get(i);
      if (quietStep(s)) { // Note [Quiet decode steps] in QueueScheduler: one token, within its blocks
        quiet++;
        quietComputed += s.numComputedTokens();
        budget--;
        i++;
        continue;
      }
      catchUp(s);
      int n = cap(s.numTokens() - s.numComputedTokens(), budget, s);
      if (n <= 0) {
        i++;
        continue;
      }
      boolean scheduled = false;
      while (true) {
        if (kv.allocate(s, n)) {
          scheduled = true;
          break;
        }
        Sequence victim = runningList.remove(runningList.size() - 1);
        preemptByRecompute(victim);
        plan.countPreemption(victim);
        if (victim == s) {
          break;
        }
      }
      if (!scheduled) {
        break;
      }
      plan.add(s, n);
      budget -= n;
      i++;
    }
    countQuiet(plan, quiet, quietComputed);
    if (plan.preempted() > 0) {
      return;
    }
    while (!waitingQueue.isEmpty() && budget > 0 && runningList.size() < config.maxNumSeqs()) {
      Sequence s = waitingQueue.peekFirst();
      int hits = kv.lookup(s);
      int uncomputed = s.numTokens() - hits;
      int capped = cap(uncomputed, Integer.MAX_VALUE, s);
      if (!config.enableChunkedPrefill() && capped > budget) {
        break;
      }
      int n = Math.min(capped, budget);
      if (fullFit != null && !fullFit.canFitFullSequence(s)) {
        admissionStopped(true); // Note [Full-prompt admission gate]: it waits for memory
        break;
      }
      if (!kv.allocate(s, n)) {
        admissionStopped(true);
        break;
      }
      waitingQueue.pollFirst();
      runningList.add(s);
      s.admit();
      plan.add(s, n);
      budget -= n;
    }
  }
}

package kvsim.serving;

import java.util.Map;
import java.util.Set;

/**
 * vLLM v1's scheduler ({@code Scheduler.schedule} in {@code vllm/v1/core/sched/scheduler.py}, vLLM
 * at commit ec5ef0a), with the FCFS policy:
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
 *       budget stops admission). A failed allocation stops admission: waiting sequences never
 *       preempt (FCFS head-of-line blocking).
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
  /** vLLM v1's scheduler as a system part: reads {@code max-num-seqs}; echoes its limits and chunked prefill. */
  public static final SchedulerFactory FACTORY = new SchedulerFactory() {
    @Override
    public String name() {
      return "vllm-v1";
    }

    @Override
    public Set<String> reads() {
      return Set.of("max-num-seqs");
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
    }
  };


  /** A scheduler with these limits over this KV manager. */
  public VllmV1Scheduler(SchedulerConfig config, KvManager kv) {
    super(config, kv);
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
    while (i < runningList.size() && budget > 0) {
      Sequence s = runningList.get(i);
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

package kvsim.serving;

import java.util.Map;
import java.util.Set;

/**
 * Orca's iteration-level scheduler (Yu et al., "Orca: A Distributed Serving System for
 * Transformer-Based Generative Models", OSDI 2022) as the vLLM paper's Orca baselines use it: FCFS,
 * a request's KV memory reserved whole when it is admitted, nothing ever preempted.
 *
 * <ul>
 *   <li>Running sequences first, in admission order: each computes all its uncomputed tokens
 *       (after admission that is one decode token per iteration). They count against the token
 *       budget but are never held back by it.
 *   <li>Then waiting sequences in FCFS order, while fewer than {@code max_num_seqs} run: the head
 *       prefills its whole prompt in one iteration (no chunked prefill). It is admitted only if its
 *       prompt fits what is left of {@code max_num_batched_tokens}, or if nothing else is scheduled
 *       in the iteration (so a prompt longer than the budget still runs, alone), and only if the KV
 *       manager reserves its memory (a group's lead reserves for every sequence of its group). The
 *       first that cannot be admitted stops admission: FCFS head-of-line blocking, as in Orca; one
 *       that cannot be admitted with nothing running never can, and is refused and counted among the
 *       rejected requests.
 *   <li>Nothing is preempted: a sequence once admitted keeps its memory until it finishes.
 *   <li>A running sequence whose allocation fails (only a growing reservation can fail after
 *       admission) is not scheduled in this iteration and tries again in the next; no sequence is
 *       admitted in an iteration in which one stalled, so that the memory freed by finishing
 *       sequences goes to the stalled ones first. If every running sequence stalls and nothing can
 *       be admitted, no sequence can ever progress (nothing will be freed): the scheduler throws,
 *       as a PyTorch program that cannot grow its cache dies of out-of-memory.
 * </ul>
 */
public final class OrcaScheduler extends QueueScheduler {
  /** Orca as the vLLM paper's baselines run it: reads {@code max-num-seqs}; no chunked prefill, no preemption. */
  public static final SchedulerFactory FACTORY = new Factory(false);
  /**
   * A plain PyTorch program's loop: Orca's rules with {@code max_num_seqs} 1 whatever the run's
   * limit (one request at a time), so it reads no {@code max-num-seqs}.
   */
  public static final SchedulerFactory ONE_AT_A_TIME = new Factory(true);

  private record Factory(boolean oneAtATime) implements SchedulerFactory {
    @Override
    public String name() {
      return "orca";
    }

    @Override
    public Set<String> reads() {
      return oneAtATime ? Set.of() : Set.of("max-num-seqs");
    }

    @Override
    public SchedulerConfig effective(SchedulerConfig c) {
      return oneAtATime ? new SchedulerConfig(c.maxNumBatchedTokens(), 1, c.maxModelLen(), c.enableChunkedPrefill(), c.longPrefillTokenThreshold(), c.watermark()) : c;
    }

    @Override
    public Scheduler create(SchedulerConfig config, KvManager kv) {
      return new OrcaScheduler(config, kv);
    }

    @Override
    public void describe(SchedulerConfig config, Map<String, Object> parts) {
      parts.put("max_num_batched_tokens", config.maxNumBatchedTokens());
      parts.put("max_num_seqs", config.maxNumSeqs());
      parts.put("max_model_len", config.maxModelLen());
      parts.put("enable_chunked_prefill", false);
      parts.put("preemption", "none");
    }
  }

  private long stalls;
  private long ignored;

  /** A scheduler with these limits ({@code max_num_seqs}, {@code max_num_batched_tokens}) over this KV manager. */
  public OrcaScheduler(SchedulerConfig config, KvManager kv) {
    super(config, kv);
  }

  /**
   * Returns the requests refused because their reservation (a group's: one buffer per sequence)
   * could not be had even with nothing else running.
   */
  @Override
  public long ignored() {
    return ignored;
  }

  /** Returns how many times a running sequence could not get memory for its next token and waited an iteration. */
  public long stalls() {
    return stalls;
  }

  @Override
  public void schedule(StepPlan plan) {
    plan.clear();
    long budget = config.maxNumBatchedTokens();
    int stalled = 0;
    for (Sequence s : runningList) {
      int n = s.numTokens() - s.numComputedTokens();
      if (n <= 0) {
        continue;
      }
      if (!kv.allocate(s, n)) {
        stalled++;
        continue;
      }
      plan.add(s, n);
      budget -= n;
    }
    stalls += stalled;
    admissionStopped(stalled > 0); // a stalled sequence waits for memory
    if (stalled == 0) {
      while (!waitingQueue.isEmpty() && runningList.size() < config.maxNumSeqs()) {
        Sequence s = waitingQueue.peekFirst();
        int n = s.numTokens() - s.numComputedTokens();
        if (n > budget && plan.size() > 0) {
          break;
        }
        if (!kv.allocate(s, n)) {
          if (runningList.isEmpty()) {
            // Nothing holds memory, so its reservation can never be had: refused, counted.
            waitingQueue.pollFirst();
            s.ignore();
            ignored++;
            continue;
          }
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
    if (plan.size() == 0 && stalled > 0) {
      throw new IllegalStateException("out of KV memory: " + stalled + " running sequences cannot get memory for their next token and "
          + waitingQueue.size() + " wait; nothing can progress (first: " + runningList.get(0) + ")");
    }
  }
}

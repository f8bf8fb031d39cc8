package kvsim.serving.example;

import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.serving.KvManager;
import kvsim.serving.PagedKvManager;
import kvsim.serving.QueueScheduler;
import kvsim.serving.Scheduler;
import kvsim.serving.SchedulerConfig;
import kvsim.serving.SchedulerFactory;
import kvsim.serving.Sequence;
import kvsim.serving.ServingSystems;
import kvsim.serving.StepPlan;

/**
 * An example scheduler made in one package: request-level static batching, the baseline that
 * Orca's iteration-level scheduling replaced (Yu et al., OSDI 2022, section 2.3: a batch runs until
 * every request of it has finished, and only then is the next batch admitted). Over vLLM v1's
 * paged KV blocks it is the system {@code static-batching}; {@link #register} is the whole of adding it.
 *
 * <ul>
 *   <li>With nothing running, the waiting sequences are admitted in FCFS order while fewer than
 *       {@code max_num_seqs} run and their prompts fit {@code max_num_batched_tokens} (the first
 *       always, alone); each prefills its whole prompt in that iteration. A prompt the KV memory
 *       cannot hold with nothing running is refused.
 *   <li>Otherwise the batch decodes: every running sequence computes its next token. One that the
 *       KV manager cannot give a slot is preempted by recompute and waits for a later batch.
 *   <li>Nothing is admitted while any sequence of the batch runs.
 * </ul>
 */
public final class StaticBatchScheduler extends QueueScheduler {
  /** The system's name. */
  public static final String SYSTEM = "static-batching";

  /** The scheduler as a system part: reads {@code max-num-seqs}, no chunked prefill. */
  static final SchedulerFactory FACTORY = new SchedulerFactory() {
    @Override
    public String name() {
      return "static-batch";
    }

    @Override
    public Set<String> reads() {
      return Set.of("max-num-seqs");
    }

    @Override
    public Scheduler create(SchedulerConfig config, KvManager kv) {
      return new StaticBatchScheduler(config, kv);
    }

    @Override
    public void describe(SchedulerConfig config, Map<String, Object> parts) {
      parts.put("max_num_batched_tokens", config.maxNumBatchedTokens());
      parts.put("max_num_seqs", config.maxNumSeqs());
      parts.put("max_model_len", config.maxModelLen());
      parts.put("preemption", "recompute");
    }
  };

  /** Registers the system. */
  public static void register() {
    ServingSystems.register(new ServingSystems.System(SYSTEM, "request-level static batching over vLLM v1's paged KV blocks",
        FACTORY, PagedKvManager.V1_FACTORY));
  }

  private long ignored;

  private StaticBatchScheduler(SchedulerConfig config, KvManager kv) {
    super(config, kv);
  }

  /** As vLLM v1, whose blocks it runs over: groups are fanned out into single sequences, never forked. */
  @Override
  public boolean forksGroups() {
    return false;
  }

  @Override
  public long ignored() {
    return ignored;
  }

  @Override
  public void schedule(StepPlan plan) {
    plan.clear();
    if (runningList.isEmpty()) {
      admitBatch(plan);
      return;
    }
    // The latest admitted first, so that a sequence short of memory gives way before earlier ones.
    List<Sequence> batch = List.copyOf(runningList);
    int[] tokens = new int[batch.size()];
    for (int i = batch.size() - 1; i >= 0; i--) {
      Sequence s = batch.get(i);
      int n = s.numTokens() - s.numComputedTokens();
      if (n > 0 && kv.allocate(s, n)) {
        tokens[i] = n;
      } else if (n > 0) {
        runningList.remove(i);
        preemptByRecompute(s);
        plan.countPreemption(s);
      }
    }
    if (runningList.isEmpty()) {
      // Every sequence of the batch gave up its memory: the next batch starts now.
      admitBatch(plan);
      return;
    }
    for (int i = 0; i < batch.size(); i++) {
      if (tokens[i] > 0) {
        plan.add(batch.get(i), tokens[i]);
      }
    }
  }

  private void admitBatch(StepPlan plan) {
    long budget = config.maxNumBatchedTokens();
    while (!waitingQueue.isEmpty() && runningList.size() < config.maxNumSeqs()) {
      Sequence s = waitingQueue.peekFirst();
      // Its prompt's tokens after the prefix-cache hits (a waiting sequence has nothing computed).
      int n = s.numTokens() - kv.lookup(s);
      if (n > budget && plan.size() > 0) {
        return;
      }
      if (!kv.allocate(s, n)) {
        if (runningList.isEmpty()) {
          waitingQueue.pollFirst();
          s.ignore();
          ignored++;
          continue;
        }
        return;
      }
      waitingQueue.pollFirst();
      runningList.add(s);
      s.admit();
      plan.add(s, n);
      budget -= n;
    }
  }
}

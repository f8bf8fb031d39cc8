package kvsim.serving;

import java.util.ArrayDeque;
import java.util.ArrayList;

/**
 * What every continuous-batching scheduler here keeps alike: its limits, its KV manager, a waiting
 * queue (FCFS, preempted sequences prepended) and a running list in admission order. Subclasses
 * plan the iterations.
 */
abstract class QueueScheduler implements Scheduler {
  /** The scheduler's limits. */
  protected final SchedulerConfig config;
  /** The KV manager sequences get their memory from. */
  protected final KvManager kv;
  /** Sequences waiting to be admitted, head first. */
  protected final ArrayDeque<Sequence> waitingQueue = new ArrayDeque<>();
  /** Sequences admitted and holding memory, in admission order. */
  protected final ArrayList<Sequence> runningList = new ArrayList<>();

  QueueScheduler(SchedulerConfig config, KvManager kv) {
    this.config = config;
    this.kv = kv;
  }

  @Override
  public final void add(Sequence s) {
    waitingQueue.addLast(s);
  }

  @Override
  public int waiting() {
    return waitingQueue.size();
  }

  @Override
  public final void addForked(Sequence parent, Sequence child) {
    int at = runningList.indexOf(parent);
    if (at < 0) {
      throw new IllegalStateException(parent + " forks but is not running");
    }
    while (at + 1 < runningList.size() && runningList.get(at + 1).group == parent.group) {
      at++;
    }
    runningList.add(at + 1, child);
    child.status = Sequence.Status.RUNNING;
  }

  @Override
  public final int running() {
    return runningList.size();
  }

  @Override
  public final void removeFinished() {
    runningList.removeIf(s -> s.status == Sequence.Status.FINISHED);
  }

  /**
   * Preempts a running sequence by recompute (v1's {@code Scheduler._preempt_request} at vLLM commit
   * ec5ef0a; v0's {@code Scheduler._preempt_by_recompute} at 1fb9c1b): its memory is
   * freed, its computed tokens reset, and it goes to the front of the waiting queue.
   */
  protected final void preemptByRecompute(Sequence victim) {
    kv.preempt(victim);
    victim.numComputedTokens = 0;
    victim.preemptions++;
    victim.status = Sequence.Status.WAITING;
    waitingQueue.addFirst(victim);
  }
}

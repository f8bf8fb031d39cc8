package kvsim.serving;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * What every continuous-batching scheduler here keeps alike: its limits, its KV manager, a waiting
 * queue (FCFS, preempted sequences prepended), a running list in admission order, and the end of
 * an iteration ({@link #updateFromOutput}, Note [Iteration contract] in {@link Scheduler}), written
 * once for all of them. Subclasses plan the iterations ({@link #schedule}), in this package or
 * another (a scheduler is added as a {@link SchedulerFactory} registered with a system).
 */
public abstract class QueueScheduler implements Scheduler {
  /** The scheduler's limits. */
  protected final SchedulerConfig config;
  /** The KV manager sequences get their memory from. */
  protected final KvManager kv;
  /** Sequences waiting to be admitted, head first. */
  protected final ArrayDeque<Sequence> waitingQueue = new ArrayDeque<>();
  /** Sequences admitted and holding memory, in admission order. */
  protected final ArrayList<Sequence> runningList = new ArrayList<>();

  /** The KV manager's forking, or null when it cannot fork (then no group may fork). */
  private final KvManager.Forking forking;
  private final List<Sequence> runningView = Collections.unmodifiableList(runningList);
  private final Collection<Sequence> waitingView = Collections.unmodifiableCollection(waitingQueue);
  private final ArrayList<SequenceGroup> stepBeams = new ArrayList<>();
  /** Iterations whose outcome was taken, numbering each for the beam groups' step counts. */
  private long updates;
  /** Whether the last {@link #schedule} left a sequence waiting for memory ({@link #admissionStopped}). */
  private boolean waitingForMemory;
  /** The KV manager's quiet decode steps, or null while this scheduler takes none (Note [Quiet decode steps]). */
  private KvManager.QuietDecodes quietDecodes;
  /** The token ids a catch-up after quiet steps appends. */
  private StepOutput quietTokens;

  /** A scheduler with limits {@code config} over {@code kv}, its queues empty. */
  protected QueueScheduler(SchedulerConfig config, KvManager kv) {
    this.config = config;
    this.kv = kv;
    this.forking = kv.capability(KvManager.Forking.class).orElse(null);
  }

  @Override
  public final List<Sequence> runningSequences() {
    return runningView;
  }

  @Override
  public final Collection<Sequence> waitingSequences() {
    return waitingView;
  }

  /**
   * The end of an iteration (Note [Iteration contract] in {@link Scheduler}), as vLLM v1's {@code
   * Scheduler.update_from_output} (vllm/v1/core/sched/scheduler.py at commit ec5ef0a) appends each
   * sampled token and frees finished requests, and v0's output processing ({@code
   * SequenceGroupOutputProcessor}, {@code Scheduler.fork_seq} in vllm/core/scheduler.py at
   * 1fb9c1b) forks a group's sequences:
   *
   * <ul>
   *   <li>every scheduled sequence that caught up samples one token ({@link Sequence#sample}); one
   *       that reached its output length finishes and its memory is freed;
   *   <li>a forking group's lead, sampling its first token, first forks every other sequence of
   *       its group from itself into the running list, and all of them sample that iteration;
   *   <li>beam groups whose beams all sampled re-select their beams (Note [Beam selection] in
   *       {@link SequenceGroup});
   *   <li>finished sequences leave the running list.
   * </ul>
   */
  @Override
  public final void updateFromOutput(StepPlan plan, StepOutput output) {
    if (plan.sampledAhead()) {
      updateAhead(plan, output);
      return;
    }
    updates++;
    stepBeams.clear();
    boolean anyFinished = false;
    for (int i = 0; i < plan.listed(); i++) {
      Sequence s = plan.sequence(i);
      if (!s.caughtUp()) {
        continue;
      }
      SequenceGroup g = s.group;
      if (g.forking() && s.index == 0 && s.outputTokens() == 0) {
        for (int k = 1; k < g.width(); k++) {
          Sequence child = g.sequences[k];
          fork(s, child, false, output);
          addForked(s, child);
        }
        for (Sequence member : g.sequences) {
          boolean finished = member.sample(kv, output.token(member, member.outputTokens()));
          anyFinished |= finished;
          output.sampled(member, finished);
        }
        continue;
      }
      boolean finished = s.sample(kv, output.token(s, s.outputTokens()));
      anyFinished |= finished;
      output.sampled(s, finished);
      if (g.beam && g.forking() && s.status() == Sequence.Status.RUNNING && g.countStepSample(updates)) {
        stepBeams.add(g);
      }
    }
    for (SequenceGroup g : stepBeams) {
      reselectBeams(g, output);
    }
    if (anyFinished) { // Note [Only when one finished]
      removeFinished();
    }
  }

  // Note [Only when one finished]: a sequence in the running list finishes only by sampling its
  // last token, at the end of an iteration, or when the engine aborts it, which removes it at once
  // (ServingEngine.abortBatch). So the end of an iteration looks through the running list only
  // when one of its samples finished a sequence. It looked every time, and that was 4% of the
  // engine thread in async-profiler samples of the week's first 90 minutes through vllm, where
  // 235,730 sequences finish in 645,507 iterations.

  /**
   * Asynchronous scheduling ({@link Scheduler#sampleAhead}; Note [Asynchronous scheduling] in
   * {@link VllmV1Scheduler}): right after {@code plan} was made, each sequence it catches up takes
   * its token now unless it is its last (vLLM's output placeholder, scheduled in the next plan);
   * one whose token is its last stays caught up, so the next plan skips it. Groups that fork
   * (v0, Orca) never run asynchronously.
   */
  @Override
  public final void sampleAhead(StepPlan plan, StepOutput output) {
    for (int i = 0; i < plan.listed(); i++) {
      Sequence s = plan.sequence(i);
      if (!s.caughtUp()) {
        plan.markAhead(i, StepPlan.NOTHING_AHEAD);
        continue;
      }
      if (s.group.forking()) {
        throw new IllegalStateException(s + " belongs to a forking group, which asynchronous scheduling does not run");
      }
      if (s.outputTokens() + 1 >= s.maxOutputTokens) {
        plan.markAhead(i, StepPlan.LAST_TOKEN);
      } else {
        s.sample(kv, output.token(s, s.outputTokens()));
        plan.markAhead(i, StepPlan.TOKEN_AHEAD);
        if (quietDecodes != null) {
          s.quietSteps = quietStepsAhead(s);
        }
      }
    }
  }

  // Note [Quiet decode steps]: under asynchronous scheduling a running sequence's step is, 14 times
  // in 16 with blocks of 16 tokens, one token computed within its last block and the next one
  // sampled ahead. The KV manager then only counts (the paged manager takes and fills no block; a
  // block the append completes is hashed when the sequence catches up, Note [Quiet decode steps] on
  // kvsim.alloc.paged.BlockManager), the plan gains one decode token and the sequence's computed
  // tokens in the bytes read, and the output one token. Walking each such sequence through the
  // whole allocate, sample and report path was about half the engine's time on the week-long Azure
  // run. So, where the scheduler's schedule takes them (vLLM v1's) and the KV manager offers them
  // (KvManager.QuietDecodes), after a sequence samples ahead the scheduler asks how many such steps
  // it can take in a row: the manager's answer, capped before its last token and before
  // max_model_len. In its next plans it advances the sequence's own counts, counts it in the plan
  // without listing it (StepPlan.addQuiet), and tells the manager only how many quiet steps the
  // plan took (tookQuietSteps: modelled time and breakdown sums, which are sums over sequences).
  // The manager's record of the sequence catches up (catchUp) before anything reads or changes it:
  // before the scheduler allocates for it again, before it is preempted, and before a check of the
  // manager's invariants (catchUpAll). A sequence is preempted only as the running list's last,
  // which this plan has not reached yet, so no sequence catches up in the plan that took its quiet
  // step. Each quiet step adds to the same sums and counts as the full path, so the results are
  // the same bytes (QuietDecodeStepsTest runs random traces both ways).

  /** How many quiet decode steps {@code s}, which just sampled ahead, may take in its next plans. */
  private int quietStepsAhead(Sequence s) {
    int steps = quietDecodes.quietDecodeSteps(s);
    steps = Math.min(steps, s.maxOutputTokens - s.outputTokens() - 1);
    steps = Math.min(steps, config.maxModelLen() - s.numTokens());
    return Math.max(0, steps);
  }

  /**
   * Lets a subclass whose {@link #schedule} takes quiet decode steps take them, where the KV manager
   * offers them (Note [Quiet decode steps]).
   */
  protected final void takeQuietSteps(StepOutput tokens) {
    quietDecodes = kv.capability(KvManager.QuietDecodes.class).orElse(null);
    quietTokens = tokens;
  }

  /**
   * A quiet decode step of running {@code s} if it has one left (Note [Quiet decode steps]):
   * returns whether it took it. A subclass's {@link #schedule} counts it with {@link #countQuiet}.
   */
  protected static boolean quietStep(Sequence s) {
    if (s.quietSteps <= 0) {
      return false;
    }
    s.quietStep();
    return true;
  }

  /** Counts {@code count} quiet decode steps, with {@code computedTokens} computed tokens in all, in {@code plan} and tells the KV manager. */
  protected final void countQuiet(StepPlan plan, int count, long computedTokens) {
    if (count > 0) {
      plan.addQuiet(count, computedTokens);
      quietDecodes.tookQuietSteps(count);
    }
  }

  /** Brings the KV manager's record of {@code s} up to date after its quiet decode steps, before anything reads or changes it. */
  protected final void catchUp(Sequence s) {
    if (quietDecodes != null) {
      quietDecodes.catchUp(s, quietTokens);
    }
  }

  @Override
  public final void catchUpAll() {
    if (quietDecodes != null) {
      for (Sequence s : runningList) {
        quietDecodes.catchUp(s, quietTokens);
      }
    }
  }

  /**
   * The end of an iteration planned asynchronously: its tokens taken ahead are reported; a
   * sequence whose last token this was finishes now and frees its memory, running (the plan
   * after skipped it) or preempted meanwhile (it still receives the token, as vLLM's
   * update_from_output gives a preempted request its step's output).
   */
  private void updateAhead(StepPlan plan, StepOutput output) {
    updates++;
    boolean finishedWaiting = false;
    boolean anyFinished = false;
    for (int i = 0; i < plan.listed(); i++) {
      Sequence s = plan.sequence(i);
      switch (plan.ahead(i)) {
        case StepPlan.TOKEN_AHEAD -> output.sampled(s, false);
        case StepPlan.LAST_TOKEN -> {
          anyFinished = true;
          if (s.status() == Sequence.Status.WAITING) {
            s.sampleLastWhileWaiting(kv);
            finishedWaiting = true;
            output.sampled(s, true);
          } else {
            output.sampled(s, s.sample(kv, output.token(s, s.outputTokens())));
          }
        }
        default -> {}
      }
    }
    if (finishedWaiting) {
      waitingQueue.removeIf(w -> w.status() == Sequence.Status.FINISHED);
    }
    if (anyFinished) { // Note [Only when one finished]
      removeFinished();
    }
  }

  /** {@code target} becomes a fork of {@code source}; the output hears of it with the KV manager's time for it. */
  private void fork(Sequence source, Sequence target, boolean beamReplacement, StepOutput output) {
    if (forking == null) {
      throw new IllegalStateException(source.group.request.id() + " forks its group, but " + kv.getClass().getSimpleName() + " cannot fork");
    }
    long before = kv.modelledNanos();
    forking.fork(source, target);
    target.copyProgress(source);
    output.forked(source, target, beamReplacement, kv.modelledNanos() - before);
  }

  /**
   * Beam re-selection (Note [Beam selection]) after an iteration in which every beam of {@code g}
   * sampled and none finished, the beams all of one length: each dropped beam's sequence becomes a
   * fork of the surviving beam drawn for its slot.
   */
  private void reselectBeams(SequenceGroup g, StepOutput output) {
    int length = g.lead().numTokens();
    for (Sequence b : g.sequences) {
      if (b.status() != Sequence.Status.RUNNING || b.numTokens() != length || b.numComputedTokens() != g.lead().numComputedTokens()) {
        return;
      }
    }
    int[] parents = g.drawParents();
    for (int i = 0; i < parents.length; i++) {
      if (parents[i] != i) {
        fork(g.sequences[parents[i]], g.sequences[i], true, output);
      }
    }
  }

  @Override
  public final boolean waitingForMemory() {
    return waitingForMemory;
  }

  /**
   * Says why this iteration's admission stopped, for {@link #waitingForMemory}: {@code onMemory}
   * true when a sequence waits because memory could not be given to it (a failed allocation, a
   * memory gate, the watermark, a running sequence stalled for memory), false for any other reason
   * or when everything waiting was admitted. A subclass calls it with false at the start of its
   * {@link #schedule} and with true where it stops on memory (Note [Idle or fragmented] in {@link
   * ServingMetrics}).
   */
  protected final void admissionStopped(boolean onMemory) {
    waitingForMemory = onMemory;
  }

  @Override
  public final void add(Sequence s) {
    waitingQueue.addLast(s);
  }

  @Override
  public int waiting() {
    return waitingQueue.size();
  }

  /**
   * Puts {@code child}, just forked from the running {@code parent} of its group, into the running
   * list after its group's other running sequences.
   */
  private void addForked(Sequence parent, Sequence child) {
    int at = runningList.indexOf(parent);
    if (at < 0) {
      throw new IllegalStateException(parent + " forks but is not running");
    }
    while (at + 1 < runningList.size() && runningList.get(at + 1).group == parent.group) {
      at++;
    }
    runningList.add(at + 1, child);
    child.admit();
  }

  @Override
  public final int running() {
    return runningList.size();
  }

  @Override
  public final void removeFinished() {
    runningList.removeIf(s -> s.status() == Sequence.Status.FINISHED);
  }

  /**
   * Preempts a running sequence by recompute (v1's {@code Scheduler._preempt_request} at vLLM commit
   * ec5ef0a; v0's {@code Scheduler._preempt_by_recompute} at 1fb9c1b): its memory is
   * freed, its computed tokens reset, and it goes to the front of the waiting queue.
   */
  protected final void preemptByRecompute(Sequence victim) {
    catchUp(victim);
    kv.preempt(victim);
    victim.preemptForRecompute();
    waitingQueue.addFirst(victim);
  }
}

package kvsim.serving;

import java.util.Collection;
import java.util.List;

/**
 * A continuous-batching scheduler: it owns the waiting queue and the running list, and at the
 * start of every iteration decides which sequences compute how many tokens, asking the {@link
 * KvManager} for memory and preempting where its policy says so.
 *
 * <p>Note [Iteration contract]: an iteration is {@link #schedule} (vLLM v1's {@code
 * Scheduler.schedule()} in {@code vllm/v1/core/sched/scheduler.py} at commit ec5ef0a), the forward
 * pass (timed by the engine, or none in a script), then {@link #updateFromOutput} (v1's {@code
 * Scheduler.update_from_output()}): every scheduled sequence that caught up samples one token, a
 * forking group forks after its prompt, beams are re-selected, finished sequences free their memory
 * and leave the running list. The timed {@link ServingEngine} and {@link ScriptedServing} both call
 * these two and nothing else to run an iteration.
 */
public interface Scheduler {

  /** Queues a sequence that has arrived. */
  void add(Sequence s);

  /** Plans the next iteration into {@code plan}; an empty plan means nothing can run. */
  void schedule(StepPlan plan);

  /**
   * Takes the outcome of the iteration {@code plan} (as the last {@link #schedule} left it) ran:
   * Note [Iteration contract]. {@code output} gives each sampled token and hears what became of
   * each sequence.
   */
  void updateFromOutput(StepPlan plan, StepOutput output);

  /**
   * Returns whether a multi-sequence request runs as one group whose lead forks the others after
   * the prompt (true, the default), or as independent requests from arrival on (vLLM v1's fan-out).
   */
  default boolean forksGroups() {
    return true;
  }

  /**
   * Returns whether the engine runs this scheduler asynchronously (vLLM v1's {@code AsyncScheduler};
   * Note [Asynchronous scheduling] in {@link VllmV1Scheduler}): each plan is followed at once by
   * {@link #sampleAhead}, the next plan is made before the last one's outcome is taken, and {@link
   * #updateFromOutput} then only reports the tokens and finishes the sequences that sampled their
   * last. False by default.
   */
  default boolean asyncScheduling() {
    return false;
  }

  /**
   * Asynchronous scheduling only, right after {@link #schedule} planned {@code plan}: every
   * sequence the plan catches up whose token is not its last takes that token now ({@code
   * output.token}), so that the next plan computes it, as vLLM's output placeholder; one whose
   * token is its last is left caught up, so the next plan skips it. The tokens are reported, and
   * the last ones sampled, by {@link #updateFromOutput} of the same plan.
   */
  default void sampleAhead(StepPlan plan, StepOutput output) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " does not schedule asynchronously");
  }

  /**
   * Lets the scheduler take quiet decode steps where it and its KV manager can (Note [Quiet decode
   * steps] on {@link QueueScheduler}), the manager's record of a sequence brought up to date with
   * the token ids {@code tokens} gives. The results are the same with or without; a scheduler that
   * cannot take them ignores this, as by default.
   */
  default void allowQuietSteps(StepOutput tokens) {}

  /**
   * Brings the KV manager's record of every running sequence up to date after quiet decode steps,
   * for a check of the manager's invariants; nothing by default.
   */
  default void catchUpAll() {}

  /** Drops the finished sequences from the running list, keeping the others' order. */
  void removeFinished();

  /** Returns the running list, in order, read-only. */
  List<Sequence> runningSequences();

  /** Returns the waiting queue, head first, read-only (swapped-out sequences not included). */
  Collection<Sequence> waitingSequences();

  /** Returns the number of sequences waiting. */
  int waiting();

  /** Returns the number of sequences running. */
  int running();

  /**
   * Returns whether, as the last {@link #schedule} left it, a sequence waits because memory could
   * not be given to it: admission stopped on a failed allocation, a memory gate or the watermark, or
   * a running sequence could not get memory for its next tokens. False when admission stopped for
   * another reason (no one waiting, {@code max_num_seqs}, the token budget). The KV breakdown calls
   * free memory external fragmentation while this holds (or the iteration preempted), idle otherwise:
   * Note [Idle or fragmented] in {@link ServingMetrics}. False by default, for a scheduler that
   * never tells (all its free memory then counts as idle).
   */
  default boolean waitingForMemory() {
    return false;
  }

  /**
   * Returns the sequences the scheduler dropped without running them (vLLM v0 ignores a request
   * its watermark says can never be admitted); 0 for schedulers that never do.
   */
  default long ignored() {
    return 0;
  }
}

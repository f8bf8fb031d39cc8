package kvsim.serving;

/**
 * A continuous-batching scheduler: it owns the waiting queue and the running list, and at the
 * start of every iteration decides which sequences compute how many tokens, asking the {@link
 * KvManager} for memory and preempting where its policy says so.
 */
public interface Scheduler {

  /** Queues a sequence that has arrived. */
  void add(Sequence s);

  /** Plans the next iteration into {@code plan}; an empty plan means nothing can run. */
  void schedule(StepPlan plan);

  /**
   * Puts {@code child}, just forked from the running {@code parent} of its group, into the running
   * list after its group's other running sequences.
   */
  void addForked(Sequence parent, Sequence child);

  /**
   * Returns whether a multi-sequence request runs as one group whose lead forks the others after
   * the prompt (true, the default), or as independent requests from arrival on (vLLM v1's fan-out).
   */
  default boolean forksGroups() {
    return true;
  }

  /** Drops the finished sequences from the running list, keeping the others' order. */
  void removeFinished();

  /** Returns the number of sequences waiting. */
  int waiting();

  /** Returns the number of sequences running. */
  int running();

  /**
   * Returns the sequences the scheduler dropped without running them (vLLM v0 ignores a request
   * its watermark says can never be admitted); 0 for schedulers that never do.
   */
  default long ignored() {
    return 0;
  }
}

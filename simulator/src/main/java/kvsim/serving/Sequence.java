package kvsim.serving;

import kvsim.trace.Request;

/**
 * One sequence as the serving engine tracks it: vLLM's {@code Request} with its token counts, its
 * status and its timestamps. It belongs to a {@link SequenceGroup}: a request with {@code n}
 * parallel samples or {@code beam_width} beams is several sequences, any other one.
 *
 * <ul>
 *   <li>{@code numTokens} is the prompt plus the output tokens sampled so far; {@code
 *       numComputedTokens} the tokens whose KV is (or is being, in the current iteration)
 *       computed. A request is caught up when they are equal: then the iteration samples a token.
 *   <li>{@code maxOutputTokens} is the trace's output length, cut where the sequence would pass
 *       {@code max_model_len} (vLLM stops it there: finish reason {@code length}).
 * </ul>
 */
public final class Sequence {
  /** Where the sequence stands. */
  public enum Status {
    /** In the waiting queue: not yet admitted, or preempted. */
    WAITING,
    /** In the running list: holds KV memory. */
    RUNNING,
    /**
     * Swapped out to the host with its group (vLLM v0's {@code Scheduler} swap-out, {@code
     * vllm/core/scheduler.py} @1fb9c1b): holds host blocks, no device memory.
     */
    SWAPPED,
    /** Done: every output token sampled, its memory freed. */
    FINISHED
  }

  final Request request;
  final SequenceGroup group;
  /** The sequence's place in its group (0: the lead). */
  final int index;
  final int maxOutputTokens;
  private int numTokens;
  private int numComputedTokens;
  private int outputTokens;
  private int preemptions;
  /** Links of the KV manager's {@link HoldingList} this sequence is in (Note [Holding list]); null when in none. */
  HoldingList holdingList;
  Sequence holdingPrev;
  Sequence holdingNext;
  /** The counts its {@link HoldingList} sums ({@link HoldingList#setTokens}). */
  long holdingFutureTokens;
  long holdingWasteTokens;
  /**
   * Quiet decode steps the sequence may still take (Note [Quiet decode steps] on {@link
   * QueueScheduler}); 0 whenever it does not run.
   */
  int quietSteps;
  long firstTokenNanos = -1;
  long finishNanos = -1;
  private Status status = Status.WAITING;
  /** The KV manager's own state for this sequence, stored under {@link #kvKey}. */
  private Object kvState;
  private KvStateKey<?> kvKey;

  /**
   * The key under which one KV manager keeps its typed state in a sequence ({@link #kvState},
   * {@link #setKvState}): a sequence holds the state of one key at a time, and reading it under
   * another key throws instead of miscasting.
   *
   * @param <T> the manager's state type
   */
  public static final class KvStateKey<T> {
    private final String owner;

    /** A key for the state of manager {@code owner} (named in errors). */
    public KvStateKey(String owner) {
      this.owner = owner;
    }

    @Override
    public String toString() {
      return owner;
    }
  }

  /** A sequence that is a group of its own. */
  Sequence(Request request, int maxOutputTokens) {
    this.request = request;
    this.maxOutputTokens = maxOutputTokens;
    this.numTokens = request.promptTokens();
    this.index = 0;
    this.group = new SequenceGroup(this);
  }

  /** The {@code index}-th sequence of {@code group}. */
  Sequence(Request request, int maxOutputTokens, SequenceGroup group, int index) {
    this.request = request;
    this.maxOutputTokens = maxOutputTokens;
    this.numTokens = request.promptTokens();
    this.index = index;
    this.group = group;
  }

  /**
   * Returns the state {@code key}'s manager keeps for this sequence (null when it stored none).
   *
   * @throws IllegalStateException when the sequence holds another manager's state
   */
  @SuppressWarnings("unchecked")
  public <T> T kvState(KvStateKey<T> key) {
    if (kvKey != key && kvKey != null) {
      throw new IllegalStateException(this + " holds the KV state of " + kvKey + ", not of " + key);
    }
    return (T) kvState; // stored by setKvState under this very key
  }

  /** Stores {@code key}'s manager's state for this sequence (null: none). */
  public <T> void setKvState(KvStateKey<T> key, T state) {
    if (kvKey != key && kvKey != null && kvState != null) {
      throw new IllegalStateException(this + " holds the KV state of " + kvKey + ", not of " + key);
    }
    kvKey = key;
    kvState = state;
  }

  // Note [Sequence transitions]: a sequence changes state only through the methods below, each of
  // which checks that the transition is one vLLM makes (v1's RequestStatus in vllm/v1/request.py at
  // commit ec5ef0a; v0's SequenceStatus in vllm/sequence.py at 1fb9c1b, SWAPPED among them):
  //   WAITING -> RUNNING (admit: the scheduler admits it, or it is forked into the running list)
  //   RUNNING -> WAITING (preemptForRecompute: its computed tokens reset)
  //   RUNNING -> SWAPPED -> RUNNING (swapOut, swapIn: vLLM v0's swap preemption)
  //   RUNNING -> FINISHED (sample: its last output token)
  //   WAITING -> FINISHED (sampleLastWhileWaiting: asynchronous scheduling, preempted after the
  //                        plan that samples its last token was made)
  //   WAITING -> FINISHED (ignore: a scheduler refuses it)
  //   any but FINISHED -> FINISHED (abort: the engine aborts its request)
  // Computed tokens only advance (advanceComputedTo, or one with a token sampled in a quiet decode
  // step, quietStep), never past the tokens, except by a preemption for recompute, which resets
  // them, and a fork, which copies its source's counts.

  private IllegalStateException illegal(String transition) {
    return new IllegalStateException(this + ": illegal transition " + transition);
  }

  /** WAITING → RUNNING: the scheduler admits the sequence, or a fork puts it into the running list. */
  public void admit() {
    if (status != Status.WAITING) {
      throw illegal("admit");
    }
    status = Status.RUNNING;
  }

  /** RUNNING → WAITING: preempted by recompute, it will prefill again from nothing computed. */
  void preemptForRecompute() {
    if (status != Status.RUNNING) {
      throw illegal("preempt");
    }
    status = Status.WAITING;
    numComputedTokens = 0;
    quietSteps = 0;
    preemptions++;
  }

  /** RUNNING → SWAPPED: preempted by swapping its group out to the host. */
  void swapOut() {
    if (status != Status.RUNNING) {
      throw illegal("swap out");
    }
    status = Status.SWAPPED;
    quietSteps = 0;
    preemptions++;
  }

  /** SWAPPED → RUNNING: its group is swapped back in. */
  void swapIn() {
    if (status != Status.SWAPPED) {
      throw illegal("swap in");
    }
    status = Status.RUNNING;
  }

  /** WAITING → FINISHED: a scheduler refuses it (it could never be admitted); nothing was sampled. */
  public void ignore() {
    if (status != Status.WAITING) {
      throw illegal("ignore");
    }
    status = Status.FINISHED;
  }

  /** Any status but FINISHED → FINISHED: the engine aborts the request (the caller frees its memory). */
  void abort() {
    if (status == Status.FINISHED) {
      throw illegal("abort");
    }
    status = Status.FINISHED;
    quietSteps = 0;
  }

  /**
   * Advances the computed tokens to {@code computed} (a KV manager, when it found slots for them):
   * never backwards, never past the tokens, never for a sequence swapped out or finished. Public,
   * with the KV state, for KV managers outside this package; of the status transitions, a
   * scheduler outside it makes {@link #admit} and {@link #ignore} (preemption goes through its
   * {@code QueueScheduler}, which frees the memory first).
   */
  public void advanceComputedTo(int computed) {
    if (computed < numComputedTokens || computed > numTokens || status == Status.FINISHED || status == Status.SWAPPED) {
      throw illegal("computed tokens " + numComputedTokens + " -> " + computed);
    }
    numComputedTokens = computed;
  }

  /** Takes the token counts of {@code source}, whose KV this sequence now holds a copy of (a fork). */
  void copyProgress(Sequence source) {
    if (status == Status.FINISHED || source.group != group) {
      throw illegal("fork from " + source);
    }
    numTokens = source.numTokens;
    numComputedTokens = source.numComputedTokens;
    outputTokens = source.outputTokens;
  }

  /**
   * A quiet decode step (Note [Quiet decode steps] on {@link QueueScheduler}): the running sequence
   * computes its one uncomputed token and samples the next ahead, its KV manager told later. The
   * scheduler takes it only while {@link #quietSteps} is positive.
   */
  void quietStep() {
    if (status != Status.RUNNING || numTokens != numComputedTokens + 1) {
      throw illegal("quiet step");
    }
    quietSteps--;
    numComputedTokens++;
    outputTokens++;
    numTokens++;
  }

  /** Returns whether the sequence runs and has computed all its tokens, so this iteration samples one. */
  boolean caughtUp() {
    return status == Status.RUNNING && numComputedTokens >= numTokens;
  }

  /**
   * RUNNING → RUNNING or FINISHED, the end of an iteration for a caught-up sequence: it samples
   * {@code token}, its output token number {@link #outputTokens()} (counted from 0). A sequence
   * that reaches its output length finishes and {@code kv} frees its memory (the token is never
   * appended: its KV is never computed); any other appends it. Returns whether the sequence
   * finished.
   */
  boolean sample(KvManager kv, int token) {
    if (!caughtUp()) {
      throw illegal("sample");
    }
    outputTokens++;
    if (outputTokens >= maxOutputTokens) {
      status = Status.FINISHED;
      kv.finish(this);
      return true;
    }
    kv.append(this, token);
    numTokens++;
    return false;
  }

  /**
   * WAITING → FINISHED, asynchronous scheduling only: a sequence preempted after the plan that
   * samples its last token was made receives that token (vLLM's {@code update_from_output} gives
   * a preempted request its step's output, and {@code check_stop} finishes it); {@code kv} forgets it.
   */
  void sampleLastWhileWaiting(KvManager kv) {
    if (status != Status.WAITING || outputTokens + 1 < maxOutputTokens) {
      throw illegal("sample the last token while waiting");
    }
    outputTokens++;
    status = Status.FINISHED;
    kv.finish(this);
  }

  /** Returns the group the sequence belongs to. */
  public SequenceGroup group() {
    return group;
  }

  /** Returns the sequence's place in its group (0: the lead). */
  public int index() {
    return index;
  }

  /** Returns the request this sequence serves. */
  public Request request() {
    return request;
  }

  /** Returns the prompt plus the output tokens sampled so far. */
  public int numTokens() {
    return numTokens;
  }

  /** Returns the tokens whose KV is computed (or scheduled in the current iteration). */
  public int numComputedTokens() {
    return numComputedTokens;
  }

  /** Returns the output tokens sampled so far. */
  public int outputTokens() {
    return outputTokens;
  }

  /** Returns the output tokens the sequence will have sampled when it finishes. */
  public int maxOutputTokens() {
    return maxOutputTokens;
  }

  /** Returns the length the sequence will reach: prompt plus every output token. */
  public int finalTokens() {
    return request.promptTokens() + maxOutputTokens;
  }

  /** Returns how often the sequence was preempted. */
  public int preemptions() {
    return preemptions;
  }

  /** Returns the status. */
  public Status status() {
    return status;
  }

  @Override
  public String toString() {
    return "seq " + request.id() + (group.width() > 1 ? "." + index : "") + " (" + numComputedTokens + "/" + numTokens + " tokens, " + outputTokens + "/" + maxOutputTokens + " out, " + status + ")";
  }
}

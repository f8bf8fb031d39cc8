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
  int numTokens;
  int numComputedTokens;
  int outputTokens;
  int preemptions;
  long firstTokenNanos = -1;
  long finishNanos = -1;
  Status status = Status.WAITING;
  /** The KV manager's own state for this sequence. */
  Object kvState;

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

  /** Takes the token counts of {@code source}, whose KV this sequence now holds a copy of (a fork). */
  void copyProgress(Sequence source) {
    numTokens = source.numTokens;
    numComputedTokens = source.numComputedTokens;
    outputTokens = source.outputTokens;
  }

  /** Returns whether the sequence runs and has computed all its tokens, so this iteration samples one. */
  boolean caughtUp() {
    return status == Status.RUNNING && numComputedTokens >= numTokens;
  }

  /**
   * The end of an iteration for a caught-up sequence: it samples {@code token}, its output token
   * number {@link #outputTokens()} (counted from 0). A sequence that reaches its output length
   * finishes and {@code kv} frees its memory (the token is never appended: its KV is never
   * computed); any other appends it. Returns whether the sequence finished.
   */
  boolean sample(KvManager kv, int token) {
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

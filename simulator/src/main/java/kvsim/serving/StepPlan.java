package kvsim.serving;

import java.util.Arrays;

/**
 * What one iteration runs: the sequences scheduled, in order, with the tokens each computes, and
 * how many sequences the scheduler preempted to make room. Sequences that take a quiet decode step
 * (Note [Quiet decode steps] on {@link QueueScheduler}) are counted, not listed: the plan holds
 * their number and the sum of their computed tokens. Reused from iteration to iteration.
 */
public final class StepPlan {
  private Sequence[] sequences = new Sequence[64];
  private int[] tokens = new int[64];
  /** The sequences listed, {@code sequences[0..listed)}. */
  private int listed;
  /** Sequences in quiet decode steps, one token each, not listed. */
  private int quiet;
  /** Their computed tokens (this step's included), summed. */
  private long quietComputedTokens;
  /** The tokens scheduled: {@code tokens[0..listed)} and one per quiet sequence, summed as they are added. */
  private long totalTokens;
  private Sequence[] victims = new Sequence[8];
  private int preempted;
  /** Per scheduled sequence, what asynchronous scheduling did ahead ({@link #NOTHING_AHEAD} and so on). */
  private byte[] ahead = new byte[64];
  private boolean sampledAhead;

  /** Asynchronous scheduling: the sequence samples nothing in this plan (a prefill chunk). */
  public static final byte NOTHING_AHEAD = 0;
  /** Asynchronous scheduling: the sequence's token was appended when the plan was made. */
  public static final byte TOKEN_AHEAD = 1;
  /** Asynchronous scheduling: the sequence samples its last token; it finishes when the outcome is taken. */
  public static final byte LAST_TOKEN = 2;

  /** Empties the plan for the next iteration (a scheduler's {@code schedule} starts so). */
  public void clear() {
    Arrays.fill(sequences, 0, listed, null);
    Arrays.fill(victims, 0, preempted, null);
    listed = 0;
    quiet = 0;
    quietComputedTokens = 0;
    totalTokens = 0;
    preempted = 0;
    sampledAhead = false;
  }

  /** Schedules {@code numTokens} tokens of {@code s} in this iteration, after the ones scheduled so far. */
  public void add(Sequence s, int numTokens) {
    if (listed == sequences.length) {
      sequences = Arrays.copyOf(sequences, listed * 2);
      tokens = Arrays.copyOf(tokens, listed * 2);
      ahead = Arrays.copyOf(ahead, listed * 2);
    }
    ahead[listed] = NOTHING_AHEAD;
    sequences[listed] = s;
    tokens[listed] = numTokens;
    listed++;
    totalTokens += numTokens;
  }

  /**
   * Counts {@code count} sequences that take a quiet decode step in this iteration, one token each,
   * with {@code computedTokens} computed tokens in all once it is planned.
   */
  public void addQuiet(int count, long computedTokens) {
    quiet += count;
    quietComputedTokens += computedTokens;
    totalTokens += count;
  }

  /** Counts {@code victim} among the sequences preempted to plan this iteration. */
  public void countPreemption(Sequence victim) {
    if (preempted == victims.length) {
      victims = Arrays.copyOf(victims, preempted * 2);
    }
    victims[preempted++] = victim;
  }

  /** Returns the number of sequences scheduled (the batch size), quiet ones included. */
  public int size() {
    return listed + quiet;
  }

  /** Returns the number of sequences listed: all scheduled but the quiet ones. */
  public int listed() {
    return listed;
  }

  /** Returns the number of sequences in quiet decode steps, which are not listed. */
  public int quiet() {
    return quiet;
  }

  /** Returns the computed tokens of the sequences in quiet decode steps, summed. */
  public long quietComputedTokens() {
    return quietComputedTokens;
  }

  /** Returns the i-th listed sequence ({@code i < listed()}). */
  public Sequence sequence(int i) {
    return sequences[i];
  }

  /** Returns the tokens the i-th listed sequence computes. */
  public int tokens(int i) {
    return tokens[i];
  }

  /** Returns the tokens scheduled in total. */
  public long totalTokens() {
    return totalTokens;
  }

  /** Returns how many sequences were preempted while planning this iteration (a swapped group counts once, by its lead). */
  public int preempted() {
    return preempted;
  }

  /** Marks what asynchronous scheduling did ahead for the i-th sequence ({@link Scheduler#sampleAhead}). */
  void markAhead(int i, byte what) {
    ahead[i] = what;
    sampledAhead = true;
  }

  /** Returns what asynchronous scheduling did ahead for the i-th sequence. */
  public byte ahead(int i) {
    return ahead[i];
  }

  /** Returns whether the plan's tokens were taken ahead ({@link Scheduler#sampleAhead}). */
  public boolean sampledAhead() {
    return sampledAhead;
  }

  /** Copies {@code other} into this plan (the engine keeps the plan in flight and the next one). */
  public void copyFrom(StepPlan other) {
    clear();
    for (int i = 0; i < other.listed; i++) {
      add(other.sequences[i], other.tokens[i]);
      ahead[i] = other.ahead[i];
    }
    addQuiet(other.quiet, other.quietComputedTokens);
    for (int i = 0; i < other.preempted; i++) {
      countPreemption(other.victims[i]);
    }
    sampledAhead = other.sampledAhead;
  }

  /** Returns the i-th sequence preempted while planning this iteration, in preemption order. */
  public Sequence preemptedSequence(int i) {
    return victims[i];
  }
}

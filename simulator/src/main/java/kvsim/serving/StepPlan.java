package kvsim.serving;

import java.util.Arrays;

/**
 * What one iteration runs: the sequences scheduled, in order, with the tokens each computes, and
 * how many sequences the scheduler preempted to make room. Reused from iteration to iteration.
 */
public final class StepPlan {
  private Sequence[] sequences = new Sequence[64];
  private int[] tokens = new int[64];
  private int size;
  private Sequence[] victims = new Sequence[8];
  private int preempted;

  /** Empties the plan for the next iteration (a scheduler's {@code schedule} starts so). */
  public void clear() {
    Arrays.fill(sequences, 0, size, null);
    Arrays.fill(victims, 0, preempted, null);
    size = 0;
    preempted = 0;
  }

  /** Schedules {@code numTokens} tokens of {@code s} in this iteration, after the ones scheduled so far. */
  public void add(Sequence s, int numTokens) {
    if (size == sequences.length) {
      sequences = Arrays.copyOf(sequences, size * 2);
      tokens = Arrays.copyOf(tokens, size * 2);
    }
    sequences[size] = s;
    tokens[size] = numTokens;
    size++;
  }

  /** Counts {@code victim} among the sequences preempted to plan this iteration. */
  public void countPreemption(Sequence victim) {
    if (preempted == victims.length) {
      victims = Arrays.copyOf(victims, preempted * 2);
    }
    victims[preempted++] = victim;
  }

  /** Returns the number of sequences scheduled (the batch size). */
  public int size() {
    return size;
  }

  /** Returns the i-th scheduled sequence. */
  public Sequence sequence(int i) {
    return sequences[i];
  }

  /** Returns the tokens the i-th scheduled sequence computes. */
  public int tokens(int i) {
    return tokens[i];
  }

  /** Returns the tokens scheduled in total. */
  public long totalTokens() {
    long t = 0;
    for (int i = 0; i < size; i++) {
      t += tokens[i];
    }
    return t;
  }

  /** Returns how many sequences were preempted while planning this iteration (a swapped group counts once, by its lead). */
  public int preempted() {
    return preempted;
  }

  /** Returns the i-th sequence preempted while planning this iteration, in preemption order. */
  public Sequence preemptedSequence(int i) {
    return victims[i];
  }
}

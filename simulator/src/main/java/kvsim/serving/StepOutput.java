package kvsim.serving;

/**
 * What the caller of an iteration supplies to, and hears from, {@link
 * Scheduler#updateFromOutput}: the token each caught-up sequence samples, and what became of it.
 * The timed {@link ServingEngine} stamps times and counts metrics here; {@link ScriptedServing}
 * gives a script's token ids and names the finished requests. Called once per sampled token: an
 * implementation allocates nothing per call.
 */
public interface StepOutput {
  /**
   * Returns the token id {@code s} samples as its output token number {@code outputIndex} (counted
   * from 0): when it samples, {@link Sequence#outputTokens()}; a KV manager catching up with quiet
   * decode steps asks for earlier ones too.
   */
  int token(Sequence s, int outputIndex);

  /** {@code s} sampled a token; {@code finished}: it was its last, and its memory is freed. */
  void sampled(Sequence s, boolean finished);

  /**
   * {@code target} now holds a copy of {@code source}'s KV: a group's fork after its prompt, or
   * (when {@code beamReplacement}) a dropped beam refilled by a surviving one; {@code
   * modelledNanos} is the KV manager's modelled time for the copy.
   */
  default void forked(Sequence source, Sequence target, boolean beamReplacement, long modelledNanos) {}
}

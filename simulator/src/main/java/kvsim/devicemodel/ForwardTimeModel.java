package kvsim.devicemodel;

/**
 * The cost model of a serving iteration's forward pass: how long one pass over a batch takes on the
 * simulated device (README, "Calibration files"). {@link Roofline} is the default; a calibration
 * file's {@code forward} section replaces its efficiencies ({@link CostCalibration}).
 *
 * <p>The batch is given by its shape, so that a model may tell prefill from decode and charge per
 * sequence: the engine counts a scheduled sequence's tokens as decode when it computes one token
 * after it has sampled output (its next token), and as prefill otherwise (a prompt, a chunk of one,
 * or a preempted sequence's recomputation).
 */
public interface ForwardTimeModel {
  /**
   * Returns the time of one forward pass, in whole nanoseconds.
   *
   * @param prefillTokens tokens of prompts (and recomputed contexts) computed in the pass
   * @param decodeTokens tokens of sequences generating their next token
   * @param kvBytesRead bytes of KV cache the pass reads: every scheduled sequence's context
   * @param sequences the batch size: sequences scheduled
   */
  long forwardNanos(long prefillTokens, long decodeTokens, long kvBytesRead, int sequences);

  /**
   * Returns the serving engine's own CPU time per iteration (scheduling, input preparation,
   * sampling), in nanoseconds: added to the forward pass, or overlapped with it where the engine
   * schedules asynchronously ({@link EngineTerms}). None by default.
   */
  default long engineOverheadNanos() {
    return 0;
  }

  /** Returns what a run's summary echoes of this model under {@code cost_model}: which predictor, its source and constants. */
  java.util.Map<String, Object> echo();
}

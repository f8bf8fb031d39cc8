package kvsim.serving;

/** The serving engine's token rule for scheduler tests that drive iterations by hand: the k-th output token is 50,000 + k. */
final class EngineTokens implements StepOutput {
  static final EngineTokens INSTANCE = new EngineTokens();

  @Override
  public int token(Sequence s, int outputIndex) {
    return ServingEngine.FIRST_OUTPUT_TOKEN + outputIndex;
  }

  @Override
  public void sampled(Sequence s, boolean finished) {}
}

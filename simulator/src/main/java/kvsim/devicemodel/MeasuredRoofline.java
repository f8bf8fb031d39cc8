package kvsim.devicemodel;

import java.util.Map;

/**
 * The roofline with measured constants (README, "Cost models"): {@link Roofline}'s larger of compute
 * and memory time, with efficiencies fitted on a device's per-operation profiles ({@link
 * ProfileFit}), plus the per-sequence attention cost and the engine overhead ({@link EngineTerms}).
 * kvsim times a model that has no profile of its own on a device that has profiles of other models
 * so (Note [Which predictor times a run] on {@link CostModels}).
 *
 * @param roofline the roofline with the fitted efficiencies
 * @param terms the per-sequence and per-iteration terms
 * @param source where the efficiencies come from, for the summary
 */
public record MeasuredRoofline(Roofline roofline, EngineTerms terms, String source) implements ForwardTimeModel {
  @Override
  public long forwardNanos(long prefillTokens, long decodeTokens, long kvBytesRead, int sequences) {
    double perSequence = (double) roofline.model().layers() * terms.perSequenceLayerNanos() * sequences;
    return Math.round(Math.max(roofline.computeNanos(prefillTokens + decodeTokens), roofline.memoryNanos(kvBytesRead)) + perSequence);
  }

  @Override
  public long engineOverheadNanos() {
    return terms.engineOverheadNanos();
  }

  @Override
  public Map<String, Object> echo() {
    return terms.echo(CostModels.MEASURED_ROOFLINE, source, roofline.computeEfficiency(), roofline.memoryEfficiency());
  }
}

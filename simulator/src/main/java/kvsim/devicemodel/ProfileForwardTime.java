package kvsim.devicemodel;

import java.util.Map;
import kvsim.core.ModelPreset;

/**
 * A forward pass timed by a measured per-operation profile (README, "Cost models"): the model's
 * layers at the iteration's token count (prefill and decode tokens together) interpolated in its
 * {@link ProfileTable}, × layers, plus the embedding; and what the profile does not hold, modelled
 * with the efficiencies fitted on it ({@link ProfileFit}) (Note [What a profile leaves to the
 * model]), plus the per-sequence attention cost ({@link EngineTerms}). The engine overhead is
 * reported apart ({@link #engineOverheadNanos}).
 *
 * <p>Note [What a profile leaves to the model]: Vidur's {@code mlp.csv} times one layer's
 * operations other than attention, and the embedding; so kvsim models the rest:
 *
 * <ul>
 *   <li>The LM head: one vocabulary-wide linear layer per sequence (vLLM computes logits at each
 *       sequence's last position only), the larger of 2 × its weights × sequences FLOPs at the
 *       fitted compute efficiency and its weights read at the fitted memory efficiency. Its
 *       weights are half of what the model's parameters hold beyond its layers' linear layers (the
 *       embedding and the head, untied).
 *   <li>Decode attention reads the KV cache: the bytes read at the fitted memory efficiency.
 *   <li>Prefill attention computes 2 × tokens² × width FLOPs per layer for a causal prompt (QKᵀ
 *       and PV over half the square); the forward-time seam gives the batch's prefill tokens and
 *       sequences, not each prompt's length, so the prefill tokens are taken as split evenly over
 *       the sequences that are not decoding (exact for equal prompts, low for unequal ones); at the
 *       fitted compute efficiency.
 *   <li>Per sequence and layer, {@link EngineTerms#perSequenceLayerNanos()}.
 * </ul>
 *
 * @param table the measured per-layer times
 * @param model the model
 * @param device the device
 * @param efficiencies efficiencies fitted on the profile (or given by a calibration file)
 * @param terms the per-sequence and per-iteration terms
 * @param source where the profile comes from, for the summary
 */
public record ProfileForwardTime(ProfileTable table, ModelPreset model, DeviceSpec device, ProfileFit.Efficiencies efficiencies, EngineTerms terms, String source)
    implements ForwardTimeModel {

  @Override
  public long forwardNanos(long prefillTokens, long decodeTokens, long kvBytesRead, int sequences) {
    long tokens = prefillTokens + decodeTokens;
    if (tokens == 0 && sequences == 0) {
      return 0;
    }
    double layers = model.layers();
    double t = table.passNanos(tokens, layers);
    double flops = device.peakFlops() * efficiencies.compute();
    double bytes = device.hbmBytesPerSecond() * efficiencies.memory();
    double head = headWeights();
    t += Math.max(2.0 * head * sequences / flops, 2.0 * head / bytes) * 1e9;
    long prefillSequences = Math.max(1, sequences - decodeTokens);
    double attentionFlops = prefillTokens == 0 ? 0 : 2.0 * model.hiddenSize() * ((double) prefillTokens * prefillTokens / prefillSequences) * layers;
    t += (attentionFlops / flops + kvBytesRead / bytes) * 1e9;
    t += layers * terms.perSequenceLayerNanos() * sequences;
    return Math.round(t);
  }

  /** The LM head's weight elements (Note [What a profile leaves to the model]). */
  double headWeights() {
    return Math.max(0, (model.parameters() - model.layers() * table.shape().linearWeights()) / 2);
  }

  @Override
  public long engineOverheadNanos() {
    return terms.engineOverheadNanos();
  }

  @Override
  public Map<String, Object> echo() {
    return terms.echo(CostModels.PROFILE, source, efficiencies.compute(), efficiencies.memory());
  }
}

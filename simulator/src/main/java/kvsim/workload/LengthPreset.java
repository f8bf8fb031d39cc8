package kvsim.workload;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;

/**
 * Prompt and output lengths of LLM serving workloads, as log-normal mixtures: most are fitted by EM
 * on ln(length) to public traces (the fitted parameters of the shared traces' statistics, section
 * 2), with each trace's mean arrival rate (section 3) and caps at the largest observed length (the
 * statistics advise clipping to the trace's cap, e.g. 1,000 output tokens for Azure conversation);
 * two are the vLLM paper's workloads, its means with an assumed shape (Note [Alpaca preset], Note
 * [vLLM paper's ShareGPT preset]).
 *
 * <p>Caps are applied one of two ways ({@link Caps}): a fitted preset clips each length to [1, cap]
 * (the traces' own caps); a preset of the paper's benchmark drops a request outside its filter and
 * draws again, as the paper's benchmark dropped such conversations.
 *
 * @param name preset name
 * @param description one line: where the preset comes from and what it is not
 * @param input prompt length mixture
 * @param output output length mixture
 * @param meanRatePerSecond mean request arrival rate of the trace (the default rate)
 * @param caps how lengths outside the caps are treated
 * @param maxTotalTokens with {@link Caps#DROP}, the largest prompt + output kept; 0 for no such cap
 */
public record LengthPreset(String name, String description, Mixture input, Mixture output, double meanRatePerSecond, Caps caps,
    int maxTotalTokens) {

  /** How a preset keeps lengths inside its caps. */
  public enum Caps {
    /** Each length is clipped to [1, its mixture's cap], independently. */
    CLIP,
    /**
     * A request whose prompt is outside [1, input cap], whose output is below 1, or whose prompt +
     * output is over {@code maxTotalTokens}, is dropped and both lengths are drawn again.
     */
    DROP
  }

  /**
   * A two-component log-normal mixture: with probability w1 draw exp(N(mu1, sigma1)), else
   * exp(N(mu2, sigma2)); round to the nearest integer; lengths outside [1, cap] are clipped (or,
   * with {@link Caps#DROP}, the preset draws again).
   */
  public record Mixture(double w1, double mu1, double sigma1, double mu2, double sigma2, int cap) {
    /** A single log-normal, exp(N(mu, sigma)). */
    public static Mixture single(double mu, double sigma, int cap) {
      return new Mixture(1.0, mu, sigma, mu, sigma, cap);
    }

    /** Draws one length, clipped to [1, cap]. */
    public int sample(UniformRandomProvider rng, ZigguratSampler.NormalizedGaussian gaussian) {
      return (int) Math.max(1, Math.min(cap, draw(rng, gaussian)));
    }

    /** Draws one length, rounded to the nearest integer and not clipped (0 for a draw below 0.5). */
    long draw(UniformRandomProvider rng, ZigguratSampler.NormalizedGaussian gaussian) {
      boolean first = rng.nextDouble() < w1;
      double z = gaussian.sample();
      double x = Math.exp(first ? mu1 + sigma1 * z : mu2 + sigma2 * z);
      return Math.round(x);
    }
  }

  /** One request's lengths. */
  public record Lengths(int promptTokens, int outputTokens) {}

  /**
   * Draws one request's lengths: the prompt, then the output, from the random stream given ({@link
   * Caps#CLIP}: one draw each; {@link Caps#DROP}: pairs until one is inside the filter).
   */
  public Lengths sample(UniformRandomProvider rng, ZigguratSampler.NormalizedGaussian gaussian) {
    if (caps == Caps.CLIP) {
      int prompt = input.sample(rng, gaussian);
      return new Lengths(prompt, output.sample(rng, gaussian));
    }
    while (true) {
      long prompt = input.draw(rng, gaussian);
      long out = output.draw(rng, gaussian);
      if (prompt >= 1 && prompt <= input.cap() && out >= 1 && out <= output.cap() && prompt + out <= maxTotalTokens) {
        return new Lengths((int) prompt, (int) out);
      }
    }
  }

  private static final Map<String, LengthPreset> PRESETS = new LinkedHashMap<>();

  static {
    fitted("azure-conv", "Azure LLM inference 2023, conversation (two-component log-normal fit)",
        new Mixture(0.014, 2.993, 0.697, 6.685, 0.888, 14050),
        new Mixture(0.723, 4.641, 0.710, 6.006, 0.049, 1000), 5.530);
    fitted("azure-code", "Azure LLM inference 2023, code (two-component log-normal fit)",
        new Mixture(0.305, 5.518, 1.307, 7.650, 0.724, 7437),
        new Mixture(0.659, 2.365, 0.383, 3.605, 0.899, 1899), 2.566);
    fitted("mooncake-conv", "Mooncake conversation trace (two-component log-normal fit)",
        new Mixture(0.081, 6.804, 0.008, 8.906, 1.099, 126195),
        new Mixture(0.338, 4.024, 1.617, 6.008, 0.346, 2000), 3.401);
    fitted("sharegpt", "ShareGPT whole multi-turn conversations (two-component fit; median prompt about 1,740 tokens, 44 % of prompts "
            + "reach OPT's 2,048-token context), "
            + "not the vLLM paper's workload (that is vllm-sharegpt)",
        new Mixture(0.283, 4.999, 1.533, 7.799, 0.735, 8141),
        new Mixture(0.283, 4.682, 1.187, 6.199, 0.436, 1024), 5.530);
    // Note [Alpaca preset]: the vLLM paper (Kwon et al., SOSP 2023, arXiv 2309.06180, Fig. 11)
    // gives only the Alpaca means, 19.31 prompt and 58.45 output tokens, and no arrival times
    // (its Poisson rates are set per experiment; Fig. 13 uses 30 requests/s, the default here). The
    // shape is an assumption, not a fit: one log-normal per length with sigma 0.7 in log space and
    // mu = ln(mean) - sigma^2 / 2, so the means match the paper's (after rounding and the caps: 19.310
    // and 58.452 exactly, by summing the rounded distribution); caps at 2,048 tokens (OPT's context),
    // which a draw passes with probability below 1e-6, so clipping and the paper's filter agree.
    fitted("alpaca", "the vLLM paper's Alpaca workload: its means (19.31 prompt, 58.45 output tokens), an assumed log-normal shape",
        Mixture.single(2.7156, 0.7, 2048),
        Mixture.single(3.8232, 0.7, 2048), 30.0);
    // Note [vLLM paper's ShareGPT preset]: the vLLM paper's ShareGPT workload (Kwon et al., SOSP
    // 2023, arXiv 2309.06180, Fig. 11 and §6.1) is the first exchange of each ShareGPT conversation,
    // with mean prompt 161.31 and mean output 337.99 tokens; its benchmark dropped prompts over 1,024
    // tokens and prompt + output over 2,048 (OPT's context). The paper gives the means, not the
    // shape, so the shape is an assumption: one log-normal per length with the spread (sigma, in
    // log space) of the single log-normal fitted to ShareGPT-8k in the shared traces' statistics
    // (section 2: input 1.6257, output 1.0011) -- the spread of ShareGPT's own lengths, the only
    // one measured here -- and the paper's filter as a drop (Caps.DROP: a pair outside it is drawn
    // again). mu is solved so that the means *after* rounding and the filter are the paper's:
    // summing the rounded distribution over the kept pairs (prompt in [1, 1024], output >= 1,
    // prompt + output <= 2048) gives mu 4.50649 for the prompt and 5.45618 for the output (medians
    // of 91 and 234 tokens before the filter; 91.3 % of pairs are kept), and 161.31 and 337.99 to
    // the second decimal. The two-component fit of whole conversations (the sharegpt preset) does
    // not apply: its prompts are whole multi-turn histories. Default rate: 2 requests/s, the rate of
    // the paper's Fig. 2 and Fig. 13 (its arrivals are Poisson at rates set per experiment).
    add(new LengthPreset("vllm-sharegpt",
        "the vLLM paper's ShareGPT workload: its means (161.31 prompt, 337.99 output tokens) after its filter "
            + "(prompt <= 1,024, prompt + output <= 2,048), an assumed log-normal shape",
        Mixture.single(4.50649, 1.6257, 1024),
        Mixture.single(5.45618, 1.0011, 2047), 2.0, Caps.DROP, 2048));
  }

  private static void fitted(String name, String description, Mixture input, Mixture output, double meanRatePerSecond) {
    add(new LengthPreset(name, description, input, output, meanRatePerSecond, Caps.CLIP, 0));
  }

  private static void add(LengthPreset p) {
    PRESETS.put(p.name(), p);
  }

  /** Returns the presets in a stable order. */
  public static Map<String, LengthPreset> presets() {
    return java.util.Collections.unmodifiableMap(PRESETS);
  }

  /** Returns the preset of this name, or null. */
  public static LengthPreset find(String name) {
    return PRESETS.get(name.toLowerCase(Locale.ROOT));
  }
}

package kvsim.workload;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;

/**
 * Prompt and output lengths of public LLM serving traces, as two-component log-normal mixtures
 * fitted by EM on ln(length) (the fitted parameters of the shared traces' statistics, section 2),
 * with each trace's mean arrival rate (section 3) and caps at the largest observed length (the
 * statistics advise clipping to the trace's cap, e.g. 1,000 output tokens for Azure conversation).
 *
 * @param name preset name
 * @param input prompt length mixture
 * @param output output length mixture
 * @param meanRatePerSecond mean request arrival rate of the trace
 */
public record LengthPreset(String name, Mixture input, Mixture output, double meanRatePerSecond) {

  /**
   * A two-component log-normal mixture: with probability w1 draw exp(N(mu1, sigma1)), else
   * exp(N(mu2, sigma2)); round to the nearest integer; lengths outside [1, cap] are clipped.
   */
  public record Mixture(double w1, double mu1, double sigma1, double mu2, double sigma2, int cap) {
    /** Draws one length. */
    public int sample(UniformRandomProvider rng, ZigguratSampler.NormalizedGaussian gaussian) {
      boolean first = rng.nextDouble() < w1;
      double z = gaussian.sample();
      double x = Math.exp(first ? mu1 + sigma1 * z : mu2 + sigma2 * z);
      long n = Math.round(x);
      return (int) Math.max(1, Math.min(cap, n));
    }
  }

  private static final Map<String, LengthPreset> PRESETS = new LinkedHashMap<>();

  static {
    add(new LengthPreset("azure-conv",
        new Mixture(0.014, 2.993, 0.697, 6.685, 0.888, 14050),
        new Mixture(0.723, 4.641, 0.710, 6.006, 0.049, 1000), 5.530));
    add(new LengthPreset("azure-code",
        new Mixture(0.305, 5.518, 1.307, 7.650, 0.724, 7437),
        new Mixture(0.659, 2.365, 0.383, 3.605, 0.899, 1899), 2.566));
    add(new LengthPreset("mooncake-conv",
        new Mixture(0.081, 6.804, 0.008, 8.906, 1.099, 126195),
        new Mixture(0.338, 4.024, 1.617, 6.008, 0.346, 2000), 3.401));
    add(new LengthPreset("sharegpt",
        new Mixture(0.283, 4.999, 1.533, 7.799, 0.735, 8141),
        new Mixture(0.283, 4.682, 1.187, 6.199, 0.436, 1024), 5.530));
    // Note [Alpaca preset]: the vLLM paper (Kwon et al., SOSP 2023, arXiv 2309.06180, Fig. 11)
    // gives only the Alpaca means, 19.31 prompt and 58.45 output tokens, and no arrival times
    // (its Poisson rates are set per experiment; Fig. 13 uses 30 requests/s, the default here). The
    // shape is an assumption, not a fit: one log-normal per length with sigma 0.7 in log space and
    // mu = ln(mean) - sigma^2 / 2, so the means match the paper's; caps at 2,048 tokens (OPT's context).
    add(new LengthPreset("alpaca",
        new Mixture(1.0, 2.7156, 0.7, 2.7156, 0.7, 2048),
        new Mixture(1.0, 3.8232, 0.7, 3.8232, 0.7, 2048), 30.0));
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

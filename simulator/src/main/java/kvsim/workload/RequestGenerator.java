package kvsim.workload;

import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;

/**
 * LLM requests with Poisson arrivals and prompt and output lengths drawn from a {@link
 * LengthPreset} (log-normal mixtures fitted to public serving traces, or the vLLM paper's workloads): the request
 * workload {@code requests:preset=…,rate=…,count=…,seed=…} of serving-level runs, and of {@code
 * kvsim generate requests}.
 *
 * <ul>
 *   <li>Arrivals: exponential gaps of mean {@code 1 / rate} seconds from time 0 (the first request
 *       arrives after one gap); times are rounded to whole nanoseconds.
 *   <li>Lengths: the preset's mixtures, kept inside its caps as the preset says (clipped to [1,
 *       cap], or the pair drawn again: {@link LengthPreset.Caps}); no prefix hashes (the presets
 *       carry no sharing structure).
 *   <li>Sampling: every request asks for {@code n} parallel samples (option {@code n}, default 1)
 *       or a beam width (option {@code beam}, default 1: no beam search), not both, as the vLLM
 *       paper's Fig. 14 and 15 runs do; echoed only when given.
 *   <li>Random stream: Commons RNG's XO_RO_SHI_RO_128_PP seeded with {@code seed}; per request it
 *       draws the gap, then the prompt length, then the output length (again both lengths, for a
 *       dropped pair).
 * </ul>
 */
public final class RequestGenerator implements RequestSource {
  /** Default length preset. */
  public static final String DEFAULT_PRESET = KvGenerator.DEFAULT_PRESET;
  /** Default request count. */
  public static final long DEFAULT_COUNT = 1000;

  private final LengthPreset preset;
  private final long count;
  private final double ratePerSecond;
  private final int samples;
  private final int beamWidth;
  private final UniformRandomProvider rng;
  private final ZigguratSampler.NormalizedGaussian gaussian;
  private final ZigguratSampler.Exponential exponential;
  private final Map<String, Object> description;
  private double arrivalSeconds;
  private long issued;

  /** The most parallel samples or beams a generated request may ask for. */
  public static final int MAX_SAMPLES = 64;

  /**
   * Builds the generator from options {@code preset}, {@code rate} (requests/s, default: the preset
   * trace's mean), {@code count}, {@code seed}, {@code n} and {@code beam}.
   */
  public RequestGenerator(OptionMap options) {
    String presetName = options.string("preset", DEFAULT_PRESET);
    this.preset = LengthPreset.find(presetName);
    if (preset == null) {
      throw options.bad("preset", presetName, "unknown length preset (known: " + String.join(", ", LengthPreset.presets().keySet()) + ")");
    }
    this.ratePerSecond = options.number("rate", preset.meanRatePerSecond(), 1e-9, 1e9);
    this.count = options.integer("count", DEFAULT_COUNT, 0, Long.MAX_VALUE);
    long seed = options.integer("seed", ChurnGenerator.DEFAULT_SEED, Long.MIN_VALUE, Long.MAX_VALUE);
    this.samples = options.optional("n") == null ? 1 : (int) options.integer("n", 1, 1, MAX_SAMPLES);
    this.beamWidth = options.optional("beam") == null ? 1 : (int) options.integer("beam", 1, 1, MAX_SAMPLES);
    if (samples > 1 && beamWidth > 1) {
      throw options.bad("beam", Integer.toString(beamWidth), "a request samples n > 1 or searches with a beam, not both");
    }
    options.requireAllUsed();
    this.rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    this.gaussian = ZigguratSampler.NormalizedGaussian.of(rng);
    this.exponential = ZigguratSampler.Exponential.of(rng);
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("generator", "requests");
    d.put("params", options.effective());
    this.description = d;
  }

  @Override
  public Request next() {
    if (issued >= count) {
      return null;
    }
    arrivalSeconds += exponential.sample() / ratePerSecond;
    LengthPreset.Lengths lengths = preset.sample(rng, gaussian);
    int prompt = lengths.promptTokens();
    int output = lengths.outputTokens();
    long arrivalNanos = Math.round(arrivalSeconds * 1e9);
    if (arrivalNanos == Long.MAX_VALUE) {
      throw new InputException("generator requests: arrival times pass 2^63 ns (292 years) at request " + issued + "; raise rate or lower count");
    }
    if (samples == 1 && beamWidth == 1) {
      return Request.of(issued++, arrivalNanos, prompt, output);
    }
    return new Request(0, issued++, arrivalNanos, prompt, output, null, samples, beamWidth);
  }

  @Override
  public int hashBlockTokens() {
    return 0;
  }

  @Override
  public String name() {
    return "requests-" + preset.name();
  }

  @Override
  public Map<String, Object> describe() {
    return description;
  }
}

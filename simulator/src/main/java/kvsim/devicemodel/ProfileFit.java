package kvsim.devicemodel;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.ModelPreset;

/**
 * What a profile says about its device (README, "Cost models"): the shares of peak FLOP/s and of
 * peak HBM bandwidth that a whole transformer layer reaches (Note [Efficiencies fitted on a
 * profile]), and how well kvsim's predictors predict profile rows they were not fitted on ({@link
 * #heldOut}).
 *
 * <p>Note [Efficiencies fitted on a profile]: a layer's FLOPs are those of its four linear layers,
 * 2 × tokens × their weights; its bytes, those weights read once in 2-byte elements. The compute
 * efficiency is the median, over the rows of {@value #PREFILL_TOKENS} tokens or more, of the
 * FLOPs over (peak FLOP/s × the whole layer's measured time); the memory efficiency the median,
 * over the rows of {@value #DECODE_FIT_TOKENS} tokens or fewer, of the bytes over (peak HBM
 * bandwidth × that time). The whole layer, not its linear layers alone: the norms, activation,
 * rotary embedding and residual add cost time too (about 9 % of a layer at 4096 tokens on A100),
 * and the roofline that uses the efficiencies has no term of its own for them. On Llama-2-7B on
 * A100 this gives 0.64 and 0.70: the measured linear layers reach about 71 % of peak and 75 % of
 * bandwidth, the rest goes to the small operations.
 */
public final class ProfileFit {
  /** Rows of at least this many tokens fit the compute efficiency and count as prefill. */
  public static final long PREFILL_TOKENS = 1024;
  /** Rows of at most this many tokens fit the memory efficiency. */
  public static final long DECODE_FIT_TOKENS = 16;
  /** Held-out rows of at least this many tokens count as prefill iterations. */
  public static final long PREFILL_ITERATION_TOKENS = 512;
  /** Held-out rows of at most this many tokens count as decode iterations (a batch of up to 256 sequences). */
  public static final long DECODE_ITERATION_TOKENS = 256;

  private ProfileFit() {}

  /**
   * Fitted shares of peak.
   *
   * @param compute share of peak FLOP/s a layer reaches at prefill token counts
   * @param memory share of peak HBM bandwidth a layer reaches at decode token counts
   */
  public record Efficiencies(double compute, double memory) {}

  /** Returns the efficiencies of {@code device} fitted on {@code tables} together (Note [Efficiencies fitted on a profile]). */
  public static Efficiencies efficiencies(List<ProfileTable> tables, DeviceSpec device) {
    List<Double> compute = new ArrayList<>();
    List<Double> memory = new ArrayList<>();
    for (ProfileTable t : tables) {
      double weights = t.shape().linearWeights();
      for (int i = 0; i < t.tokens().length; i++) {
        double seconds = t.measuredLayer(i) * 1e-9;
        if (t.tokens()[i] >= PREFILL_TOKENS) {
          compute.add(2.0 * weights * t.tokens()[i] / (device.peakFlops() * seconds));
        }
        if (t.tokens()[i] <= DECODE_FIT_TOKENS) {
          memory.add(2.0 * weights / (device.hbmBytesPerSecond() * seconds));
        }
      }
    }
    if (compute.isEmpty() || memory.isEmpty()) {
      throw new IllegalArgumentException("a fit needs rows of at least " + PREFILL_TOKENS + " and at most " + DECODE_FIT_TOKENS + " tokens");
    }
    return new Efficiencies(median(compute), median(memory));
  }

  /** Returns the efficiencies of {@code device} fitted on {@code table}. */
  public static Efficiencies efficiencies(ProfileTable table, DeviceSpec device) {
    return efficiencies(List.of(table), device);
  }

  /**
   * The error of predicting held-out rows: relative errors (predicted / measured − 1) of one
   * quantity.
   *
   * @param what the quantity (an operation kind, or a prefill or decode iteration)
   * @param predictor which predictor predicted it ({@code profile}, {@code fitted-roofline})
   * @param errors the relative errors, one per held-out row
   */
  public record Errors(String what, String predictor, double[] errors) {
    /** Returns the median of the absolute errors. */
    public double medianAbs() {
      return median(Arrays.stream(errors).map(Math::abs).boxed().toList());
    }

    /** Returns the largest absolute error. */
    public double worstAbs() {
      return Arrays.stream(errors).map(Math::abs).max().orElse(Double.NaN);
    }

    /** Returns the median signed error (positive: predicted slow). */
    public double medianSigned() {
      return median(Arrays.stream(errors).boxed().toList());
    }
  }

  /**
   * Returns the held-out errors of the predictors on {@code table} (Note [Held-out split]): per
   * operation kind, the profile predictor's interpolation; per whole iteration (every layer and the
   * embedding, attention excluded: the profile has none), the profile predictor and the roofline
   * with efficiencies fitted on the fit rows, for prefill and decode rows.
   *
   * <p>Note [Held-out split]: the table's token counts in increasing order are split by position:
   * even positions (the 1st, 3rd, ...) and the last fit, odd positions other than the last are held
   * out and predicted. The smallest and largest counts always fit, so every held-out row lies
   * between two fitted ones and nothing is extrapolated.
   */
  public static List<Errors> heldOut(ProfileTable table, ModelPreset model, DeviceSpec device) {
    int n = table.tokens().length;
    java.util.function.IntPredicate fit = i -> i % 2 == 0 || i == n - 1;
    ProfileTable train = table.rows(fit);
    ProfileTable test = table.rows(fit.negate());
    List<Errors> out = new ArrayList<>();
    if (test.tokens().length == 0) {
      return out;
    }
    for (ProfileTable.OpKind k : ProfileTable.OpKind.values()) {
      double[] e = new double[test.tokens().length];
      for (int i = 0; i < e.length; i++) {
        e[i] = relative(train.nanos(k, test.tokens()[i]), test.measured(k, i));
      }
      out.add(new Errors(k.label(), "profile", e));
    }
    Efficiencies eff = efficiencies(train, device);
    double weights = table.shape().linearWeights();
    for (String phase : new String[] {"prefill", "decode"}) {
      List<Double> profile = new ArrayList<>();
      List<Double> roofline = new ArrayList<>();
      for (int i = 0; i < test.tokens().length; i++) {
        long tokens = test.tokens()[i];
        boolean in = phase.equals("prefill") ? tokens >= PREFILL_ITERATION_TOKENS : tokens <= DECODE_ITERATION_TOKENS;
        if (!in) {
          continue;
        }
        double measured = model.layers() * test.measuredLayer(i) + test.measured(ProfileTable.OpKind.EMBEDDING, i);
        double predicted = 0;
        for (ProfileTable.OpKind k : ProfileTable.OpKind.values()) {
          predicted += (k == ProfileTable.OpKind.EMBEDDING ? 1 : model.layers()) * train.nanos(k, tokens);
        }
        profile.add(relative(predicted, measured));
        double layer = Math.max(2.0 * weights * tokens / (device.peakFlops() * eff.compute()), 2.0 * weights / (device.hbmBytesPerSecond() * eff.memory())) * 1e9;
        roofline.add(relative(model.layers() * layer, measured));
      }
      if (!profile.isEmpty()) {
        out.add(new Errors(phase + " iteration", "profile", profile.stream().mapToDouble(Double::doubleValue).toArray()));
        out.add(new Errors(phase + " iteration", "fitted-roofline", roofline.stream().mapToDouble(Double::doubleValue).toArray()));
      }
    }
    return out;
  }

  /** Returns the held-out errors as a text table: quantity, predictor, rows, median and worst absolute error. */
  public static String table(List<Errors> errors) {
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%-20s %-16s %5s %9s %9s %9s%n", "what", "predictor", "rows", "median", "worst", "bias"));
    for (Errors e : errors) {
      b.append(String.format(Locale.ROOT, "%-20s %-16s %5d %8.1f%% %8.1f%% %+8.1f%%%n", e.what(), e.predictor(), e.errors().length,
          100 * e.medianAbs(), 100 * e.worstAbs(), 100 * e.medianSigned()));
    }
    return b.toString();
  }

  /** Returns the held-out errors as a JSON-ready map: quantity and predictor to its median and worst absolute error. */
  public static Map<String, Object> summary(List<Errors> errors) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (Errors e : errors) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("rows", e.errors().length);
      row.put("median_abs_error", e.medianAbs());
      row.put("worst_abs_error", e.worstAbs());
      m.put(e.what() + " (" + e.predictor() + ")", row);
    }
    return m;
  }

  private static double relative(double predicted, double measured) {
    return measured == 0 ? (predicted == 0 ? 0 : Double.POSITIVE_INFINITY) : predicted / measured - 1;
  }

  static double median(List<Double> xs) {
    if (xs.isEmpty()) {
      return Double.NaN;
    }
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    int m = a.length / 2;
    return a.length % 2 == 1 ? a[m] : (a[m - 1] + a[m]) / 2;
  }
}

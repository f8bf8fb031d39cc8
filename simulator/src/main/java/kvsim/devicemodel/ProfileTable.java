package kvsim.devicemodel;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import kvsim.core.InputException;

/**
 * A model's measured per-layer operation times on one GPU, by token count (README, "Cost models"):
 * kvsim's own reduction of a per-operation profile in Vidur's format ({@link ProfileReader}): at
 * tensor-parallel degree 1, per token count, the median time of one transformer layer's operations
 * summed by {@link OpKind}, and of the embedding (once per forward pass). A time between measured
 * token counts is interpolated linearly (Note [Interpolating a profile]).
 *
 * <p>Note [Interpolating a profile]: at a measured token count the table gives the measured time
 * exactly; between two measured counts it is the straight line between them (so it is monotone
 * between neighbours, rising where the measurements rise); below the smallest count it is the
 * smallest count's time (a kernel costs its launch however few tokens it has); above the largest
 * it is the largest count's time scaled by the token count, as a compute-bound kernel scales. The
 * measurements are not smoothed: a time that dips between neighbouring counts (noise, or a kernel
 * choice) is kept as measured.
 *
 * @param model the kvsim model preset the profile was measured for
 * @param device the kvsim device preset it was measured on
 * @param source where the measurements come from, for a run's summary
 * @param shape the model shape the profile states
 * @param tokens the measured token counts, strictly increasing, each positive
 * @param nanos per {@link OpKind} (by ordinal), the time at each token count, in nanoseconds
 */
public record ProfileTable(String model, String device, String source, Shape shape, long[] tokens, double[][] nanos) {
  /** The header of the derived table's columns. */
  static final String HEADER = "num_tokens,linear_ns,norm_ns,activation_ns,elementwise_ns,emb_ns";

  /**
   * The shape of the profiled model, as the profile states it.
   *
   * @param heads query heads
   * @param kvHeads key/value heads
   * @param hiddenSize model width
   * @param intermediateSize MLP width
   * @param gatedMlp whether the MLP's up projection is gated (two matrices)
   */
  public record Shape(int heads, int kvHeads, int hiddenSize, int intermediateSize, boolean gatedMlp) {
    /** Returns the weight elements of one layer's four linear layers. */
    public double linearWeights() {
      double headDim = (double) hiddenSize / heads;
      double qkv = (double) hiddenSize * (hiddenSize + 2.0 * kvHeads * headDim);
      double out = (double) hiddenSize * hiddenSize;
      double up = (double) hiddenSize * intermediateSize * (gatedMlp ? 2 : 1);
      double down = (double) intermediateSize * hiddenSize;
      return qkv + out + up + down;
    }

    /** Returns the text the derived table and a calibration file keep it as. */
    public String text() {
      return "n_head=" + heads + ",n_kv_head=" + kvHeads + ",n_embd=" + hiddenSize + ",n_expanded_embd=" + intermediateSize + ",use_gated_mlp=" + gatedMlp;
    }
  }

  /** The kinds of operation a profile times; elementwise takes rotary embedding and the residual add. */
  public enum OpKind {
    /** The four linear layers: QKV and output projections, MLP up and down projections. */
    LINEAR("linear"),
    /** The two RMS norms. */
    NORM("norm"),
    /** The MLP's activation. */
    ACTIVATION("activation"),
    /** Rotary position embedding and the residual add. */
    ELEMENTWISE("elementwise"),
    /** The token embedding, once per forward pass (not per layer). */
    EMBEDDING("emb");

    private final String label;

    OpKind(String label) {
      this.label = label;
    }

    /** Returns the kind's name in tables and files. */
    public String label() {
      return label;
    }
  }

  public ProfileTable {
    if (tokens.length == 0 || nanos.length != OpKind.values().length) {
      throw new IllegalArgumentException("a profile table needs token counts and a time per operation kind");
    }
    for (int i = 0; i < tokens.length; i++) {
      if (tokens[i] <= 0 || (i > 0 && tokens[i] <= tokens[i - 1])) {
        throw new IllegalArgumentException("token counts must be positive and strictly increasing, got " + Arrays.toString(tokens));
      }
    }
    for (double[] kind : nanos) {
      if (kind.length != tokens.length) {
        throw new IllegalArgumentException("every operation kind needs a time per token count");
      }
      for (double t : kind) {
        if (!(t >= 0) || Double.isInfinite(t)) {
          throw new IllegalArgumentException("times must be finite and non-negative, got " + t);
        }
      }
    }
    tokens = tokens.clone();
    double[][] copy = new double[nanos.length][];
    for (int k = 0; k < nanos.length; k++) {
      copy[k] = nanos[k].clone();
    }
    nanos = copy;
  }

  /** Returns the measured time of {@code kind} at the {@code i}th token count, in nanoseconds. */
  public double measured(OpKind kind, int i) {
    return nanos[kind.ordinal()][i];
  }

  /** Returns the time of {@code kind} over {@code n} tokens (Note [Interpolating a profile]), in nanoseconds. */
  public double nanos(OpKind kind, double n) {
    return interpolate(tokens, nanos[kind.ordinal()], n);
  }

  /**
   * Returns the time of one forward pass's profiled operations over {@code n} tokens: {@code
   * layers} × one layer (every kind but the embedding) plus the embedding, each interpolated as
   * {@link #nanos} does (Note [Interpolating a profile]), with one search of the token counts.
   */
  public double passNanos(double n, double layers) {
    int last = tokens.length - 1;
    int emb = OpKind.EMBEDDING.ordinal();
    if (n <= tokens[0]) {
      return layers * layerAt(0) + nanos[emb][0];
    }
    if (n >= tokens[last]) {
      return (layers * layerAt(last) + nanos[emb][last]) * (n / tokens[last]);
    }
    int lo = 0;
    int hi = last;
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      if (tokens[mid] <= n) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    double f = (n - tokens[lo]) / (double) (tokens[hi] - tokens[lo]);
    double a = layers * layerAt(lo) + nanos[emb][lo];
    double b = layers * layerAt(hi) + nanos[emb][hi];
    return a + f * (b - a);
  }

  private double layerAt(int i) {
    return nanos[0][i] + nanos[1][i] + nanos[2][i] + nanos[3][i];
  }

  /** Returns the time of one layer's operations (every kind but the embedding) at the {@code i}th token count. */
  public double measuredLayer(int i) {
    double sum = 0;
    for (OpKind k : OpKind.values()) {
      if (k != OpKind.EMBEDDING) {
        sum += nanos[k.ordinal()][i];
      }
    }
    return sum;
  }

  /** Returns the per-layer times (every kind but the embedding) at the measured token counts. */
  public double[] layerNanos() {
    double[] out = new double[tokens.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = measuredLayer(i);
    }
    return out;
  }

  /** Returns this table with only the rows whose index {@code keep} accepts (a held-out split). */
  public ProfileTable rows(java.util.function.IntPredicate keep) {
    List<Integer> kept = new ArrayList<>();
    for (int i = 0; i < tokens.length; i++) {
      if (keep.test(i)) {
        kept.add(i);
      }
    }
    long[] t = new long[kept.size()];
    double[][] n = new double[nanos.length][kept.size()];
    for (int j = 0; j < kept.size(); j++) {
      t[j] = tokens[kept.get(j)];
      for (int k = 0; k < nanos.length; k++) {
        n[k][j] = nanos[k][kept.get(j)];
      }
    }
    return new ProfileTable(model, device, source, shape, t, n);
  }

  /**
   * Returns {@code ys} at {@code x} over the increasing {@code xs} (Note [Interpolating a
   * profile]): exact at a measured point, linear between two, the first value below, scaled by
   * {@code x} above.
   */
  static double interpolate(long[] xs, double[] ys, double x) {
    int last = xs.length - 1;
    if (x <= xs[0]) {
      return ys[0];
    }
    if (x >= xs[last]) {
      return ys[last] * (x / xs[last]);
    }
    int lo = 0;
    int hi = last;
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      if (xs[mid] <= x) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    double f = (x - xs[lo]) / (double) (xs[hi] - xs[lo]);
    return ys[lo] + f * (ys[hi] - ys[lo]);
  }

  /** Returns the derived table as text: comment lines (its source and shape), the header, one row per token count. */
  public String toText(List<String> comments) {
    StringBuilder b = new StringBuilder();
    for (String c : comments) {
      b.append("# ").append(c).append('\n');
    }
    b.append("# model: ").append(model).append('\n');
    b.append("# device: ").append(device).append('\n');
    b.append("# source: ").append(source).append('\n');
    b.append("# shape: ").append(shape.text()).append('\n');
    b.append(HEADER).append('\n');
    for (int i = 0; i < tokens.length; i++) {
      b.append(tokens[i]);
      for (double[] kind : nanos) {
        b.append(',').append(format(kind[i]));
      }
      b.append('\n');
    }
    return b.toString();
  }

  private static String format(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.1f", v);
  }

  /** Reads a derived table written by {@link #toText} ({@code name} names it in errors). */
  public static ProfileTable readText(InputStream in, String name) throws IOException {
    String model = null;
    String device = null;
    String source = null;
    Shape shape = null;
    List<long[]> rows = new ArrayList<>();
    List<double[]> times = new ArrayList<>();
    boolean header = false;
    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        if (line.startsWith("#")) {
          String c = line.substring(1).trim();
          if (c.startsWith("model: ")) {
            model = c.substring(7).trim();
          } else if (c.startsWith("device: ")) {
            device = c.substring(8).trim();
          } else if (c.startsWith("source: ")) {
            source = c.substring(8).trim();
          } else if (c.startsWith("shape: ")) {
            shape = parseShape(c.substring(7).trim(), name, n);
          }
          continue;
        }
        if (!header) {
          if (!line.trim().equals(HEADER)) {
            throw InputException.at(name, n, null, "expected the header " + HEADER);
          }
          header = true;
          continue;
        }
        String[] f = line.split(",", -1);
        if (f.length != 6) {
          throw InputException.at(name, n, null, "expected 6 fields, got " + f.length);
        }
        try {
          rows.add(new long[] {Long.parseLong(f[0].trim())});
          double[] t = new double[5];
          for (int k = 0; k < 5; k++) {
            t[k] = Double.parseDouble(f[k + 1].trim());
          }
          times.add(t);
        } catch (NumberFormatException e) {
          throw InputException.at(name, n, null, "not a number: " + e.getMessage());
        }
      }
    }
    if (model == null || device == null || source == null || shape == null || rows.isEmpty()) {
      throw new InputException(name + ": not a profile table (needs model, device, source and shape comments and rows)");
    }
    long[] tokens = new long[rows.size()];
    double[][] nanos = new double[5][rows.size()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = rows.get(i)[0];
      for (int k = 0; k < 5; k++) {
        nanos[k][i] = times.get(i)[k];
      }
    }
    try {
      return new ProfileTable(model, device, source, shape, tokens, nanos);
    } catch (IllegalArgumentException e) {
      throw new InputException(name + ": " + e.getMessage());
    }
  }

  /** Parses {@link Shape#text}. */
  static Shape parseShape(String text, String name, long line) {
    java.util.Map<String, String> m = new java.util.HashMap<>();
    for (String part : text.split(",")) {
      String[] kv = part.split("=", 2);
      if (kv.length == 2) {
        m.put(kv[0].trim(), kv[1].trim());
      }
    }
    try {
      return new Shape(Integer.parseInt(m.get("n_head")), Integer.parseInt(m.get("n_kv_head")), Integer.parseInt(m.get("n_embd")),
          Integer.parseInt(m.get("n_expanded_embd")), Boolean.parseBoolean(m.get("use_gated_mlp")));
    } catch (NumberFormatException | NullPointerException e) {
      throw InputException.at(name, line, "shape", "expected n_head, n_kv_head, n_embd, n_expanded_embd and use_gated_mlp, got " + text);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ProfileTable p && model.equals(p.model) && device.equals(p.device) && source.equals(p.source) && shape.equals(p.shape)
        && Arrays.equals(tokens, p.tokens) && Arrays.deepEquals(nanos, p.nanos);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(model, device, source, shape, Arrays.hashCode(tokens), Arrays.deepHashCode(nanos));
  }

  @Override
  public String toString() {
    return "ProfileTable[" + model + " on " + device + ", " + tokens.length + " token counts, " + source + "]";
  }
}

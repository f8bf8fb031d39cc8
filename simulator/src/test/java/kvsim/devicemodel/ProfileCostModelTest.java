package kvsim.devicemodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The measured cost model: reading a profile, interpolating it, fitting it, and choosing a predictor. */
class ProfileCostModelTest {
  private static final ModelPreset LLAMA = ModelPreset.parse("llama-2-7b");
  private static final DeviceSpec A100 = DeviceSpec.parse("a100-80");
  private static final String[] OPS = {"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
      "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"};

  @TempDir Path dir;

  /**
   * A small profile in Vidur's format, generated here: llama-2-7b's shape, each operation's median
   * {@code (op index + 1) × (10 + tokens) / 1000} ms, so a row's times are known exactly.
   */
  static String fixture(long[] tokens, int[] degrees) {
    return fixture(tokens, degrees, 1);
  }

  /** {@link #fixture(long[], int[])} with every time multiplied by {@code scale}. */
  static String fixture(long[] tokens, int[] degrees, double scale) {
    StringBuilder b = new StringBuilder();
    for (String op : OPS) {
      for (String stat : new String[] {"min", "max", "mean", "median", "std"}) {
        b.append("time_stats.").append(op).append('.').append(stat).append(',');
      }
    }
    b.append("n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n");
    for (int degree : degrees) {
      for (long t : tokens) {
        for (int o = 0; o < OPS.length; o++) {
          double ms = (o + 1) * (10.0 + t) / 1000 * scale;
          b.append(ms).append(',').append(ms).append(',').append(ms).append(',').append(ms).append(",0,");
        }
        b.append("32,32,4096,11008,32768,True,").append(t).append(',').append(degree).append('\n');
      }
    }
    return b.toString();
  }

  private Path write(String text) throws IOException {
    return Files.writeString(dir.resolve("mlp.csv"), text);
  }

  private static double expectedNanos(int op, long tokens) {
    return (op + 1) * (10.0 + tokens) / 1000 * 1e6;
  }

  @Test
  void aGeneratedProfileIsReadAsItsTimesSummedPerKind() throws IOException {
    Path f = write(fixture(new long[] {1, 8, 64, 512}, new int[] {1, 2}));
    ProfileReader.Result r = ProfileReader.read(dir, LLAMA, A100, "fixture");
    ProfileTable t = r.table();
    assertEquals(List.of(1L, 8L, 64L, 512L), java.util.Arrays.stream(t.tokens()).boxed().toList());
    assertEquals(4, r.otherDegreeRows(), "the rows at degree 2 are counted, not used");
    // linear = attn_pre_proj (2), attn_post_proj (4), mlp_up_proj (6), mlp_down_proj (8).
    assertEquals(expectedNanos(2, 64) + expectedNanos(4, 64) + expectedNanos(6, 64) + expectedNanos(8, 64), t.measured(ProfileTable.OpKind.LINEAR, 2), 1e-6);
    assertEquals(expectedNanos(0, 8), t.measured(ProfileTable.OpKind.EMBEDDING, 1), 1e-6);
    assertEquals(expectedNanos(3, 1) + expectedNanos(9, 1), t.measured(ProfileTable.OpKind.ELEMENTWISE, 0), 1e-6);
    assertEquals(new ProfileTable.Shape(32, 32, 4096, 11008, true), t.shape());
    assertEquals(t, ProfileReader.read(f, LLAMA, A100, "fixture").table(), "a folder reads its mlp.csv");
  }

  @Test
  void aTokenCountMeasuredTwiceIsTheMeanOfItsRows() throws IOException {
    String text = fixture(new long[] {1, 8}, new int[] {1});
    String[] lines = text.split("\n");
    // The row at 8 tokens again, its times doubled.
    String again = lines[2].replace("0.018", "0.036");
    write(text + again + "\n");
    ProfileReader.Result r = ProfileReader.read(dir, LLAMA, A100, "fixture");
    assertEquals(1, r.repeatedRows());
    assertEquals(1.5 * expectedNanos(0, 8), r.table().measured(ProfileTable.OpKind.EMBEDDING, 1), 1e-6);
  }

  @Test
  void badProfilesAreRefusedWithFileLineAndField() throws IOException {
    String good = fixture(new long[] {1, 8}, new int[] {1});
    String[] lines = good.split("\n");
    String name = dir.resolve("mlp.csv").toString();
    // A missing column.
    write(good.replace("time_stats.mlp_act.median", "time_stats.mlp_act.p50"));
    assertEquals(name + ":1: time_stats.mlp_act.median: missing column (a Vidur mlp.csv has num_tokens, num_tensor_parallel_workers, the shape and time_stats.<op>.median)",
        message(dir));
    // A field that is not a number, a negative time, a bad token count, a short row.
    write(lines[0] + "\n" + lines[1] + "\n" + lines[2].replaceFirst("^[^,]*,[^,]*,[^,]*,[^,]*", "x,x,x,abc") + "\n");
    assertEquals(name + ":3: time_stats.emb.median: not a number: 'abc'", message(dir));
    write(lines[0] + "\n" + lines[1].replaceFirst("^([^,]*,[^,]*,[^,]*,)[^,]*", "$1-1") + "\n");
    assertEquals(name + ":2: time_stats.emb.median: a time must be a finite number of milliseconds >= 0, got -1", message(dir));
    write(lines[0] + "\n" + lines[1].replaceFirst(",1,1$", ",0,1") + "\n");
    assertEquals(name + ":2: num_tokens: must be a positive whole number, got 0", message(dir));
    write(lines[0] + "\n" + lines[1].substring(0, lines[1].lastIndexOf(',')) + "\n");
    assertTrue(message(dir).startsWith(name + ":2: expected 58 fields as in the header, got 57"), message(dir));
    // A profile of another model.
    write(good);
    InputException other = assertThrows(InputException.class, () -> ProfileReader.read(dir, ModelPreset.parse("llama-3-8b"), A100, "x"));
    assertEquals(name + ":2: n_expanded_embd: 11008 is not llama-3-8b's 14336: a profile of another model (give its --model)", other.getMessage());
    // No rows at degree 1, and no file.
    write(fixture(new long[] {1, 8}, new int[] {2}));
    assertEquals(name + ": no rows at num_tensor_parallel_workers 1 (kvsim times one GPU)", message(dir));
    assertThrows(InputException.class, () -> ProfileReader.read(dir.resolve("none.csv"), LLAMA, A100, "x"));
  }

  private static String message(Path p) {
    return assertThrows(InputException.class, () -> ProfileReader.read(p, LLAMA, A100, "x")).getMessage();
  }

  @Test
  void interpolationIsExactAtMeasuredPointsAndMonotoneBetween() {
    long[] xs = {1, 8, 16, 64, 512};
    double[] ys = {5000, 4000, 9000, 9000, 70000};
    for (int i = 0; i < xs.length; i++) {
      assertEquals(ys[i], ProfileTable.interpolate(xs, ys, xs[i]), 0.0);
    }
    Random rnd = new Random(7);
    for (int seg = 0; seg + 1 < xs.length; seg++) {
      double lo = Math.min(ys[seg], ys[seg + 1]);
      double hi = Math.max(ys[seg], ys[seg + 1]);
      List<Double> at = new ArrayList<>();
      for (int k = 0; k < 50; k++) {
        at.add(xs[seg] + rnd.nextDouble() * (xs[seg + 1] - xs[seg]));
      }
      at.sort(Double::compare);
      double previous = ys[seg];
      for (double x : at) {
        double y = ProfileTable.interpolate(xs, ys, x);
        assertTrue(y >= lo && y <= hi, "within its neighbours at " + x);
        // Moving along the segment moves the value towards the next point, never back.
        assertTrue(ys[seg + 1] >= ys[seg] ? y >= previous : y <= previous, "monotone at " + x);
        previous = y;
      }
    }
    assertEquals(5000, ProfileTable.interpolate(xs, ys, 0.5), 0.0, "below the smallest count: its time");
    assertEquals(140000, ProfileTable.interpolate(xs, ys, 1024), 1e-9, "above the largest: scaled by the tokens");
    // A whole pass, found with one search, is the kinds interpolated one by one.
    ProfileTable t = CostModels.table(LLAMA, A100);
    for (double n : new double[] {0.5, 1, 3, 100, 1000.5, 4096, 9000}) {
      double sum = 0;
      for (ProfileTable.OpKind k : ProfileTable.OpKind.values()) {
        sum += (k == ProfileTable.OpKind.EMBEDDING ? 1 : 32) * t.nanos(k, n);
      }
      assertEquals(sum, t.passNanos(n, 32), 1e-6 * sum, "at " + n + " tokens");
    }
  }

  @Test
  void heldOutErrorOnTheRealProfilesIsWithinTenPercent() {
    Path profiles = kvsim.testing.SharedData.require("gpu-profiles");
    String[][] pairs = {{"a100-80", "llama-2-7b", "a100/meta-llama/Llama-2-7b-hf"}, {"a100-80", "llama-3-8b", "a100/meta-llama/Meta-Llama-3-8B"},
        {"h100-80", "llama-2-7b", "h100/meta-llama/Llama-2-7b-hf"}, {"a40", "llama-2-7b", "a40/meta-llama/Llama-2-7b-hf"}};
    for (String[] p : pairs) {
      DeviceSpec d = DeviceSpec.parse(p[0]);
      ModelPreset m = ModelPreset.parse(p[1]);
      ProfileTable t = ProfileReader.read(profiles.resolve(p[2]), m, d, "x").table();
      List<ProfileFit.Errors> errors = ProfileFit.heldOut(t, m, d);
      for (ProfileFit.Errors e : errors) {
        if (e.what().endsWith("iteration") && e.predictor().equals("profile")) {
          assertTrue(e.medianAbs() < 0.10, p[0] + " " + p[1] + " " + e.what() + ": median " + e.medianAbs());
          assertTrue(e.worstAbs() < 0.25, p[0] + " " + p[1] + " " + e.what() + ": worst " + e.worstAbs());
        }
      }
      assertEquals(4, errors.stream().filter(e -> e.what().endsWith("iteration")).count());
      // The committed table is this reduction of the profile.
      ProfileTable builtIn = CostModels.table(m, d);
      assertEquals(t.rows(i -> true).tokens().length, builtIn.tokens().length);
      for (ProfileTable.OpKind k : ProfileTable.OpKind.values()) {
        for (int i = 0; i < t.tokens().length; i++) {
          assertEquals(t.measured(k, i), builtIn.measured(k, i), 0.051, p[0] + " " + p[1] + " " + k + " row " + i);
        }
      }
    }
  }

  @Test
  void theFittedEfficienciesAreSharesOfPeakOnTheBuiltInTables() {
    ProfileFit.Efficiencies e = ProfileFit.efficiencies(CostModels.table(LLAMA, A100), A100);
    // Note [Efficiencies fitted on a profile]: a whole layer on A100 reaches about 64 % of peak FLOP/s and 70 % of peak bandwidth.
    assertEquals(0.64, e.compute(), 0.01);
    assertEquals(0.70, e.memory(), 0.01);
  }

  @Test
  void theProfilePredictorAddsWhatTheProfileLacks() {
    ForwardTimeModel f = CostModels.choose(null, LLAMA, A100, CostCalibration.NONE, null);
    ProfileForwardTime p = assertInstanceOf(ProfileForwardTime.class, f);
    ProfileTable t = p.table();
    // One decode token of one sequence with no KV: layers × the measured layer + embedding + the LM head + the per-sequence term.
    double layer = t.measuredLayer(0);
    double head = Math.max(2.0 * p.headWeights() / (A100.peakFlops() * p.efficiencies().compute()),
        2.0 * p.headWeights() / (A100.hbmBytesPerSecond() * p.efficiencies().memory())) * 1e9;
    double expected = 32 * layer + t.measured(ProfileTable.OpKind.EMBEDDING, 0) + head + 32 * EngineTerms.DEFAULT_PER_SEQUENCE_LAYER_NANOS;
    assertEquals(Math.round(expected), f.forwardNanos(0, 1, 0, 1));
    // LM head weights of Llama-2-7B: 32000 × 4096.
    assertEquals(32000 * 4096, p.headWeights(), 0.01 * 32000 * 4096);
    // Each sequence more costs its per-layer term; each KV byte its read.
    long oneSeq = f.forwardNanos(0, 64, 0, 64);
    assertTrue(f.forwardNanos(0, 64, 0, 64) > f.forwardNanos(0, 64, 0, 32));
    assertEquals(1e9 / (A100.hbmBytesPerSecond() * p.efficiencies().memory()) * 1e9, f.forwardNanos(0, 64, 1_000_000_000L, 64) - oneSeq, 2);
    assertEquals(EngineTerms.DEFAULT_ENGINE_OVERHEAD_NANOS, f.engineOverheadNanos());
  }

  @Test
  void thePredictorIsChosenByWhatIsMeasured() {
    assertEquals("profile", CostModels.choose(null, LLAMA, DeviceSpec.parse("h100-80"), CostCalibration.NONE, null).echo().get("forward"));
    ForwardTimeModel opt = CostModels.choose("auto", ModelPreset.parse("opt-13b"), DeviceSpec.parse("a100-40"), CostCalibration.NONE, null);
    MeasuredRoofline mr = assertInstanceOf(MeasuredRoofline.class, opt);
    assertEquals(CostModels.gpuEfficiencies(A100), new ProfileFit.Efficiencies(mr.roofline().computeEfficiency(), mr.roofline().memoryEfficiency()));
    assertEquals(DeviceSpec.parse("a100-40"), mr.roofline().device(), "the A100's shares, the A100-40GB's peaks");
    assertEquals(Roofline.of(LLAMA, DeviceSpec.parse("h200-141")), CostModels.choose(null, LLAMA, DeviceSpec.parse("h200-141"), CostCalibration.NONE, null));
    assertEquals(Roofline.of(LLAMA, DeviceSpec.parse("80GiB")), CostModels.choose(null, LLAMA, DeviceSpec.parse("80GiB"), CostCalibration.NONE, null),
        "a bare size is not a profiled GPU");
    assertEquals(Roofline.of(LLAMA, A100), CostModels.choose("roofline", LLAMA, A100, CostCalibration.NONE, null));
    assertEquals(0, Roofline.of(LLAMA, A100).engineOverheadNanos());
    assertEquals("cost-model profile: no built-in profile table of opt-13b on a100-40 (tables: llama-2-7b on a100-80, llama-3-8b on a100-80,"
        + " llama-2-7b on h100-80, llama-2-7b on a40; see kvsim list)",
        assertThrows(InputException.class, () -> CostModels.choose("profile", ModelPreset.parse("opt-13b"), DeviceSpec.parse("a100-40"), CostCalibration.NONE, null))
            .getMessage());
    assertThrows(InputException.class, () -> CostModels.choose("measured-roofline", LLAMA, DeviceSpec.parse("h200-141"), CostCalibration.NONE, null));
    CostCalibration forward = new CostCalibration(0.4, null, null, null);
    assertEquals(new Roofline(LLAMA, A100, 0.4, 0.8), CostModels.choose(null, LLAMA, A100, forward, "cal.json"), "a forward section wins");
    assertThrows(InputException.class, () -> CostModels.choose("profile", LLAMA, A100, forward, "cal.json"), "and is not given beside a choice");
    assertEquals(Roofline.of(LLAMA, A100).forwardNanos(100, 0, 0, 1) + 32 * 10 * 3,
        new CostCalibration(null, null, null, null, 10.0, 5L, null).forwardTime(LLAMA, A100, "c").forwardNanos(100, 0, 0, 3), 1);
  }
}

package kvsim.bench;

import java.util.concurrent.TimeUnit;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.CostCalibration;
import kvsim.devicemodel.CostModels;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.ForwardTimeModel;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One forward-time prediction, the call the serving engine makes once per iteration: Llama-2-7B on
 * an H100 by the {@code costModel} predictor, over a spread of batch shapes (token counts between
 * the profile's measured points, so that the profile predictor interpolates). Nanoseconds per call.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ForwardTimeBenchmark {
  /** The cost-model setting. */
  @Param({"roofline", "measured-roofline", "profile"})
  public String costModel;

  private ForwardTimeModel model;
  private int next;

  @Setup
  public void choose() {
    model = CostModels.choose(costModel, ModelPreset.parse("llama-2-7b"), DeviceSpec.parse("h100-80"), CostCalibration.NONE, null);
  }

  /** One prediction; the batch shape walks through 1 to 2047 tokens. */
  @Benchmark
  public long predict() {
    int tokens = 1 + (next = (next + 37) & 2047);
    int decode = Math.min(tokens, 200);
    return model.forwardNanos(tokens - decode, decode, 300_000_000L + tokens, decode + 1) + model.engineOverheadNanos();
  }
}

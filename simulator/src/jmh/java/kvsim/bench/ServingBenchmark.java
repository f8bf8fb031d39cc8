package kvsim.bench;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import kvsim.run.ServingRunner;
import kvsim.run.ServingSpec;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The serving engine end to end: one simulated hour of the Azure 2023 conversation trace's mean
 * rate (5.53 requests/s, 20,000 requests with its fitted lengths) through {@code vllm} on
 * Llama-2-7B and an H100 with the default KV memory, timed by the {@code costModel} predictor
 * ({@code auto}: the built-in profile of that pair; {@code -p costModel=roofline} for the plain
 * roofline). The score is the wall time of the whole run; the {@code iterations} counter gives
 * engine iterations per run.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(1)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
public class ServingBenchmark {
  private ServingSpec spec;

  /** The cost-model setting. */
  @Param({"auto"})
  public String costModel;

  /** Counts engine iterations, reported beside the time. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Iterations {
    public long iterations;

    @Setup(Level.Iteration)
    public void reset() {
      iterations = 0;
    }
  }

  @Setup(Level.Trial)
  public void resolve() {
    spec = ServingSpec.resolve(ServingSpec.Request.of("requests:preset=azure-conv,count=20000,seed=1", List.of("vllm"),
        kvsim.config.Settings.none().and(kvsim.config.ServingSettings.MODEL, "llama-2-7b").and(kvsim.config.ServingSettings.DEVICE, "h100-80")
        .and(kvsim.config.ServingSettings.COST_MODEL, costModel)));
  }

  /** Runs the hour on one thread. */
  @Benchmark
  public long oneHourOfAzureConversation(Iterations counter) throws IOException {
    List<ServingRunner.SystemResult> r = new ServingRunner(1).run(spec, null);
    counter.iterations += r.get(0).metrics().iterations();
    return r.get(0).metrics().outputTokens();
  }
}

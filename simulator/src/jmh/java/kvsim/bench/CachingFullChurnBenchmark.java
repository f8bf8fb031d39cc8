package kvsim.bench;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorContext;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.registry.AllocatorRegistry;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * {@code pytorch-caching} churning on a full device, with the gauges the replay engine reads after
 * every event: the model is first offered {@value #LIVE} requests of 1 to 256 whole MiB (about 125
 * GiB, more than the 80 GiB device), then each operation frees a random live allocation and makes
 * a new request in its place. After each of the two calls the benchmark reads {@code freeBytes()}
 * and {@code largestFreeBytes()}, as {@link kvsim.engine.ReplayEngine} does; the score is allocator
 * operations per second, two per invocation.
 *
 * <ul>
 *   <li>The device stays full, so most requests miss the cache and run the retry ladder to its end
 *       ({@code empty_cache}, then OOM), and every refusal classifies itself with {@code
 *       largestFreeBytes()} once more. This is the regime of {@code kvsim generate churn} traces
 *       replayed on the default device.
 *   <li>{@code conf} is the {@code torch-alloc-conf}: classic segments, or expandable segments.
 *   <li>Sizes and victims come from a seeded generator in the setup, {@value #SCRIPT} of each,
 *       replayed cyclically; the {@code refusals} counter reports refused requests.
 * </ul>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class CachingFullChurnBenchmark {
  static final int LIVE = 1_000;
  static final int SCRIPT = 1 << 20;
  static final int MAX_SIZE_MIB = 256;

  @Param({"", "expandable_segments:True"})
  public String conf;

  private Allocator model;
  private AllocRequest[] requests;
  private short[] requestOfOp;
  private int[] victimOfOp;
  private long[] handles;
  private boolean[] live;
  private int cursor;

  /** Counts refused requests, reported beside the score. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Refusals {
    public long refusals;

    @Setup(Level.Iteration)
    public void reset() {
      refusals = 0;
    }
  }

  @Setup(Level.Trial)
  public void setUp() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    model =
        AllocatorRegistry.create(
            new AllocatorContext(
                "pytorch-caching",
                MemoryPlan.whole(device).testedRegion(),
                device,
                ModelPreset.defaultModel(),
                Map.of("torch-alloc-conf", conf)));
    requests = new AllocRequest[MAX_SIZE_MIB];
    for (int k = 0; k < MAX_SIZE_MIB; k++) {
      requests[k] = AllocRequest.of((k + 1) * Bytes.MiB, Tag.KV);
    }
    UniformRandomProvider random = RandomSource.XO_RO_SHI_RO_128_PP.create(20_240_601L);
    requestOfOp = new short[SCRIPT];
    victimOfOp = new int[SCRIPT];
    for (int i = 0; i < SCRIPT; i++) {
      requestOfOp[i] = (short) random.nextInt(MAX_SIZE_MIB);
      victimOfOp[i] = random.nextInt(LIVE);
    }
    handles = new long[LIVE];
    live = new boolean[LIVE];
    for (int v = 0; v < LIVE; v++) {
      place(v, model.allocate(requests[random.nextInt(MAX_SIZE_MIB)]));
    }
  }

  private void place(int victim, AllocOutcome outcome) {
    if (outcome instanceof AllocOutcome.Allocated a) {
      handles[victim] = a.handle();
      live[victim] = true;
    } else {
      live[victim] = false;
    }
  }

  /** Frees one random live allocation and makes one new request, reading the gauges after each. */
  @Benchmark
  @OperationsPerInvocation(2)
  public void churn(Blackhole blackhole, Refusals refusals) {
    int i = cursor;
    cursor = (i + 1) & (SCRIPT - 1);
    int victim = victimOfOp[i];
    if (live[victim]) {
      model.free(handles[victim]);
    }
    blackhole.consume(model.freeBytes());
    blackhole.consume(model.largestFreeBytes());
    AllocOutcome outcome = model.allocate(requests[requestOfOp[i]]);
    place(victim, outcome);
    if (!outcome.succeeded()) {
      refusals.refusals++;
    }
    blackhole.consume(model.freeBytes());
    blackhole.consume(model.largestFreeBytes());
    blackhole.consume(outcome);
  }
}

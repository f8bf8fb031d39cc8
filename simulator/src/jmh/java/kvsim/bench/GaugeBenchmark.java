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
 * The cost of reading each gauge of a model, in nanoseconds per read, in a state a long churn leaves
 * behind: the model on the default 80 GiB device is filled with {@value #LIVE} allocations of 1 to
 * 8 MiB (whole MiB, uniform), then {@value #CHURN} times a random live allocation is freed and a new
 * one requested in its place. The reads change nothing, so every read sees that one state; {@code
 * all} reads the six gauges the replay engine records after every event.
 *
 * <p>{@code allocator} is a registry name, or {@code pytorch-caching-expandable} for {@code
 * pytorch-caching} with {@code expandable_segments:True}, whose largest-free gauge visits the
 * unmapped ranges (Note [Unmapped reach] in {@code CachingAllocator}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class GaugeBenchmark {
  static final int LIVE = 10_000;
  static final int CHURN = 200_000;

  @Param({"first-fit", "slab", "multi-slab", "paged", "pytorch-caching", "pytorch-caching-expandable"})
  public String allocator;

  private Allocator model;

  @Setup(Level.Trial)
  public void setUp() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    boolean expandable = allocator.equals("pytorch-caching-expandable");
    model =
        AllocatorRegistry.create(
            new AllocatorContext(
                expandable ? "pytorch-caching" : allocator,
                MemoryPlan.whole(device).testedRegion(),
                device,
                ModelPreset.defaultModel(),
                expandable ? Map.of("torch-alloc-conf", "expandable_segments:True") : Map.of()));
    UniformRandomProvider random = RandomSource.XO_RO_SHI_RO_128_PP.create(20_240_601L);
    long[] handles = new long[LIVE];
    boolean[] live = new boolean[LIVE];
    for (int i = -LIVE; i < CHURN; i++) {
      int victim = i < 0 ? i + LIVE : random.nextInt(LIVE);
      if (live[victim]) {
        model.free(handles[victim]);
      }
      AllocOutcome outcome = model.allocate(AllocRequest.of((1 + random.nextInt(8)) * Bytes.MiB, Tag.KV));
      live[victim] = outcome instanceof AllocOutcome.Allocated;
      if (outcome instanceof AllocOutcome.Allocated a) {
        handles[victim] = a.handle();
      }
    }
  }

  /** Reads the reserved bytes. */
  @Benchmark
  public long reserved() {
    return model.stats().reservedBytes();
  }

  /** Reads the allocated bytes. */
  @Benchmark
  public long allocated() {
    return model.stats().allocatedBytes();
  }

  /** Reads the requested bytes. */
  @Benchmark
  public long requested() {
    return model.stats().requestedBytes();
  }

  /** Reads the live allocation count. */
  @Benchmark
  public long live() {
    return model.stats().liveAllocations();
  }

  /** Reads the modelled time. */
  @Benchmark
  public long modelled() {
    return model.stats().modelledNanos();
  }

  /** Reads the free bytes. */
  @Benchmark
  public long free() {
    return model.freeBytes();
  }

  /** Reads the largest request that would succeed. */
  @Benchmark
  public long largestFree() {
    return model.largestFreeBytes();
  }

  /** Reads the six gauges the replay engine records after every event, summed. */
  @Benchmark
  public long all() {
    return model.stats().reservedBytes()
        + model.stats().allocatedBytes()
        + model.stats().requestedBytes()
        + model.freeBytes()
        + model.largestFreeBytes()
        + model.stats().liveAllocations();
  }
}

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
 * Steady-state churn on the default 80 GiB device: the model is first filled with {@value #LIVE}
 * live allocations, then each operation frees a random live allocation and makes a new request in
 * its place, so about {@value #LIVE} allocations stay live throughout. Each invocation is one free
 * plus one request, two allocator operations, as the churn workload counts operations (each of its
 * operations is one alloc or one free); the score is allocator operations per second. (An
 * invocation whose victim was refused earlier makes no free; with the sizes below only {@code
 * multi-slab} refuses, and its score is then slightly flattered.)
 *
 * <ul>
 *   <li>Sizes ({@code sizes}): {@code 1-8MiB} draws whole MiB uniformly from 1 to 8 (10,000 live
 *       hold about 45 GiB), {@code 256KiB-2MiB} draws multiples of 256 KiB from 256 KiB to 2 MiB
 *       (about 11 GiB), which the default 256 KiB and 2 MiB classes of {@code multi-slab} serve
 *       without refusals.
 *   <li>Requests are KV requests (splittable), so {@code slab} serves requests above its block
 *       size with several blocks.
 *   <li>Sizes and victims come from a seeded generator in the setup, {@value #SCRIPT} of each,
 *       replayed cyclically, so the generator is not measured. Every outcome goes to a Blackhole.
 *   <li>The {@code refusals} counter is the number of refused requests in the measured iterations
 *       (a refused request still counts as an operation): with {@code 1-8MiB}, {@code multi-slab}
 *       refuses most requests above 2 MiB, because its 32 MiB and 256 MiB classes hold only 400
 *       blocks between them.
 * </ul>
 *
 * <p>{@code allocator} defaults to the arena models; {@link ChurnAllRegistered} runs every model in
 * the registry.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ChurnBenchmark {
  static final int LIVE = 10_000;
  static final int SCRIPT = 1 << 20;

  @Param({"first-fit", "best-fit", "buddy", "slab", "multi-slab", "vattention", "stitching"})
  public String allocator;

  @Param({"1-8MiB", "256KiB-2MiB"})
  public String sizes;

  private Allocator model;
  private AllocRequest[] requests;
  private byte[] requestOfOp;
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
                allocator, MemoryPlan.whole(device).testedRegion(), device, ModelPreset.defaultModel(), Map.of()));
    long unit =
        switch (sizes) {
          case "1-8MiB" -> Bytes.MiB;
          case "256KiB-2MiB" -> 256 * Bytes.KiB;
          default -> throw new IllegalArgumentException("unknown sizes " + sizes);
        };
    requests = new AllocRequest[8];
    for (int k = 0; k < 8; k++) {
      requests[k] = AllocRequest.of((k + 1) * unit, Tag.KV);
    }
    UniformRandomProvider random = RandomSource.XO_RO_SHI_RO_128_PP.create(20_240_601L);
    requestOfOp = new byte[SCRIPT];
    victimOfOp = new int[SCRIPT];
    for (int i = 0; i < SCRIPT; i++) {
      requestOfOp[i] = (byte) random.nextInt(8);
      victimOfOp[i] = random.nextInt(LIVE);
    }
    handles = new long[LIVE];
    live = new boolean[LIVE];
    for (int v = 0; v < LIVE; v++) {
      place(v, model.allocate(requests[random.nextInt(8)]));
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

  /** Frees one random live allocation and makes one new request. */
  @Benchmark
  @OperationsPerInvocation(2)
  public void churn(Blackhole blackhole, Refusals refusals) {
    int i = cursor;
    cursor = (i + 1) & (SCRIPT - 1);
    int victim = victimOfOp[i];
    if (live[victim]) {
      model.free(handles[victim]);
    }
    AllocOutcome outcome = model.allocate(requests[requestOfOp[i]]);
    place(victim, outcome);
    if (!outcome.succeeded()) {
      refusals.refusals++;
    }
    blackhole.consume(outcome);
  }
}

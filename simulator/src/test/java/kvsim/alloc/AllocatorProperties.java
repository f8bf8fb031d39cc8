package kvsim.alloc;

import java.util.List;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CheckedAllocator;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.Tuple.Tuple2;
import net.jqwik.api.constraints.Size;

/**
 * Random operation sequences, generated and shrunk by jqwik, applied to every registered model over
 * a small region (256 MiB at an unaligned base) so that refusals and fragmentation are frequent.
 * {@link CheckedAllocator} checks the ledger, the gauges and the model's invariants after each
 * operation; at the end every allocation is freed and the bytes must balance.
 */
class AllocatorProperties {
  static final Region REGION = new Region("kv", 3 * Bytes.MiB + 4096 + 17, 256 * Bytes.MiB);

  /**
   * One step: a request ({@code allocate}) of {@code sizeBytes}, or a free of the live allocation
   * at {@code pick} modulo the live count.
   */
  record Op(boolean allocate, long sizeBytes, boolean splittable, int pick) {}

  @Provide
  Arbitrary<String> models() {
    return Arbitraries.of(AllocatorRegistry.names());
  }

  @Provide
  Arbitrary<Op> op() {
    Arbitrary<Long> sizes =
        Arbitraries.frequencyOf(
            weighted(5, Arbitraries.longs().between(1, 64 * Bytes.KiB)),
            weighted(4, Arbitraries.longs().between(64 * Bytes.KiB, 8 * Bytes.MiB)),
            weighted(2, Arbitraries.longs().between(8 * Bytes.MiB, 96 * Bytes.MiB)),
            weighted(1, Arbitraries.longs().between(96 * Bytes.MiB, 512 * Bytes.MiB)));
    return Combinators.combine(
            Arbitraries.integers().between(0, 99), sizes, Arbitraries.of(true, false), Arbitraries.integers().between(0, 1 << 20))
        .as((dice, size, splittable, pick) -> new Op(dice < 60, size, splittable, pick));
  }

  private static Tuple2<Integer, Arbitrary<? extends Long>> weighted(int weight, Arbitrary<Long> sizes) {
    return Tuple.of(weight, sizes);
  }

  @Property(tries = 60)
  void everyModelStaysConsistentThroughAnyOperationSequence(
      @ForAll("models") String name, @ForAll @Size(max = 250) List<@From("op") Op> ops) {
    Allocator allocator =
        AllocatorRegistry.create(
            new AllocatorContext(name, REGION, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of()));
    CheckedAllocator model = new CheckedAllocator(allocator, REGION);
    long freeAtStart = allocator.freeBytes();
    for (Op op : ops) {
      if (op.allocate() || model.liveHandles().isEmpty()) {
        model.allocate(new AllocRequest(op.sizeBytes(), Tag.KV, op.splittable(), 0));
      } else {
        model.freeAt(op.pick() % model.liveHandles().size());
      }
    }
    model.freeAll();
    if (allocator.stats().allocatedBytes() != 0 || allocator.stats().requestedBytes() != 0 || allocator.freeBytes() != freeAtStart) {
      throw new AssertionError(name + ": bytes do not balance after every free");
    }
  }
}

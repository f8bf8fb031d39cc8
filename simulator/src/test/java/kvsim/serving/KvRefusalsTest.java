package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.trace.Request;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link KvRefusals} (Note [Serving OOM]): a manager reports a refusal to a running sequence while
 * its state is as at the refusal; the layout then agrees with the manager's own counters, and the
 * refusal was real (more was asked than was free, or the allocator said why not).
 */
class KvRefusalsTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");

  /** Long requests arriving together: the running ones outgrow 3 GiB of KV and the scheduler preempts. */
  private static List<Request> crowd() {
    List<Request> out = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      out.add(new Request(0, i, i * 1_000_000L, 200 + 7 * i, 600, null, 1, 1));
    }
    return out;
  }

  @ParameterizedTest(name = "{0}: the first refusal to a running sequence comes with the state at that moment")
  @ValueSource(strings = {"vllm", "vllm-v0", "vattention"})
  void aRefusalComesWithTheStateAtThatMoment(String system) throws Exception {
    SchedulerConfig config = SchedulerConfig.defaults(2048);
    ServingSystems.Built built = ServingSystems.build(system, ServingSystems.Build.of(MODEL, DEVICE, 3 * Bytes.GiB, config).build());
    KvRefusals r = built.kv().capability(KvRefusals.class).orElseThrow();
    long[] first = {-1, -1, -1, -1};
    int[] refusals = {0};
    List<List<SegmentLayout>> layouts = new ArrayList<>();
    r.listenRefusals((sizeBytes, reason) -> {
      refusals[0]++;
      if (layouts.isEmpty()) {
        layouts.add(r.layout());
        first[0] = sizeBytes;
        first[1] = reason == OomReason.FRAGMENTATION ? 1 : 0;
        if (built.kv() instanceof PagedKvManager p) {
          first[2] = (long) p.blockManager().numFreeBlocks() * p.blockManager().config().blockBytes();
          first[3] = (long) (p.blockManager().config().numBlocks() - p.blockManager().numFreeBlocks()) * p.blockManager().config().blockBytes();
        } else if (built.kv() instanceof VAttentionKvManager v) {
          first[2] = v.allocator().freeBytes();
          first[3] = v.allocator().stats().allocatedBytes();
        }
      }
    });
    SchedulerConfig used = system.equals("vllm-v0") ? new SchedulerConfig(2048, config.maxNumSeqs(), 2048, false, 0) : config;
    ServingMetrics m = new ServingEngine(built.scheduler(), built.kv(), Roofline.of(MODEL, DEVICE), used, MODEL.kvBytesPerToken(), true, null, 1)
        .run(ServingEngineTest.source(crowd()));
    // Every refusal heard is one the scheduler answered by preempting (these systems never stall).
    assertTrue(((Number) m.toMap().get("preemptions")).longValue() > 0, system + " preempted");
    assertTrue(refusals[0] > 0, system + " was refused memory");
    List<SegmentLayout> layout = layouts.get(0);
    long free = KvRefusals.freeBytes(layout);
    long allocated = layout.stream().flatMap(s -> s.blocks().stream()).filter(b -> b.state() == SegmentLayout.State.ACTIVE_ALLOCATED)
        .mapToLong(SegmentLayout.Block::sizeBytes).sum();
    assertEquals(first[2], free, "free bytes in the layout are the manager's own");
    assertEquals(first[3], allocated, "allocated bytes in the layout are the manager's own");
    assertTrue(first[0] > free, system + ": " + first[0] + " B refused with " + free + " B free");
    for (SegmentLayout s : layout) {
      long sum = s.blocks().stream().mapToLong(SegmentLayout.Block::sizeBytes).sum();
      assertEquals(s.sizeBytes(), sum, "a segment's blocks add up to it");
    }
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.trace.Request;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** vAttention's KV manager: pages mapped per step as a sequence grows, the unused tail as internal waste. */
class VAttentionKvManagerTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");
  private static final long STEP_BYTES = 2L * 40 * 2 * Bytes.MiB; // one 2 MiB page in each of 40 layers' K and V

  private static Sequence seq(VAttentionKvManager kv, long id, int prompt, int output) {
    Sequence s = new Sequence(Request.of(id, 0, prompt, output), output);
    kv.add(s);
    return s;
  }

  @Test
  void aTwoMebibytePageOfOneLayersKeysHolds204TokensOfOpt13b() {
    VAttentionKvManager kv = VAttentionKvManager.create(Map.of(), 4 * Bytes.GiB, DEVICE, MODEL);
    assertEquals(2 * Bytes.MiB / (40 * 128 * 2), kv.stepTokens());
    assertEquals(204, kv.stepTokens());
  }

  @Test
  void aSequenceMapsAStepOfPagesEachTimeItOutgrowsItsMappingAndTheTailIsInternalWaste() {
    VAttentionKvManager kv = VAttentionKvManager.create(Map.of(), 4 * Bytes.GiB, DEVICE, MODEL);
    Sequence s = seq(kv, 1, 300, 10); // 300 tokens: two steps of 204
    assertTrue(kv.allocate(s, 300));
    assertEquals(2, kv.allocator().stats().liveAllocations());
    assertEquals(2 * STEP_BYTES, kv.allocator().stats().allocatedBytes());
    long[] b = new long[5];
    kv.breakdown(b);
    assertEquals(300, b[0]);
    assertEquals(10, b[1], "reserved: the final 310 tokens fit the 408 mapped");
    assertEquals(2 * STEP_BYTES / MODEL.kvBytesPerToken() - 310, b[2], "the rest of the mapped pages is internal waste");
    assertEquals(4 * Bytes.GiB / MODEL.kvBytesPerToken(), b[0] + b[1] + b[2] + b[3] + b[4]);
    assertEquals(kv.allocator().freeBytes() / MODEL.kvBytesPerToken(), b[3], "free: the pages not mapped");
    kv.finish(s);
    assertEquals(0, kv.allocator().stats().liveAllocations(), "finish unmaps every step");
    kv.checkInvariants();
  }

  @Test
  void aGrowthThatCannotBeMappedChangesNothing() {
    VAttentionKvManager kv = VAttentionKvManager.create(Map.of(), 1 * Bytes.GiB, DEVICE, MODEL); // 512 pages: 6 steps of 80
    Sequence a = seq(kv, 1, 1020, 10); // five steps
    assertTrue(kv.allocate(a, 1020));
    Sequence b = seq(kv, 2, 300, 10);
    assertFalse(kv.allocate(b, 300), "two steps, one free");
    assertEquals(5, kv.allocator().stats().liveAllocations(), "the step it got is unmapped again");
    assertEquals(0, b.numComputedTokens());
    kv.checkInvariants();
  }

  @Property(tries = 30)
  void everyRandomTraceFinishesAndUnmapsEverything(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed, @ForAll @IntRange(min = 1, max = 60) int count) throws IOException {
    List<Request> requests = ServingEngineTest.randomRequests(seed, count, 30, 1500, 500);
    SchedulerConfig config = SchedulerConfig.defaults(2048);
    ServingSystems.Built built = ServingSystems.build("vattention",
        ServingSystems.Build.of(MODEL, DEVICE, 3 * Bytes.GiB, config).build());
    ServingMetrics m = new ServingEngine(built.scheduler(), built.kv(), Roofline.of(MODEL, DEVICE), config, MODEL.kvBytesPerToken(), true, null)
        .run(ServingEngineTest.source(requests));
    assertEquals(count, m.finished() + m.rejected());
    assertEquals(0, ((VAttentionKvManager) built.kv()).allocator().stats().liveAllocations());
  }
}

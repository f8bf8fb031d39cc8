package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.Request;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** vLLM v1 over its block manager: conservation, invariants after every iteration, prefix sharing. */
class PagedServingTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final Roofline ROOFLINE = Roofline.of(MODEL, DeviceSpec.parse("a100-40"));

  private static PagedKvManager manager(int numBlocks, int hashBlockTokens) {
    BlockManagerConfig c = new BlockManagerConfig(numBlocks, 16, true, BlockManagerConfig.Mode.V1, 0, BlockManagerConfig.FreeOrder.FIFO, 0, 2048, MODEL.kvBytesPerToken());
    KvBlockManager bm = AllocatorRegistry.blockManager(c);
    return new PagedKvManager(bm, hashBlockTokens, AllocatorRegistry.blockManagerLatency());
  }

  private static ServingMetrics run(List<Request> requests, PagedKvManager kv, int hashBlockTokens) throws IOException {
    SchedulerConfig config = SchedulerConfig.defaults(2048);
    VllmV1Scheduler sched = new VllmV1Scheduler(config, kv);
    return new ServingEngine(sched, kv, ROOFLINE, config, MODEL.kvBytesPerToken(), true, null).run(ServingEngineTest.source(requests, hashBlockTokens));
  }

  @Property(tries = 200)
  void everyRandomTraceFinishesWithInvariantsAfterEveryIteration(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 129, max = 600) int numBlocks,
      @ForAll @IntRange(min = 1, max = 60) int count) throws IOException {
    List<Request> requests = ServingEngineTest.randomRequests(seed, count, 50, 1500, 600);
    PagedKvManager kv = manager(numBlocks, 0);
    ServingMetrics m = run(requests, kv, 0);
    long expectedOutput = 0;
    for (Request r : requests) {
      expectedOutput += Math.min(r.outputTokens(), 2048 - r.promptTokens());
    }
    assertEquals(count, m.arrived());
    assertEquals(count, m.finished());
    assertEquals(0, m.rejected());
    assertEquals(expectedOutput, m.outputTokens());
    assertEquals(numBlocks - 1, kv.blockManager().numFreeBlocks(), "every block is free at the end");
    assertTrue(kv.blockManager().requests().isEmpty());
  }

  @Test
  void requestsWithTheSameHashesShareTheirPrefixBlocks() throws IOException {
    long[] hashes = {7, 8, 9};
    // Two requests of 1,200 tokens with the same three 512-token hashes, the second after the
    // first has finished its prefill: it hits 1,184 tokens (74 blocks of 16; the last token never hits).
    List<Request> requests = List.of(
        new Request(0, 0, 0, 1200, 50, hashes, 1, 1),
        new Request(0, 1, 2_000_000_000L, 1200, 50, hashes, 1, 1));
    PagedKvManager kv = manager(1000, 512);
    run(requests, kv, 512);
    assertEquals(2 * 1200, kv.blockManager().stats().queries());
    assertEquals(1184, kv.blockManager().stats().hits());
  }

  @Test
  void requestsWithoutHashesNeverShare() throws IOException {
    List<Request> requests = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      requests.add(Request.of(i, i * 1_000_000_000L, 700, 20));
    }
    PagedKvManager kv = manager(1000, 0);
    run(requests, kv, 0);
    assertEquals(0, kv.blockManager().stats().hits());
  }
}

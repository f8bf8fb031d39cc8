package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;
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

  /**
   * Prompts prepared ahead on another thread (Note [Prompts prepared ahead] in ServingEngine) give
   * the same run as prompts hashed when they arrive: requests with and without prefix hashes,
   * prompts refused for reaching max_model_len, and a source that fails part-way, whose failure
   * then ends the run with the same message. The reader thread has ended when the run returns.
   */
  @Property(tries = 60)
  void promptsPreparedAheadGiveTheSameRun(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 129, max = 600) int numBlocks,
      @ForAll @IntRange(min = 1, max = 300) int count,
      @ForAll @IntRange(min = -1, max = 300) int failAt) throws IOException {
    java.util.SplittableRandom rng = new java.util.SplittableRandom(seed);
    List<Request> requests = new ArrayList<>();
    for (Request r : ServingEngineTest.randomRequests(seed, count, 50, 2100, 300)) {
      long[] hashes = rng.nextBoolean() ? null : new long[(r.promptTokens() + 511) / 512];
      if (hashes != null) {
        long prefix = rng.nextInt(4); // few distinct prefixes: hits; as in a trace, a hash id names a prefix, never two places
        for (int k = 0; k < hashes.length; k++) {
          hashes[k] = prefix * 1000 + k;
        }
      }
      requests.add(new Request(0, r.id(), r.arrivalNanos(), r.promptTokens(), r.outputTokens(), hashes, 1, 1));
    }
    Object[] runs = new Object[2];
    for (int ahead = 0; ahead < 2; ahead++) {
      PagedKvManager kv = manager(numBlocks, 512);
      SchedulerConfig config = SchedulerConfig.defaults(2048);
      ServingEngine engine = new ServingEngine(new VllmV1Scheduler(config, kv), kv, ROOFLINE, config, MODEL.kvBytesPerToken(), true, null);
      engine.prepareAhead(ahead == 1);
      Iterator<Request> listed = requests.iterator();
      Iterator<Request> it = new Iterator<>() {
        private int read;

        @Override
        public boolean hasNext() {
          if (read++ == failAt) {
            throw new InputException("trace.csv:" + read + ": prompt_tokens: not a number");
          }
          return listed.hasNext();
        }

        @Override
        public Request next() {
          return listed.next();
        }
      };
      RequestSource source = ServingEngineTest.source(it, 512);
      try {
        ServingMetrics m = engine.run(source);
        runs[ahead] = List.of(m.toMap(), m.kvCounters, kv.blockManager().stats().hits(), kv.blockManager().stats().queries());
      } catch (InputException e) {
        runs[ahead] = e.getMessage();
      }
      assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals("kvsim-requests") && t.isAlive()), "the reader thread has ended");
    }
    assertEquals(runs[0], runs[1]);
    if (failAt < 0 || failAt > count) {
      assertTrue(runs[1] instanceof List, "a run without failure finishes: " + runs[1]);
    }
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

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.alloc.paged.PagedRequest;
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

/**
 * Quiet decode steps (Note [Quiet decode steps] in QueueScheduler) change no result: vLLM v1 over
 * its paged block manager runs random traces with them and without them, and every metric, every
 * row of the time series, the latency quantiles and the KV counters are the same. The traces vary
 * what decides which steps are quiet: memory scarce enough to preempt, token budgets small enough
 * to stop the running loop part-way, a cap on long prefills, the admission gate, parallel samples,
 * prefix hashes, outputs cut at max_model_len and block sizes.
 */
class QuietDecodeStepsTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final Roofline ROOFLINE = Roofline.of(MODEL, DeviceSpec.parse("a100-40"));
  private static final int MAX_MODEL_LEN = 2048;

  private static PagedKvManager manager(int numBlocks, int blockTokens) {
    BlockManagerConfig c = new BlockManagerConfig(numBlocks, blockTokens, true, BlockManagerConfig.Mode.V1, 0, BlockManagerConfig.FreeOrder.FIFO, 0,
        MAX_MODEL_LEN, MODEL.kvBytesPerToken());
    KvBlockManager bm = AllocatorRegistry.blockManager(c);
    return new PagedKvManager(bm, 512, AllocatorRegistry.blockManagerLatency());
  }

  /** What a run reports: the summary, the series, the quantiles and the KV counters, as comparable lists. */
  private static List<Object> run(List<Request> requests, int numBlocks, int blockTokens, SchedulerConfig config, boolean quiet, boolean check)
      throws IOException {
    PagedKvManager kv = manager(numBlocks, blockTokens);
    ServingEngine engine = new ServingEngine(new VllmV1Scheduler(config, kv), kv, ROOFLINE, config, MODEL.kvBytesPerToken(), check, null);
    engine.quietSteps(quiet);
    ServingMetrics m = engine.run(ServingEngineTest.source(requests, 512));
    List<Object> out = new ArrayList<>();
    out.add(m.toMap());
    out.add(m.kvCounters());
    for (double[] row : m.series()) {
      out.add(java.util.Arrays.toString(row));
    }
    for (double[] row : m.latencyQuantiles()) {
      out.add(java.util.Arrays.toString(row));
    }
    out.add(kv.blockManager().numFreeBlocks());
    return out;
  }

  private static List<Request> requests(long seed, int count, int maxPrompt, int maxOutput, int maxSamples) {
    SplittableRandom rng = new SplittableRandom(seed);
    List<Request> out = new ArrayList<>();
    for (Request r : ServingEngineTest.randomRequests(seed, count, 40, maxPrompt, maxOutput)) {
      long[] hashes = rng.nextBoolean() ? null : new long[(r.promptTokens() + 511) / 512];
      if (hashes != null) {
        long prefix = rng.nextInt(3);
        for (int k = 0; k < hashes.length; k++) {
          hashes[k] = prefix * 1000 + k;
        }
      }
      out.add(new Request(0, r.id(), r.arrivalNanos(), r.promptTokens(), r.outputTokens(), hashes, 1 + rng.nextInt(maxSamples), 1));
    }
    return out;
  }

  @Property(tries = 120)
  void quietStepsGiveTheSameRun(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 140, max = 900) int numBlocks,
      @ForAll @IntRange(min = 0, max = 2) int blockSizeChoice,
      @ForAll @IntRange(min = 1, max = 150) int count,
      @ForAll @IntRange(min = 16, max = 2048) int budget,
      @ForAll @IntRange(min = 1, max = 64) int maxNumSeqs,
      @ForAll @IntRange(min = 0, max = 600) int longPrefill,
      @ForAll boolean gate) throws IOException {
    int blockTokens = new int[] {16, 8, 32}[blockSizeChoice];
    int blocks = (int) Math.max(numBlocks * 16L / blockTokens, MAX_MODEL_LEN / blockTokens + 2);
    SchedulerConfig config = new SchedulerConfig(budget, maxNumSeqs, MAX_MODEL_LEN, true, longPrefill).withReserveFullIsl(gate);
    // prompts up to 2,100 tokens: some refused, some outputs cut at max_model_len
    List<Request> requests = requests(seed, count, 2100, 700, 3);
    List<Object> plain = run(requests, blocks, blockTokens, config, false, false);
    assertEquals(plain, run(requests, blocks, blockTokens, config, true, false));
  }

  /** With the invariant checker after every iteration, the manager catches up every sequence first, and the run is the same again. */
  @Property(tries = 30)
  void quietStepsPassTheInvariantCheckerAfterEveryIteration(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 140, max = 600) int numBlocks,
      @ForAll @IntRange(min = 1, max = 80) int count) throws IOException {
    SchedulerConfig config = SchedulerConfig.defaults(MAX_MODEL_LEN);
    List<Request> requests = requests(seed, count, 1500, 500, 2);
    List<Object> plain = run(requests, numBlocks, 16, config, false, false);
    assertEquals(plain, run(requests, numBlocks, 16, config, true, true));
  }

  /**
   * A long decode takes most of its steps quietly: only the steps that fill a block or take a new
   * one go the long way. The scheduler is driven by hand, the manager caught up and checked after
   * every step.
   */
  @Test
  void mostStepsOfALongDecodeAreQuiet() {
    PagedKvManager kv = manager(400, 16);
    VllmV1Scheduler scheduler = new VllmV1Scheduler(SchedulerConfig.defaults(MAX_MODEL_LEN), kv);
    scheduler.allowQuietSteps(EngineTokens.INSTANCE);
    Sequence s = new Sequence(Request.of(0, 0, 100, 1000), 1000);
    kv.add(s);
    scheduler.add(s);
    StepPlan plan = new StepPlan();
    long steps = 0;
    long quiet = 0;
    while (s.status() != Sequence.Status.FINISHED) {
      scheduler.schedule(plan);
      scheduler.sampleAhead(plan, EngineTokens.INSTANCE);
      scheduler.updateFromOutput(plan, EngineTokens.INSTANCE);
      assertEquals(1, plan.size());
      steps++;
      quiet += plan.quiet();
      scheduler.catchUpAll();
      kv.checkInvariants();
    }
    assertEquals(1000, s.outputTokens());
    assertEquals(1000, steps, "the prefill samples the first token, each step after it one");
    // of every 16 steps after the prefill, the two that fill a block and take a new one are full
    // steps, and so is the last
    assertTrue(quiet >= 999 * 13 / 16 && quiet <= 999 * 14 / 16, quiet + " quiet steps of " + steps);
  }

  /**
   * The block manager refuses a catch-up that would fill a block, and one it accepts leaves the
   * request as the same steps taken the long way do: its counts, tokens and the hash of the block
   * its appends completed.
   */
  @Test
  void aCatchUpEqualsTheStepsTakenOneByOne() {
    KvBlockManager quiet = promptOf20Computed();
    KvBlockManager plain = promptOf20Computed();
    PagedRequest q = quiet.request("a");
    PagedRequest p = plain.request("a");
    // 20 computed, 21 tokens, 2 blocks of 16: 11 steps, to 31 computed (32 would fill block 1)
    assertEquals(11, quiet.quietDecodeSteps(q));
    int[] more = new int[12];
    for (int k = 0; k < more.length; k++) {
      more[k] = 100 + k;
    }
    assertThrows(IllegalStateException.class, () -> quiet.catchUpQuietly(q, 32, more, 12));
    assertThrows(IllegalStateException.class, () -> quiet.catchUpQuietly(q, 23, more, 2));
    quiet.catchUpQuietly(q, 31, more, 11);
    for (int k = 0; k < 11; k++) {
      assertTrue(plain.allocateSlots(p, 1, 0));
      plain.appendTokens(p, new int[] {more[k]});
    }
    assertEquals(p.numComputedTokens(), q.numComputedTokens());
    assertArrayEquals(p.tokens(), q.tokens());
    assertEquals(32, q.numTokens(), "the appends completed block 1");
    assertEquals(((kvsim.alloc.paged.BlockManager) plain).blockHashPrefix(p, 1), ((kvsim.alloc.paged.BlockManager) quiet).blockHashPrefix(q, 1));
    assertEquals(0, quiet.quietDecodeSteps(q), "the next step fills block 1");
    quiet.checkInvariants();
  }

  /** A block manager with request {@code a}: a prompt of 20 tokens computed, one token appended. */
  private static KvBlockManager promptOf20Computed() {
    KvBlockManager bm = AllocatorRegistry.blockManager(new BlockManagerConfig(64, 16, true, BlockManagerConfig.Mode.V1, 0,
        BlockManagerConfig.FreeOrder.FIFO, 0, MAX_MODEL_LEN, MODEL.kvBytesPerToken()));
    int[] prompt = new int[20];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 7 + i;
    }
    PagedRequest r = bm.addRequest("a", prompt, null, null, null);
    bm.lookup(r);
    assertTrue(bm.allocateSlots(r, 20, 0));
    bm.appendTokens(r, new int[] {99});
    return bm;
  }
}

package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.alloc.paged.PagedRequest;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.registry.AllocatorRegistry;
import kvsim.trace.Request;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.api.Test;

/**
 * Parallel sampling and beam search (vLLM v0 at commit 1fb9c1b: {@code BlockSpaceManagerV2.fork}, {@code cow_block_if_not_appendable}, the scheduler's swap): fork, copy-on-write, group
 * swap, v1's fan-out, contiguous copies, and conservation over random groups on every system.
 */
class SequenceGroupTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");
  private static final Roofline ROOFLINE = Roofline.of(MODEL, DEVICE);
  private static final long BPT = MODEL.kvBytesPerToken();

  private static PagedKvManager v0(int numBlocks, int hostBlocks) {
    BlockManagerConfig c = new BlockManagerConfig(numBlocks, 16, false, BlockManagerConfig.Mode.V0, BlockManagerConfig.DEFAULT_WATERMARK,
        BlockManagerConfig.FreeOrder.LIFO, hostBlocks, 2048, BPT);
    return new PagedKvManager(AllocatorRegistry.blockManager(c), 0, AllocatorRegistry.blockManagerLatency(), 1e12, 25e9);
  }

  private static Request group(long id, long t, int prompt, int output, int n, int beam) {
    return new Request(0, id, t, prompt, output, null, n, beam);
  }

  /** A v0 group whose lead has prefilled {@code prompt} tokens and sampled its first token; returns the lead and its forked child. */
  private static Sequence[] forkedPair(PagedKvManager kv, int prompt) {
    SequenceGroup g = new SequenceGroup(group(1, 0, prompt, 10, 2, 1), 10, true, 0);
    Sequence lead = g.lead();
    kv.add(lead);
    kv.admitWhole(lead);
    lead.admit();
    Sequence child = g.sequences[1];
    kv.fork(lead, child);
    child.copyProgress(lead);
    child.admit();
    return new Sequence[] {lead, child};
  }

  private static void sampleOne(Sequence s, KvManager kv, int token) {
    s.sample(kv, token);
  }

  @Test
  void aForkSharesEveryBlockByReferenceAndAllocatesNothing() {
    PagedKvManager kv = v0(100, 0);
    KvBlockManager blocks = kv.blockManager();
    int freeBefore = 100;
    Sequence[] pair = forkedPair(kv, 40);
    PagedRequest lead = PagedKvManager.requestOf(pair[0]);
    PagedRequest child = PagedKvManager.requestOf(pair[1]);
    assertEquals(3, lead.numBlocks());
    assertEquals(freeBefore - 3, blocks.numFreeBlocks(), "the fork allocated nothing");
    for (int i = 0; i < 3; i++) {
      assertEquals(lead.blockTable()[i], child.blockTable()[i]);
      assertEquals(2, blocks.refCnt(lead.blockTable()[i]));
    }
    kv.checkInvariants();
  }

  @Test
  void theFirstDivergentWriteIntoASharedPartialBlockCopiesItAndTheSecondWritesInPlace() {
    PagedKvManager kv = v0(100, 0);
    Sequence[] pair = forkedPair(kv, 40); // 40 tokens: the third block holds 8 of 16
    int shared = PagedKvManager.requestOf(pair[0]).blockTable()[2];
    sampleOne(pair[0], kv, 7);
    sampleOne(pair[1], kv, 9);
    assertTrue(kv.allocate(pair[0], 1));
    assertEquals(1, kv.groupCounters().get("cow_copies"), "the first writer copies the shared last block");
    assertEquals(1, kv.blockManager().refCnt(shared));
    assertTrue(kv.allocate(pair[1], 1));
    assertEquals(1, kv.groupCounters().get("cow_copies"), "the second writer owns the block alone and writes in place");
    assertEquals(shared, PagedKvManager.requestOf(pair[1]).blockTable()[2]);
    assertEquals(2, kv.blockManager().refCnt(PagedKvManager.requestOf(pair[0]).blockTable()[0]), "full blocks stay shared");
    assertTrue(kv.modelledNanos() > 0);
    kv.checkInvariants();
    kv.finish(pair[0]);
    kv.finish(pair[1]);
    assertEquals(100, kv.blockManager().numFreeBlocks(), "finishing returns every reference");
  }

  @Test
  void aGroupSwapMovesSharedBlocksOnceAndSharesThemAgainAfterSwapIn() {
    PagedKvManager kv = v0(100, 20);
    Sequence[] pair = forkedPair(kv, 40);
    List<Sequence> members = List.of(pair[0], pair[1]);
    assertTrue(kv.swapOut(members));
    assertEquals(20 - 3, kv.blockManager().numFreeHostBlocks(), "three distinct blocks, one host block each");
    assertEquals(3 * 16 * BPT, kv.groupCounters().get("swapped_out_bytes"));
    assertEquals(100, kv.blockManager().numFreeBlocks());
    kv.checkInvariants();
    assertEquals(kvsim.alloc.paged.OpLog.Admission.OK, kv.swapIn(members));
    assertEquals(20, kv.blockManager().numFreeHostBlocks());
    assertEquals(97, kv.blockManager().numFreeBlocks(), "the blocks are shared again");
    assertEquals(2, kv.blockManager().refCnt(PagedKvManager.requestOf(pair[1]).blockTable()[2]));
    assertTrue(kv.groupCounters().get("swap_nanos") > 0, "swaps cross the host link");
    kv.checkInvariants();
  }

  /** Requests of random lengths, each with n or a beam width of 1 to 4 (at most one above 1). */
  static List<Request> randomGroups(long seed, int count, double ratePerSecond, int maxPrompt, int maxOutput) {
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    List<Request> out = new ArrayList<>();
    double t = 0;
    for (int i = 0; i < count; i++) {
      t += -Math.log(1 - rng.nextDouble()) / ratePerSecond;
      int width = 1 + rng.nextInt(4);
      boolean beam = rng.nextBoolean();
      out.add(group(i, Math.round(t * 1e9), 1 + rng.nextInt(maxPrompt), 1 + rng.nextInt(maxOutput), beam ? 1 : width, beam ? width : 1));
    }
    return out;
  }

  private static long expectedOutputTokens(List<Request> requests, int maxModelLen) {
    long total = 0;
    for (Request r : requests) {
      if (r.promptTokens() < maxModelLen) {
        total += (long) Math.max(r.samples(), r.beamWidth()) * Math.min(r.outputTokens(), maxModelLen - r.promptTokens());
      }
    }
    return total;
  }

  private static ServingMetrics run(String system, List<Request> requests, long kvMemoryBytes, long swapBytes, long seed) throws IOException {
    SchedulerConfig config = SchedulerConfig.defaults(2048);
    ServingSystems.Built built = ServingSystems.build(system, ServingSystems.Build.of(MODEL, DEVICE, kvMemoryBytes, config).swapSpaceBytes(swapBytes).build());
    SchedulerConfig used = system.equals("vllm-v0") ? new SchedulerConfig(2048, config.maxNumSeqs(), 2048, false, 0) : config;
    ServingMetrics m = new ServingEngine(built.scheduler(), built.kv(), ROOFLINE, used, BPT, true, null, seed).run(ServingEngineTest.source(requests));
    assertMemoryReturned(system, built.kv());
    return m;
  }

  private static void assertMemoryReturned(String system, KvManager kv) {
    if (kv instanceof PagedKvManager p) {
      KvBlockManager b = p.blockManager();
      int usable = b.config().numBlocks() - (b.config().mode() == BlockManagerConfig.Mode.V1 ? 1 : 0);
      assertEquals(usable, b.numFreeBlocks(), system + ": every device block is free at the end");
      assertEquals(b.config().numHostBlocks(), b.numFreeHostBlocks(), system + ": every host block is free at the end");
      assertTrue(b.requests().isEmpty(), system);
    } else if (kv instanceof ContiguousKvManager c) {
      assertEquals(0, c.allocator().stats().liveAllocations(), system + ": every buffer is freed");
    }
  }

  @Test
  void v0SwapsMultiSequenceGroupsAndRecomputesSingleOnes() throws IOException {
    List<Request> groups = new ArrayList<>();
    List<Request> singles = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      groups.add(group(i, i * 1_000_000L, 300, 400, 4, 1));
      singles.add(group(i, i * 1_000_000L, 300, 400, 1, 1));
    }
    ServingMetrics g = run("vllm-v0", groups, 4 * Bytes.GiB, 16 * Bytes.GiB, 1);
    assertTrue(g.swapPreemptions() > 0, "groups of four samples are swapped");
    assertEquals(g.preemptions(), g.swapPreemptions(), "a forked group is never recomputed");
    assertEquals(g.groupCounters().get("swap_outs"), g.groupCounters().get("swap_ins"), "every swapped group comes back");
    assertEquals(12, g.finished());
    ServingMetrics s = run("vllm-v0", singles, 2 * Bytes.GiB, 4 * Bytes.GiB, 1);
    assertTrue(s.preemptions() > 0);
    assertEquals(0, s.swapPreemptions(), "single sequences are recomputed");
  }

  @Test
  void v0AbortsWhenTheHostPoolCannotHoldASwappedGroup() {
    List<Request> groups = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      groups.add(group(i, i * 1_000_000L, 300, 400, 4, 1));
    }
    IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> run("vllm-v0", groups, 4 * Bytes.GiB, 0, 1));
    assertTrue(e.getMessage().startsWith("out of swap space"), e.getMessage());
  }

  @Test
  void v1FansSamplesOutIntoRequestsThatShareThePromptThroughThePrefixCache() throws IOException {
    ServingMetrics m = run("vllm", List.of(group(0, 0, 100, 20, 3, 1)), 2 * Bytes.GiB, 0, 1);
    assertEquals(0, m.groupCounters().get("forks"), "v1 never forks");
    assertEquals(3 * 20, m.outputTokens());
    assertEquals(2 * 96, m.kvCounters().get("prefix_cache_hits"), "the second and third child hit the prompt's six full blocks");
    assertTrue(m.sharingSaving() > 0);
    assertEquals(1, m.finished());
  }

  @Test
  void orcaReservesEverySampleItsOwnBufferAndCopiesThePromptIntoIt() throws IOException {
    ServingMetrics m = run("orca-oracle", List.of(group(0, 0, 100, 20, 3, 1)), 2 * Bytes.GiB, 0, 1);
    assertEquals(3, m.kvCounters().get("reservations"));
    assertEquals(2, m.groupCounters().get("fork_copies"));
    assertEquals(2 * 100 * BPT, m.groupCounters().get("fork_copied_bytes"));
  }

  @Test
  void orcaAdmitsAGroupOnlyWhenEverySampleGetsItsBuffer() {
    ContiguousKvManager kv = ContiguousKvManager.create("buddy", Map.of(), 1 * Bytes.GiB, DEVICE, MODEL, ContiguousKvManager.Reservation.ORACLE, 2048);
    SequenceGroup g = new SequenceGroup(group(0, 0, 300, 300, 4, 1), 300, true, 0);
    kv.add(g.lead());
    // 600 tokens × 800 KiB rounds to 512 MiB per buddy block: two fit in 1 GiB, four do not.
    assertFalse(kv.allocate(g.lead(), 300));
    assertEquals(0, kv.allocator().stats().liveAllocations(), "nothing is kept from a refused group");
  }

  @Test
  void beamSelectionKeepsEverySurvivorInItsSlot() {
    SequenceGroup g = new SequenceGroup(group(7, 0, 10, 10, 1, 6), 10, true, 3);
    for (int step = 0; step < 200; step++) {
      int[] parents = g.drawParents();
      for (int p : parents) {
        assertEquals(p, parents[p], "a drawn beam survives in its own slot");
      }
    }
  }

  @Test
  void theSameSeedGivesTheSameRunAndAnotherSeedAnotherBeamPath() throws IOException {
    List<Request> requests = randomGroups(5, 40, 20, 400, 200);
    Map<String, Object> a = run("vllm-v0", requests, 2 * Bytes.GiB, 4 * Bytes.GiB, 1).toMap();
    Map<String, Object> b = run("vllm-v0", requests, 2 * Bytes.GiB, 4 * Bytes.GiB, 1).toMap();
    Map<String, Object> c = run("vllm-v0", requests, 2 * Bytes.GiB, 4 * Bytes.GiB, 2).toMap();
    assertEquals(a.toString(), b.toString());
    assertFalse(a.toString().equals(c.toString()), "the beam selection follows the seed");
  }

  @Property(tries = 40)
  void randomGroupsFinishOnceProduceEveryTokenOnceAndReturnAllMemory(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 1, max = 25) int count,
      @ForAll @IntRange(min = 0, max = 4) int systemIndex) throws IOException {
    String system = List.of("vllm", "vllm-v0", "orca-oracle", "orca-pow2", "hf-naive").get(systemIndex);
    List<Request> requests = randomGroups(seed, count, 30, 1200, 300);
    long kv = system.equals("hf-naive") ? 16 * Bytes.GiB : 3 * Bytes.GiB; // hf-naive: four sequences, each growing by doubling
    ServingMetrics m = run(system, requests, kv, 16 * Bytes.GiB, seed);
    assertEquals(count, m.arrived());
    assertEquals(count, m.finished() + m.rejected(), system + ": every request finishes exactly once");
    if (m.rejected() == 0) {
      assertEquals(expectedOutputTokens(requests, 2048), m.outputTokens(), system + ": every sequence's tokens are produced once");
    }
  }
}

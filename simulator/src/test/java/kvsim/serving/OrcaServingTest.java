package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocatorStats;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.trace.Request;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/**
 * The Orca baselines and hf-naive end to end: conservation of requests, tokens and memory, the
 * allocator's invariants after every iteration, each policy's breakdown at every iteration,
 * determinism, and how the reservation policies compare on one schedule.
 */
class OrcaServingTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");
  private static final Roofline ROOFLINE = Roofline.of(MODEL, DEVICE);
  private static final long BPT = MODEL.kvBytesPerToken();

  /**
   * The engine's view of a contiguous manager: every breakdown is checked against what the policy
   * implies, and recorded.
   */
  private static final class CheckedKv implements KvManager {
    final ContiguousKvManager kv;
    final int maxModelLen;
    final long regionTokens;
    final List<long[]> breakdowns = new ArrayList<>();

    CheckedKv(ContiguousKvManager kv, int maxModelLen, long kvMemoryBytes) {
      this.kv = kv;
      this.maxModelLen = maxModelLen;
      this.regionTokens = kvMemoryBytes / BPT;
    }

    @Override
    public void breakdown(long[] out) {
      kv.breakdown(out);
      breakdowns.add(out.clone());
      AllocatorStats st = kv.allocator().stats();
      assertTrue(out[0] >= 0 && out[1] >= 0 && out[2] >= 0 && out[3] >= 0 && out[4] >= 0, () -> java.util.Arrays.toString(out));
      assertEquals(regionTokens, out[0] + out[1] + out[2] + out[3] + out[4]);
      assertEquals(st.requestedBytes(), (out[0] + out[1] + out[2]) * BPT, "the sequences' slots are what was requested");
      assertEquals(kv.allocator().freeBytes() / BPT, out[3], "free is what the allocator could still hand out");
      assertTrue(out[4] >= (st.allocatedBytes() - st.requestedBytes()) / BPT, "rounding is neither a sequence's nor free");
      switch (kv.reservation()) {
        case MAX -> assertEquals(st.liveAllocations() * maxModelLen, out[0] + out[1] + out[2]);
        case ORACLE -> assertEquals(0, out[2], "an oracle wastes nothing inside its reservation");
        case POW2 -> assertTrue(out[2] <= out[0] + out[1], "pow2 over-reserves at most 2x");
        case GROW -> assertTrue(out[1] + out[2] <= out[0], "a grown buffer is at most twice the computed tokens");
        default -> throw new AssertionError();
      }
    }

    @Override
    public void add(Sequence s) {
      kv.add(s);
    }

    @Override
    public int lookup(Sequence s) {
      return kv.lookup(s);
    }

    @Override
    public boolean allocate(Sequence s, int numNewTokens) {
      return kv.allocate(s, numNewTokens);
    }

    @Override
    public void append(Sequence s, int token) {
      kv.append(s, token);
    }

    @Override
    public void preempt(Sequence s) {
      kv.preempt(s);
    }

    @Override
    public void finish(Sequence s) {
      kv.finish(s);
    }

    @Override
    public long capacityTokens() {
      return kv.capacityTokens();
    }

    @Override
    public long modelledNanos() {
      return kv.modelledNanos();
    }

    @Override
    public Map<String, Long> counters() {
      return kv.counters();
    }

    @Override
    public void checkInvariants() {
      kv.checkInvariants();
    }
  }

  private record Run(ServingMetrics metrics, CheckedKv kv, Map<String, Object> parts) {}

  private static Run run(String system, List<Request> requests, long kvMemoryBytes, SchedulerConfig config) throws IOException {
    ServingSystems.Built built = ServingSystems.build(system, ServingSystems.Build.of(MODEL, DEVICE, kvMemoryBytes, config).build());
    CheckedKv kv = new CheckedKv((ContiguousKvManager) built.kv(), config.maxModelLen(), kvMemoryBytes);
    ServingMetrics m = new ServingEngine(built.scheduler(), kv, ROOFLINE, config, BPT, true, null).run(ServingEngineTest.source(requests));
    return new Run(m, kv, built.parts());
  }

  private static void conserves(String system, long seed, int kvMiB, int count) throws IOException {
    List<Request> requests = ServingEngineTest.randomRequests(seed, count, 50, 1500, 600);
    Run r = run(system, requests, kvMiB * Bytes.MiB, SchedulerConfig.defaults(2048));
    long expectedOutput = 0;
    for (Request q : requests) {
      expectedOutput += Math.min(q.outputTokens(), 2048 - q.promptTokens());
    }
    ServingMetrics m = r.metrics();
    assertEquals(count, m.arrived());
    assertEquals(count, m.finished());
    assertEquals(0, m.rejected());
    assertEquals(0, m.preemptions());
    assertEquals(expectedOutput, m.outputTokens());
    assertEquals(count, m.kvCounters().get("reservations"), "one reservation per request");
    AllocatorStats st = r.kv().kv.allocator().stats();
    assertEquals(0, st.liveAllocations(), "all memory returns");
    assertEquals(0, st.allocatedBytes());
    assertEquals(0, st.requestedBytes());
    assertTrue(r.kv().breakdowns.size() > m.iterations(), "every iteration is sampled, and the engine idling at the end");
  }

  @Property(tries = 200)
  void orcaMaxConservesAndKeepsItsInvariants(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed, @ForAll @IntRange(min = 2048, max = 12288) int kvMiB,
      @ForAll @IntRange(min = 1, max = 60) int count) throws IOException {
    conserves("orca-max", seed, kvMiB, count);
  }

  @Property(tries = 200)
  void orcaPow2ConservesAndKeepsItsInvariants(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed, @ForAll @IntRange(min = 2048, max = 12288) int kvMiB,
      @ForAll @IntRange(min = 1, max = 60) int count) throws IOException {
    conserves("orca-pow2", seed, kvMiB, count);
  }

  @Property(tries = 200)
  void orcaOracleConservesAndKeepsItsInvariants(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed, @ForAll @IntRange(min = 2048, max = 12288) int kvMiB,
      @ForAll @IntRange(min = 1, max = 60) int count) throws IOException {
    conserves("orca-oracle", seed, kvMiB, count);
  }

  @Property(tries = 200)
  void hfNaiveConservesAndKeepsItsInvariants(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed, @ForAll @IntRange(min = 4900, max = 12288) int kvMiB,
      @ForAll @IntRange(min = 1, max = 15) int count) throws IOException {
    conserves("hf-naive", seed, kvMiB, count);
  }

  @Test
  void theSameRequestsGiveTheSameMetrics() throws IOException {
    List<Request> requests = ServingEngineTest.randomRequests(17, 300, 5, 1000, 400);
    for (String system : List.of("orca-max", "orca-pow2", "orca-oracle", "hf-naive")) {
      List<Request> some = system.equals("hf-naive") ? requests.subList(0, 30) : requests;
      Map<String, Object> a = run(system, some, 6 * Bytes.GiB, SchedulerConfig.defaults(2048)).metrics().toMap();
      Map<String, Object> b = run(system, some, 6 * Bytes.GiB, SchedulerConfig.defaults(2048)).metrics().toMap();
      assertEquals(a, b, system);
    }
  }

  @Test
  void onOneScheduleLargerReservationsOnlyAddReservedAndInternalWaste() throws IOException {
    // Every request arrives at once and memory never runs short (16 running, each at most a 2 GiB
    // buddy block, in 48 GiB): the three policies run the same iterations with the same batches.
    List<Request> requests = new ArrayList<>();
    for (Request r : ServingEngineTest.randomRequests(5, 40, 1, 1000, 500)) {
      requests.add(Request.of(r.id(), 0, r.promptTokens(), r.outputTokens()));
    }
    SchedulerConfig config = new SchedulerConfig(2048, 16, 2048, true, 0);
    Run max = run("orca-max", requests, 48 * Bytes.GiB, config);
    Run pow2 = run("orca-pow2", requests, 48 * Bytes.GiB, config);
    Run oracle = run("orca-oracle", requests, 48 * Bytes.GiB, config);
    assertEquals(oracle.metrics().iterations(), max.metrics().iterations());
    assertEquals(oracle.metrics().iterations(), pow2.metrics().iterations());
    assertEquals(0, max.metrics().kvCounters().get("reservations_refused"), "memory never ran short");
    for (int i = 0; i < oracle.kv().breakdowns.size(); i++) {
      long[] x = max.kv().breakdowns.get(i);
      long[] p = pow2.kv().breakdowns.get(i);
      long[] o = oracle.kv().breakdowns.get(i);
      assertEquals(o[0], x[0], "the same token states at iteration " + i);
      assertEquals(o[0], p[0]);
      assertEquals(o[1], p[1], "reserved for future tokens is the same once the final length is covered");
      assertEquals(o[1], x[1]);
      assertTrue(x[2] >= p[2] && p[2] >= o[2], "internal waste: max >= pow2 >= oracle at iteration " + i);
    }
    assertTrue(max.metrics().meanFraction("internal_fragmentation") > pow2.metrics().meanFraction("internal_fragmentation"));
    assertTrue(pow2.metrics().meanFraction("internal_fragmentation") > oracle.metrics().meanFraction("internal_fragmentation"));
  }

  @Test
  void eachSystemEchoesItsParts() throws IOException {
    Map<String, String> reservations = Map.of("orca-max", "max", "orca-pow2", "pow2", "orca-oracle", "oracle", "hf-naive", "grow");
    for (Map.Entry<String, String> e : reservations.entrySet()) {
      ServingSystems.Built b = ServingSystems.build(e.getKey(),
          ServingSystems.Build.of(MODEL, DEVICE, 12 * Bytes.GiB, SchedulerConfig.defaults(2048)).build());
      assertEquals("orca", b.parts().get("scheduler"));
      assertEquals("contiguous", b.parts().get("kv_manager"));
      assertEquals(e.getKey().equals("hf-naive") ? "pytorch-caching" : "buddy", b.parts().get("allocator"));
      assertEquals(e.getValue(), b.parts().get("reservation"));
      assertEquals(e.getKey().equals("hf-naive") ? 1 : 256, b.parts().get("max_num_seqs"));
    }
  }

  @Test
  void kvMemoryTooSmallForOneSequenceIsBadInput() {
    // 2048 tokens of OPT-13B need 1,600 MiB; the largest buddy block of 1,900 MiB is 1 GiB.
    InputException e = assertThrows(InputException.class, () -> ServingSystems.build("orca-max",
        ServingSystems.Build.of(MODEL, DEVICE, 1900 * Bytes.MiB, SchedulerConfig.defaults(2048)).build()));
    assertTrue(e.getMessage().contains("max_model_len"), e.getMessage());
  }
}

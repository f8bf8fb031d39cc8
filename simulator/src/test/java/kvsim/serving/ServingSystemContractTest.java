package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.serving.example.IdealKvManager;
import kvsim.serving.example.StaticBatchScheduler;
import kvsim.trace.Request;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract every registered serving system meets, as {@code AllocatorContractTest} is the
 * allocators': over small generated workloads (groups of parallel samples and beams among them,
 * which the systems that fork run as forking groups), every request finishes, every output token
 * is produced once, the KV breakdown accounts for the region's slots at every iteration, the
 * invariants hold after every iteration, all memory comes back at the end, and a second run with
 * the same seed gives the same results. The example systems of {@code kvsim.serving.example} (an
 * ideal KV manager, a static-batching scheduler) are registered for the duration, so they are held
 * to the contract as the shipped systems are.
 */
class ServingSystemContractTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final DeviceSpec DEVICE = DeviceSpec.parse("a100-40");
  private static final int MAX_MODEL_LEN = 1024;

  @BeforeAll
  static void registerExample() {
    IdealKvManager.register();
    StaticBatchScheduler.register();
  }

  @AfterAll
  static void unregisterExample() {
    ServingSystems.unregister(IdealKvManager.SYSTEM);
    ServingSystems.unregister(StaticBatchScheduler.SYSTEM);
  }

  static Stream<String> systems() {
    // Evaluated after @BeforeAll: the example system is among them.
    return ServingSystems.systems().stream().map(ServingSystems.System::name);
  }

  /** A KV manager that checks the breakdown after each iteration's invariants, delegating the rest (capabilities too) to the system's. */
  private static final class Checked implements KvManager {
    final KvManager kv;
    final long slots;
    long checks;
    final long[] out = new long[5];
    final long freeAtStart;

    Checked(KvManager kv) {
      this.kv = kv;
      kv.breakdown(out);
      this.slots = out[0] + out[1] + out[2] + out[3] + out[4];
      assertEquals(0, out[0] + out[1] + out[2], "a fresh system holds nothing");
      assertTrue(out[3] > 0, "a fresh system has free memory");
      this.freeAtStart = out[3];
    }

    @Override
    public <T extends KvCapability> Optional<T> capability(Class<T> type) {
      return kv.capability(type);
    }

    @Override
    public void checkInvariants() {
      kv.checkInvariants();
      java.util.Arrays.fill(out, 0);
      kv.breakdown(out);
      for (long o : out) {
        assertTrue(o >= 0, "a negative breakdown category");
      }
      assertEquals(slots, out[0] + out[1] + out[2] + out[3] + out[4], "the breakdown sums to the region's slots");
      checks++;
    }

    // The rest delegates.
    @Override public void add(Sequence s) { kv.add(s); }
    @Override public int lookup(Sequence s) { return kv.lookup(s); }
    @Override public boolean allocate(Sequence s, int n) { return kv.allocate(s, n); }
    @Override public void append(Sequence s, int token) { kv.append(s, token); }
    @Override public void preempt(Sequence s) { kv.preempt(s); }
    @Override public void finish(Sequence s) { kv.finish(s); }
    @Override public long capacityTokens() { return kv.capacityTokens(); }
    @Override public long modelledNanos() { return kv.modelledNanos(); }
    @Override public void breakdown(long[] o) { kv.breakdown(o); }
    @Override public Map<String, Long> counters() { return kv.counters(); }
  }

  /** Requests of one sample, of {@code n} parallel samples, and of a beam width, arriving at 4 per second. */
  private static List<Request> workload(long seed) {
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    List<Request> out = new ArrayList<>();
    double t = 0;
    for (int i = 0; i < 40; i++) {
      t += -Math.log(1 - rng.nextDouble()) / 4;
      int prompt = 1 + rng.nextInt(500);
      int output = 1 + rng.nextInt(300);
      int kind = rng.nextInt(4);
      int samples = kind == 1 ? 2 + rng.nextInt(2) : 1;
      int beam = kind == 2 ? 2 + rng.nextInt(2) : 1;
      out.add(new Request(i + 1, i, Math.round(t * 1e9), prompt, output, null, samples, beam));
    }
    return out;
  }

  private record Run(ServingMetrics metrics, Checked kv, boolean forks) {}

  private static Run run(String system, List<Request> requests, long seed) throws IOException {
    SchedulerConfig config = SchedulerConfig.defaults(MAX_MODEL_LEN);
    ServingSystems.Built built = ServingSystems.build(system, ServingSystems.Build.of(MODEL, DEVICE, 4 * Bytes.GiB, config).build());
    Checked kv = new Checked(built.kv());
    ServingEngine engine = new ServingEngine(built.scheduler(), kv, Roofline.of(MODEL, DEVICE), config, MODEL.kvBytesPerToken(), true, null, seed);
    if (built.activationBytesPerToken() > 0) {
      engine.placeActivationsWithKv(built.activationBytesPerToken());
    }
    return new Run(engine.run(ServingEngineTest.source(requests)), kv, built.scheduler().forksGroups());
  }

  /**
   * The KV breakdown's five shares sum to 1 after every sample (each iteration's row of the time
   * series) and over both windows, and the shares of the memory in use sum to 1.
   */
  @SuppressWarnings("unchecked")
  private static void sharesSumToOne(ServingMetrics m, String at) {
    List<String> categories = List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle");
    assertFalse(m.series().isEmpty(), at);
    for (double[] row : m.series()) {
      double sum = 0;
      for (String c : categories) {
        double v = row[ServingMetrics.SERIES_COLUMNS.indexOf(c)];
        assertTrue(v >= 0 && v <= 1, at + ": " + c + " = " + v);
        sum += v;
      }
      assertEquals(1.0, sum, 1e-9, at + ": after the iteration at " + row[1] + " ns");
    }
    for (String window : List.of("kv_breakdown", "kv_breakdown_steady")) {
      Map<String, Object> b = (Map<String, Object>) m.toMap().get(window);
      double sum = 0;
      for (String c : categories) {
        sum += (Double) ((Map<String, Object>) b.get(c)).get("mean");
      }
      assertEquals(1.0, sum, 1e-9, at + ": " + window);
      double used = 0;
      for (Object v : ((Map<String, Object>) b.get("used_memory")).values()) {
        used += (Double) v;
      }
      assertEquals(1.0, used, 1e-9, at + ": " + window + ".used_memory");
    }
  }

  @ParameterizedTest
  @MethodSource("systems")
  void conservesRequestsTokensAndMemoryAndRepeatsItself(String system) throws IOException {
    for (long seed = 1; seed <= 3; seed++) {
      List<Request> requests = workload(seed);
      Run first = run(system, requests, seed);
      ServingMetrics m = first.metrics();
      long expectedOutput = 0;
      for (Request r : requests) {
        expectedOutput += (long) Math.max(r.samples(), r.beamWidth()) * Math.min(r.outputTokens(), MAX_MODEL_LEN - r.promptTokens());
      }
      String at = system + ", seed " + seed;
      assertEquals(requests.size(), m.arrived(), at);
      assertEquals(0, m.rejected() + m.aborted(), at + ": the workload fits every system");
      assertEquals(requests.size(), m.finished(), at + ": every request finishes");
      assertEquals(expectedOutput, m.outputTokens(), at + ": every output token of every sequence, once");
      if (first.forks()) {
        @SuppressWarnings("unchecked")
        Map<String, Object> groups = (Map<String, Object>) m.toMap().get("sequence_groups");
        assertTrue((Long) groups.get("beam_replacements") > 0, at + ": beams were re-selected by forks");
      }
      assertTrue(first.kv().checks >= 2 * m.iterations(), at + ": invariants after planning and after finishing every iteration");
      sharesSumToOne(m, at);
      long[] end = new long[5];
      first.kv().breakdown(end);
      assertArrayEquals(new long[] {0, 0, 0, first.kv().freeAtStart, first.kv().slots - first.kv().freeAtStart}, end, at + ": all memory back");
      Run second = run(system, requests, seed);
      assertEquals(m.toMap(), second.metrics().toMap(), at + ": same seed, same results");
      assertEquals(m.series().size(), second.metrics().series().size(), at);
      for (int i = 0; i < m.series().size(); i++) {
        assertArrayEquals(m.series().get(i), second.metrics().series().get(i), at + ": same iteration series");
      }
    }
  }

  @Test
  void aBuildTakesItsDefaultsAndWhatIsNamed() {
    SchedulerConfig config = SchedulerConfig.defaults(MAX_MODEL_LEN);
    ServingSystems.Build defaults = ServingSystems.Build.of(MODEL, DEVICE, Bytes.GiB, config).build();
    assertEquals(16, defaults.blockTokens());
    assertEquals(0, defaults.hashBlockTokens());
    assertEquals(ServingSystems.SWAP_SPACE_BYTES, defaults.swapSpaceBytes());
    assertEquals(null, defaults.plan());
    assertEquals(Map.of(), defaults.allocatorOptions());
    assertEquals(MODEL.kvBytesPerToken(), defaults.kvBytesPerToken());
    Map<String, Map<String, String>> options = Map.of("buddy", Map.of("min-block", "64KiB"));
    ServingSystems.Build named = ServingSystems.Build.of(MODEL, DEVICE, Bytes.GiB, config).blockTokens(32).hashBlockTokens(64).swapSpaceBytes(Bytes.MiB)
        .plan("naive").allocatorOptions(options).build();
    assertEquals(32, named.blockTokens());
    assertEquals(64, named.hashBlockTokens());
    assertEquals(Bytes.MiB, named.swapSpaceBytes());
    assertEquals("naive", named.plan());
    assertEquals(options, named.allocatorOptions());
    kvsim.core.InputException e = org.junit.jupiter.api.Assertions.assertThrows(kvsim.core.InputException.class,
        () -> ServingSystems.Build.of(MODEL, DEVICE, Bytes.GiB, config).plan("wide").build());
    assertEquals("--plan: unknown plan 'wide' (known: two-pool, naive)", e.getMessage());
  }
}

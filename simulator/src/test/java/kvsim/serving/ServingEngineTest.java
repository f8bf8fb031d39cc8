package kvsim.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Roofline;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.api.Test;

/** The serving engine conserves requests, tokens and memory, and times iterations by the roofline. */
class ServingEngineTest {
  private static final ModelPreset MODEL = ModelPreset.parse("opt-13b");
  private static final Roofline ROOFLINE = Roofline.of(MODEL, DeviceSpec.parse("a100-40"));

  static RequestSource source(List<Request> requests) {
    return source(requests, 0);
  }

  /** A source of these requests, with prefix hashes of {@code hashBlockTokens} tokens. */
  static RequestSource source(List<Request> requests, int hashBlockTokens) {
    return source(requests.iterator(), hashBlockTokens);
  }

  /** A source of the requests {@code it} gives, with prefix hashes of {@code hashBlockTokens} tokens. */
  static RequestSource source(Iterator<Request> it, int hashBlockTokens) {
    return new RequestSource() {
      @Override
      public Request next() {
        return it.hasNext() ? it.next() : null;
      }

      @Override
      public int hashBlockTokens() {
        return hashBlockTokens;
      }

      @Override
      public String name() {
        return "test";
      }

      @Override
      public Map<String, Object> describe() {
        return Map.of();
      }
    };
  }

  static List<Request> randomRequests(long seed, int count, double ratePerSecond, int maxPrompt, int maxOutput) {
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    List<Request> out = new ArrayList<>();
    double t = 0;
    for (int i = 0; i < count; i++) {
      t += -Math.log(1 - rng.nextDouble()) / ratePerSecond;
      out.add(Request.of(i, Math.round(t * 1e9), 1 + rng.nextInt(maxPrompt), 1 + rng.nextInt(maxOutput)));
    }
    return out;
  }

  private static ServingMetrics run(List<Request> requests, CountingKvManager kv, SchedulerConfig config) throws IOException {
    VllmV1Scheduler sched = new VllmV1Scheduler(config, kv);
    return new ServingEngine(sched, kv, ROOFLINE, config, MODEL.kvBytesPerToken(), true, null).run(source(requests));
  }

  @Test
  void everyRequestFinishesOnceEveryTokenIsProducedOnceAndAllMemoryReturns() throws IOException {
    for (long seed = 1; seed <= 20; seed++) {
      List<Request> requests = randomRequests(seed, 200, 20, 1500, 400);
      CountingKvManager kv = new CountingKvManager(300, 16); // 4,800 slots: preemptions happen
      SchedulerConfig config = SchedulerConfig.defaults(2048);
      ServingMetrics m = run(requests, kv, config);
      long expectedOutput = 0;
      for (Request r : requests) {
        expectedOutput += Math.min(r.outputTokens(), 2048 - r.promptTokens());
      }
      assertEquals(200, m.arrived());
      assertEquals(200, m.finished(), "seed " + seed);
      assertEquals(0, m.rejected());
      assertEquals(expectedOutput, m.outputTokens(), "seed " + seed);
      assertEquals(kv.totalBlocks, kv.freeBlocks, "all memory returns");
      assertTrue(kv.held.isEmpty());
    }
  }

  @Test
  void aTightPoolPreemptsAndStillFinishesEverything() throws IOException {
    List<Request> requests = randomRequests(3, 100, 1000, 1000, 1000);
    CountingKvManager kv = new CountingKvManager(130, 16); // 2,080 slots: one long request at a time, nearly
    ServingMetrics m = run(requests, kv, SchedulerConfig.defaults(2048));
    assertEquals(100, m.finished());
    assertTrue(m.preemptions() > 0, "preemptions: " + m.preemptions());
  }

  @Test
  void requestsThatCanNeverFitAreRejectedOnArrival() throws IOException {
    CountingKvManager kv = new CountingKvManager(10, 16); // 160 slots
    List<Request> requests = List.of(Request.of(0, 0, 100, 10), Request.of(1, 5, 150, 10), Request.of(2, 9, 149, 30));
    ServingMetrics m = run(requests, kv, SchedulerConfig.defaults(150));
    assertEquals(3, m.arrived());
    assertEquals(1, m.rejected()); // a prompt of max_model_len tokens leaves no room for output
    assertEquals(2, m.finished());
    assertEquals(10 + 1, m.outputTokens()); // 149 + 30 is cut at max_model_len: one token
    assertEquals(1L, m.toMap().get("requests_truncated"));
  }

  @Test
  @SuppressWarnings("unchecked")
  void aLoneRequestTakesOnePrefillAndOneDecodePerFurtherToken() throws IOException {
    CountingKvManager kv = new CountingKvManager(200, 16);
    ServingMetrics m = run(List.of(Request.of(0, 0, 512, 4)), kv, SchedulerConfig.defaults(2048));
    assertEquals(4, m.iterations()); // the prefill samples token 1; three decodes sample 2, 3, 4
    double prefillSeconds = ROOFLINE.forwardNanos(512, 512 * MODEL.kvBytesPerToken()) / 1e9;
    Map<String, Object> ttft = (Map<String, Object>) m.toMap().get("ttft_seconds");
    assertEquals(prefillSeconds, (Double) ttft.get("p50"), 1e-9);
  }

  @Test
  void theSameRequestsGiveTheSameMetrics() throws IOException {
    List<Request> requests = randomRequests(11, 300, 30, 1000, 300);
    ServingMetrics a = run(requests, new CountingKvManager(200, 16), SchedulerConfig.defaults(2048));
    ServingMetrics b = run(requests, new CountingKvManager(200, 16), SchedulerConfig.defaults(2048));
    assertEquals(a.toMap(), b.toMap());
  }

  @Test
  void theKvBreakdownSumsToOne() throws IOException {
    ServingMetrics m = run(randomRequests(5, 200, 20, 1000, 300), new CountingKvManager(300, 16), SchedulerConfig.defaults(2048));
    double sum = 0;
    for (String c : List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle")) {
      double f = m.meanFraction(c);
      assertTrue(f >= 0 && f <= 1, c + " = " + f);
      sum += f;
    }
    assertEquals(1.0, sum, 1e-9);
  }
}

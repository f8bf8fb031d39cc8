package kvsim.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.core.Tag;
import kvsim.devicemodel.DeviceSpec;
import kvsim.trace.TraceEvent;
import org.apache.commons.statistics.descriptive.Quantile;
import org.junit.jupiter.api.Test;

/** The kv generator emits time-ordered request buffers sized and timed as its class comment says. */
class KvGeneratorTest {
  private final ModelPreset model = ModelPreset.defaultModel();
  private final DeviceSpec device = DeviceSpec.defaultDevice();

  private KvGenerator kv(Map<String, String> params) {
    return new KvGenerator(new OptionMap("generator kv", params), model, device);
  }

  @Test
  void everyBufferIsFreedOnceAndTheKvLifetimeIsPrefillPlusOutputSteps() {
    KvGenerator g = kv(Map.of("requests", "3000", "seed", "4", "decode-step-ms", "10"));
    Map<Long, TraceEvent> live = new HashMap<>();
    Map<Long, Long> promptOfRequest = new HashMap<>();
    long lastT = 0;
    List<Double> prompts = new ArrayList<>();
    long freed = 0;
    TraceEvent e;
    double prefillPerToken = 2.0 * model.parameters() / (device.peakFlops() * 0.5) * 1e9;
    while ((e = g.next()) != null) {
      assertTrue(e.timeNanos() >= lastT, "time ordered");
      lastT = e.timeNanos();
      if (e.op() == TraceEvent.Op.ALLOC) {
        live.put(e.id(), e);
        if (e.id() % 2 == 0) {
          assertEquals(Tag.ACTIVATION, e.tag());
          assertFalse(e.splittable());
          long unit = model.intermediateSize() * 4L;
          assertEquals(0, e.sizeBytes() % unit);
          promptOfRequest.put(e.id() / 2, e.sizeBytes() / unit);
          prompts.add((double) (e.sizeBytes() / unit));
        } else {
          assertEquals(Tag.KV, e.tag());
          assertTrue(e.splittable());
          assertEquals(0, e.sizeBytes() % model.kvBytesPerToken());
        }
      } else {
        TraceEvent a = live.remove(e.id());
        assertTrue(a != null, "free of a live id");
        freed++;
        long prompt = promptOfRequest.get(e.id() / 2);
        long prefill = Math.round(prompt * prefillPerToken);
        if (e.id() % 2 == 0) {
          assertEquals(a.timeNanos() + prefill, e.timeNanos());
        } else {
          long output = a.sizeBytes() / model.kvBytesPerToken() - prompt;
          assertTrue(output >= 1 && output <= 1000, "conv output is capped at 1000: " + output);
          assertEquals(a.timeNanos() + prefill + output * 10_000_000L, e.timeNanos());
        }
      }
    }
    assertTrue(live.isEmpty());
    assertEquals(6000, freed);
    double median = Quantile.withDefaults().evaluate(prompts.stream().mapToDouble(Double::doubleValue).toArray(), 0.5);
    // Azure conversation prompts: median 1,020 tokens in the trace statistics.
    assertTrue(median > 700 && median < 1100, "median prompt " + median);
  }

  @Test
  void theArrivalRateMatchesThePreset() {
    KvGenerator g = kv(Map.of("requests", "20000", "seed", "9"));
    TraceEvent e;
    long lastArrival = 0;
    while ((e = g.next()) != null) {
      if (e.op() == TraceEvent.Op.ALLOC) {
        lastArrival = e.timeNanos();
      }
    }
    double rate = 20000 / (lastArrival / 1e9);
    assertTrue(Math.abs(rate - 5.53) / 5.53 < 0.03, "rate " + rate);
  }

  @Test
  void aRefusedBufferIsNeverFreed() {
    KvGenerator g = kv(Map.of("requests", "500", "seed", "2"));
    java.util.Set<Long> refused = new java.util.HashSet<>();
    TraceEvent e;
    while ((e = g.next()) != null) {
      if (e.op() == TraceEvent.Op.ALLOC) {
        boolean served = e.id() % 5 != 1;
        if (!served) {
          refused.add(e.id());
        }
        g.acknowledge(e, served);
      } else {
        assertFalse(refused.contains(e.id()), "freed refused id " + e.id());
      }
    }
    assertEquals(200, refused.size());
  }
}

package kvsim.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.OptionMap;
import kvsim.trace.Request;
import org.junit.jupiter.api.Test;

/** The request generator: Poisson arrivals at the asked rate, lengths within the preset's caps, reproducible from the seed. */
class RequestGeneratorTest {
  private static List<Request> generate(Map<String, String> params) {
    RequestGenerator g = new RequestGenerator(new OptionMap("generator requests", params));
    List<Request> out = new ArrayList<>();
    Request r;
    while ((r = g.next()) != null) {
      out.add(r);
    }
    return out;
  }

  @Test
  void theSameSeedGivesTheSameRequestsAndAnotherSeedOthers() {
    List<Request> a = generate(Map.of("count", "500", "seed", "7"));
    assertEquals(a, generate(Map.of("count", "500", "seed", "7")));
    assertNotEquals(a, generate(Map.of("count", "500", "seed", "8")));
  }

  @Test
  void arrivalsArePoissonAtTheAskedRate() {
    int n = 20_000;
    List<Request> r = generate(Map.of("count", Integer.toString(n), "rate", "4", "preset", "sharegpt"));
    assertEquals(n, r.size());
    double[] gapsSeconds = new double[n];
    long previous = 0;
    for (int i = 0; i < n; i++) {
      assertEquals(i, r.get(i).id());
      gapsSeconds[i] = (r.get(i).arrivalNanos() - previous) / 1e9;
      assertTrue(gapsSeconds[i] >= 0, "arrivals in order");
      previous = r.get(i).arrivalNanos();
    }
    double mean = java.util.Arrays.stream(gapsSeconds).average().orElseThrow();
    double var = java.util.Arrays.stream(gapsSeconds).map(g -> (g - mean) * (g - mean)).sum() / (n - 1);
    // Exponential gaps: mean 1/rate = 0.25 s and coefficient of variation 1; with 20,000 gaps the
    // standard error of the mean is 0.25/sqrt(20000) = 0.0018 s, so 0.01 s is over five of them.
    assertEquals(0.25, mean, 0.01);
    assertEquals(1.0, Math.sqrt(var) / mean, 0.05);
  }

  @Test
  void lengthsFollowThePresetWithinItsCaps() {
    LengthPreset preset = LengthPreset.find("azure-conv");
    List<Request> r = generate(Map.of("count", "20000", "preset", "azure-conv"));
    double outputMean = 0;
    for (Request q : r) {
      assertTrue(q.promptTokens() >= 1 && q.promptTokens() <= preset.input().cap(), "prompt " + q.promptTokens());
      assertTrue(q.outputTokens() >= 1 && q.outputTokens() <= preset.output().cap(), "output " + q.outputTokens());
      assertNull(q.hashIds());
      outputMean += q.outputTokens() / (double) r.size();
    }
    // The Azure 2023 conversation trace's output mean is 211.1 tokens (the shared statistics); the
    // fitted mixture clipped at 1,000 gives about the same.
    assertEquals(211, outputMean, 25);
  }

  @Test
  void theDefaultRateIsThePresetTracesMeanRate() {
    List<Request> r = generate(Map.of("count", "20000", "preset", "azure-code"));
    double seconds = r.get(r.size() - 1).arrivalNanos() / 1e9;
    assertEquals(LengthPreset.find("azure-code").meanRatePerSecond(), r.size() / seconds, 0.1);
  }

  @Test
  void badOptionsAreRefusedByName() {
    assertThrows(InputException.class, () -> generate(Map.of("preset", "nope")));
    assertThrows(InputException.class, () -> generate(Map.of("rate", "0")));
    assertThrows(InputException.class, () -> generate(Map.of("cuont", "5")));
    assertTrue(generate(Map.of("count", "0")).isEmpty());
  }
}

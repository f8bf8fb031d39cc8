package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** The capacity search: targets parsed strictly, an answer that was probed and met, bounds respected. */
class CapacitySearchTest {
  private static ServingSpec spec(String workload, String... systems) {
    return ServingSpec.resolve(ServingSpec.Request.of(workload, List.of(systems),
        Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.KV_MEMORY, "12GiB")));
  }

  @Test
  void targetsAreParsedWithTheirUnits() {
    CapacitySearch.Slo a = CapacitySearch.Slo.parse("normalized_latency.mean<=0.2s");
    assertEquals("normalized_latency", a.metric());
    assertEquals("mean", a.statistic());
    assertEquals(0.2, a.limitSeconds(), 1e-12);
    assertEquals(0.25, CapacitySearch.Slo.parse(" ttft.p99 <= 250ms ").limitSeconds(), 1e-12);
    for (String bad : List.of("latency.mean<=1s", "ttft.p95<=1s", "ttft.p50<1s", "ttft.p50<=1", "ttft.p50<=-1s", "ttft.p50<=1h")) {
      assertThrows(InputException.class, () -> CapacitySearch.Slo.parse(bad), bad);
    }
  }

  @Test
  void theAnswerIsTheHighestRateProbedThatMetAndTheNextHigherProbeFailed() throws IOException {
    CapacitySearch.Slo slo = CapacitySearch.Slo.parse("normalized_latency.mean<=0.2s");
    // OPT-13B rejects the preset's prompts of 2,048 tokens or more at every rate: allowed here, so the latency decides.
    CapacitySearch.Targets targets = CapacitySearch.Targets.parse(List.of(slo.text(), "rejected.fraction<=0.5"));
    List<CapacitySearch.Capacity> result = CapacitySearch.search(spec("requests:preset=sharegpt,count=200", "vllm", "orca-max"), targets, 0.1, 20, 6);
    assertEquals(2, result.size());
    for (CapacitySearch.Capacity c : result) {
      assertEquals(8, c.probes().size(), c.system());
      double lowestFailed = Double.POSITIVE_INFINITY;
      boolean answerProbed = false;
      for (CapacitySearch.Probe p : c.probes()) {
        double v = p.values().get(slo.text());
        assertEquals(p.met(), v <= 0.2, "probe at " + p.rate());
        assertTrue(p.rejected() > 0 && p.rejectedFraction() <= 0.5 && p.rejectionsMet(), "probe at " + p.rate());
        assertEquals(p.rate() * p.finished() / p.requests(), p.goodputRps(), 1e-12);
        if (!p.met()) {
          lowestFailed = Math.min(lowestFailed, p.rate());
        }
        answerProbed |= p.rate() == c.maxRate() && p.met();
      }
      assertTrue(answerProbed, c.system() + ": " + c.maxRate() + " was probed and met");
      assertTrue(c.maxRate() < lowestFailed);
      assertFalse(c.atUpperBound());
    }
    // Paged memory sustains more load than whole max_model_len reservations.
    assertTrue(result.get(0).maxRate() > result.get(1).maxRate(), result.get(0).maxRate() + " vs " + result.get(1).maxRate());
  }

  @Test
  void aTargetMetAtTheUpperBoundOrMissedAtTheLowerOneIsSaidSo() throws IOException {
    ServingSpec s = spec("requests:preset=sharegpt,count=50", "vllm");
    CapacitySearch.Capacity easy = CapacitySearch.search(s, CapacitySearch.Targets.parse(List.of("e2e.p50<=100000s", "rejected.fraction<=1")), 0.1, 1, 4).get(0);
    assertTrue(easy.atUpperBound());
    assertEquals(1.0, easy.maxRate());
    assertEquals(2, easy.probes().size());
    CapacitySearch.Capacity impossible = CapacitySearch.search(s, List.of(CapacitySearch.Slo.parse("ttft.p50<=1ms")), 0.1, 1, 4).get(0);
    assertEquals(0.0, impossible.maxRate());
    assertEquals(1, impossible.probes().size());
  }

  @Test
  void rejectedTargetsAreParsedOnceAndNeedALatencyTargetBeside() {
    CapacitySearch.Targets t = CapacitySearch.Targets.parse(List.of("e2e.mean<=1s", " rejected.fraction <= 0.05 "));
    assertEquals(0.05, t.rejectedFractionAllowed(), 1e-12);
    assertEquals("rejected.fraction <= 0.05", t.rejectedText());
    assertEquals(1, t.latency().size());
    CapacitySearch.Targets none = CapacitySearch.Targets.parse(List.of("e2e.mean<=1s"));
    assertEquals(0, none.rejectedFractionAllowed());
    assertEquals("rejected.fraction<=0", none.rejectedText());
    for (List<String> bad : List.of(List.of("e2e.mean<=1s", "rejected.fraction<=1.5"), List.of("e2e.mean<=1s", "rejected.fraction<=-0.1"),
        List.of("e2e.mean<=1s", "rejected.share<=0.1"), List.of("e2e.mean<=1s", "rejected.fraction<=0.1", "rejected.fraction<=0.2"),
        List.of("rejected.fraction<=0.1"))) {
      assertThrows(InputException.class, () -> CapacitySearch.Targets.parse(bad), bad.toString());
    }
  }

  @Test
  void aRejectedRequestFailsTheProbeUnlessAllowedSoAnEasyLatencyTargetIsNotEnough() throws IOException {
    // sharegpt's lengths on OPT-13B (max_model_len 2,048): some prompts are rejected at every rate.
    ServingSpec s = spec("requests:preset=sharegpt,count=50", "vllm");
    CapacitySearch.Capacity strict = CapacitySearch.search(s, List.of(CapacitySearch.Slo.parse("e2e.p50<=100000s")), 0.1, 1, 4).get(0);
    CapacitySearch.Probe low = strict.probes().get(0);
    assertEquals(1, strict.probes().size());
    assertTrue(low.latencyMet(), "the latency target holds");
    assertFalse(low.rejectionsMet());
    assertFalse(low.met());
    assertTrue(low.rejected() > 0 && low.rejected() < 50, "rejected: " + low.rejected());
    assertEquals(50, low.requests());
    assertEquals(0.0, strict.maxRate());
    assertTrue(strict.rejectsAtLowBound());
    double share = low.rejectedFraction();
    CapacitySearch.Capacity below = CapacitySearch.search(s, CapacitySearch.Targets.parse(List.of("e2e.p50<=100000s", "rejected.fraction<=" + (share - 0.01))),
        0.1, 1, 4).get(0);
    assertTrue(below.rejectsAtLowBound(), "an allowance below the share rejected still fails");
    CapacitySearch.Capacity allowed = CapacitySearch.search(s, CapacitySearch.Targets.parse(List.of("e2e.p50<=100000s", "rejected.fraction<=" + share)),
        0.1, 1, 4).get(0);
    assertTrue(allowed.atUpperBound());
    assertEquals(1.0, allowed.maxRate());
    assertEquals(1.0 - share, allowed.answer().goodputRps(), 1e-12);
    // A workload without rejections meets the default: every request finishes.
    CapacitySearch.Capacity clean = CapacitySearch.search(spec("requests:preset=alpaca,count=50", "vllm"),
        List.of(CapacitySearch.Slo.parse("e2e.p50<=100000s")), 0.1, 1, 4).get(0);
    assertTrue(clean.atUpperBound(), "alpaca's short prompts all finish");
    assertEquals(1.0, clean.answer().goodputRps(), 1e-12);
  }

  @Test
  void aWorkloadWithoutARateAndBadBoundsAreRefused() {
    CapacitySearch.Slo slo = CapacitySearch.Slo.parse("e2e.mean<=1s");
    ServingSpec s = spec("requests:count=10", "vllm");
    assertThrows(InputException.class, () -> CapacitySearch.search(s, List.of(slo), 2, 1, 3));
    assertThrows(InputException.class, () -> CapacitySearch.search(s, List.of(), 1, 2, 3));
  }

  /** Returns (n - 1) / span of a workload's arrivals, in requests/s. */
  private static double meanRate(ServingSpec s) throws IOException {
    long n = 0;
    long first = 0;
    long last = 0;
    try (kvsim.trace.RequestSource src = s.workload().open()) {
      kvsim.trace.Request r;
      while ((r = src.next()) != null) {
        first = n++ == 0 ? r.arrivalNanos() : first;
        last = r.arrivalNanos();
      }
    }
    return (n - 1) * 1e9 / (last - first);
  }

  @Test
  void aRecordedTraceRunsAtTheProbedMeanRateKeepingItsRequests(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws IOException {
    java.nio.file.Path trace = dir.resolve("t.jsonl");
    java.nio.file.Files.writeString(trace, "{\"format\":\"kvsim-requests\",\"version\":1}\n"
        + "{\"id\":0,\"t\":0,\"prompt_tokens\":10,\"output_tokens\":5}\n"
        + "{\"id\":1,\"t\":1000000000,\"prompt_tokens\":20,\"output_tokens\":5}\n"
        + "{\"id\":2,\"t\":1000000000,\"prompt_tokens\":30,\"output_tokens\":5}\n"
        + "{\"id\":3,\"t\":4000000000,\"prompt_tokens\":40,\"output_tokens\":5}\n");
    ServingSpec s = spec(trace.toString(), "vllm");
    assertEquals(0.75, s.recordedMeanRate(), 1e-12);
    ServingSpec fast = s.withRate(3);
    assertEquals(3, meanRate(fast), 1e-9);
    try (kvsim.trace.RequestSource src = fast.workload().open()) {
      assertEquals(0, src.next().arrivalNanos());
      assertEquals(250_000_000L, src.next().arrivalNanos(), "a gap of 1 s at 4x");
      assertEquals(250_000_000L, src.next().arrivalNanos(), "a burst stays a burst");
      assertEquals(40, src.next().promptTokens());
    }
    // An importer's own speedup is multiplied into the scaling: the mean rate measured includes it.
    ServingSpec azure = spec("burstgpt:../workloads/burstgpt-sample.csv,speedup=2,zero-output=drop", "vllm");
    assertEquals(2 * 45 / 182.0, azure.recordedMeanRate(), 1e-12);
    assertEquals(10, meanRate(azure.withRate(10)), 1e-6);
    assertEquals(2 * 10 / (2 * 45 / 182.0), Double.parseDouble(azure.withRate(10).workload().params().get("speedup")), 1e-9);
  }

  @Test
  void theRealAzureConversationTraceIsScaledFromItsOwnMeanRate() throws IOException {
    java.nio.file.Path f = kvsim.testing.SharedData.require("serving-traces/AzureLLMInferenceTrace_conv.csv");
    ServingSpec s = ServingSpec.resolve(ServingSpec.Request.of("azure:" + f, List.of("vllm"),
        Settings.none().and(ServingSettings.MODEL, "llama-2-7b").and(ServingSettings.DEVICE, "h100-80")));
    // STATS.md: 19,366 requests over 3,501.7 s, a mean rate of 19,365 / 3,501.7 = 5.53 requests/s.
    double mean = s.recordedMeanRate();
    assertEquals(19_365 / 3_501.721937, mean, 1e-9);
    assertEquals(12, meanRate(s.withRate(12)), 1e-6);
  }
}

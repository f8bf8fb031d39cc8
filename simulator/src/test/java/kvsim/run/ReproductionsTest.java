package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.report.CapacityResults;
import kvsim.report.ReproductionFolder;
import kvsim.report.ResultFolder;
import kvsim.report.ResultsReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The vLLM paper's reproductions at a reduced request count: their tables carry the paper's numbers
 * beside kvsim's with the deviation, and vllm-fig12's capacity searches are result folders of their own.
 */
class ReproductionsTest {
  private static final int REQUESTS = 150;

  @TempDir Path tmp;

  @Test
  void fig12GivesVllmsRateOverEachBaselineAtThreeThresholdsBesideThePapersRanges() throws IOException {
    Reproductions.Reproduction r = Reproductions.run("vllm-fig12", "test", REQUESTS, null);
    assertEquals(List.of("threshold", "ratio", "vllm rate", "other's rate", "kvsim ratio", "paper", "inside the paper's range"), r.header());
    assertEquals(Reproductions.FIG12_THRESHOLDS.size() * 3, r.rows().size());
    assertEquals(List.of("0.5 s/token", "vllm / orca-max"), r.rows().get(0).subList(0, 2));
    for (List<String> row : r.rows()) {
      String expected = switch (row.get(1)) {
        case "vllm / orca-oracle" -> "1.7×–2.7×";
        case "vllm / orca-max" -> "2.7×–8×";
        case "vllm / orca-pow2" -> "not given";
        default -> throw new AssertionError(row);
      };
      assertEquals(expected, row.get(5), row.toString());
      assertTrue(row.get(4).matches("[0-9]+\\.[0-9]{2}×|none"), row.toString());
      assertTrue(List.of("yes", "no, below", "no, above", "not given", "none").contains(row.get(6)), row.toString());
    }
    // One capacity search per threshold, each with every system and its probes.
    assertEquals(List.of("capacity-0.5s-per-token", "capacity-0.2s-per-token", "capacity-1s-per-token"),
        r.searches().stream().map(Reproductions.Search::name).toList());
    for (Reproductions.Search s : r.searches()) {
      assertEquals(Reproductions.VLLM_SYSTEMS, s.results().systems().stream().map(CapacityResults.SystemEntry::system).toList());
    }
    // The numbers are the searches' answers, and the ratio is their quotient.
    @SuppressWarnings("unchecked")
    Map<String, Map<String, Object>> capacity = (Map<String, Map<String, Object>>) r.numbers().get("capacity_rps");
    @SuppressWarnings("unchecked")
    Map<String, Map<String, Object>> ratio = (Map<String, Map<String, Object>>) r.numbers().get("vllm_rate_ratio");
    assertEquals(List.of("0.5", "0.2", "1"), List.copyOf(capacity.keySet()));
    CapacityResults.SystemEntry vllm = r.searches().get(0).results().systems().get(3);
    CapacityResults.SystemEntry oracle = r.searches().get(0).results().systems().get(2);
    assertEquals(vllm.maxRateRps(), ((Double) capacity.get("0.5").get("vllm")).doubleValue());
    assertEquals(vllm.maxRateRps() / oracle.maxRateRps(), ((Double) ratio.get("0.5").get("orca-oracle")).doubleValue(), 1e-12);
    // A looser threshold never lowers a rate the same probes met under a tighter one.
    assertTrue((Double) capacity.get("1").get("vllm") >= (Double) capacity.get("0.2").get("vllm"));
  }

  @Test
  void table1PutsKvsimsMemoryPlanOfTheThreeSetupsBesideThePapersAndServesTheSplitOne() throws IOException {
    Reproductions.Reproduction r = Reproductions.run("vllm-table1", "test", REQUESTS, null);
    assertEquals(List.of("setup", "quantity", "kvsim", "paper", "deviation"), r.header());
    // Three quantities per setup, then two per system of the 66B serving run.
    assertEquals(9 + 2 * Reproductions.VLLM_SYSTEMS.size(), r.rows().size());
    assertEquals(List.of("OPT-66B, 4×A100-40GB", "parameter size", "131.4 GB (32.9 per GPU)", "132 GB", "-0.4 %"), r.rows().get(3));
    // 5,719,357,440 B per GPU × 4 = 21.31 GiB beside the paper's 21.
    assertEquals(List.of("OPT-66B, 4×A100-40GB", "memory for the KV cache", "21.3 GiB (5.33 per GPU)", "21 GB", "+1.5 %"), r.rows().get(4));
    // 606 blocks × 16 = 9,696 slots beside 9.7K.
    assertEquals(List.of("OPT-66B, 4×A100-40GB", "max. KV cache slots", "9.7K", "9.7K", "-0.0 %"), r.rows().get(5));
    assertEquals(List.of("OPT-13B, 1×A100-40GB", "max. KV cache slots", "15.6K", "15.7K", "-0.6 %"), r.rows().get(2));
    assertEquals("OPT-175B, 8×A100-80GB", r.rows().get(8).get(0));
    @SuppressWarnings("unchecked")
    Map<String, Map<String, Object>> setups = (Map<String, Map<String, Object>>) r.numbers().get("setups");
    assertEquals(32_859_850_752L, setups.get("opt-66b").get("weight_bytes_per_gpu"));
    assertEquals(9_696L, setups.get("opt-66b").get("kv_slots"));
    assertEquals(8, setups.get("opt-175b").get("gpus"));
    // The serving run is the 66B setup on 4 GPUs, every system of the paper's comparison.
    assertEquals(1, r.servings().size());
    assertEquals(4, r.servings().get(0).results().config().get("tensor_parallel"));
    assertEquals(Reproductions.VLLM_SYSTEMS, r.servings().get(0).results().entries().stream().map(e -> e.system()).toList());
  }

  @Test
  void fig13PutsTheFiguresBarLabelsAndTheDeviationBesideKvsim() throws IOException {
    Reproductions.Reproduction r = Reproductions.run("vllm-fig13", "test", REQUESTS, null);
    assertEquals(List.of("workload", "system", "kvsim", "paper", "deviation", "kvsim's mean e2e latency", "paper's mean e2e latency (batch ÷ rate)"),
        r.header());
    assertEquals(8, r.rows().size());
    assertEquals("≥ 4.41 s", r.rows().get(7).get(6), "Little's law: 132.44 requests at 30 requests/s");
    assertEquals("≥ 15.21 s", r.rows().get(3).get(6), "30.42 requests at 2 requests/s");
    assertEquals(List.of("ShareGPT @ 2 req/s", "vllm"), r.rows().get(3).subList(0, 2));
    assertEquals("30.42", r.rows().get(3).get(3));
    assertEquals("132.44", r.rows().get(7).get(3));
    assertEquals("7.00", r.rows().get(4).get(3));
    for (List<String> row : r.rows()) {
      double kvsim = Double.parseDouble(row.get(2));
      double paper = Double.parseDouble(row.get(3));
      assertEquals(String.format(java.util.Locale.ROOT, "%+.0f %%", 100 * (kvsim / paper - 1)), row.get(4), row.toString());
    }
    assertEquals(List.of("sharegpt-2rps", "alpaca-30rps"), r.servings().stream().map(Reproductions.Serving::name).toList());
    assertTrue(r.notes().contains("Setup differences."));
  }

  @Test
  void fig2ComparesEachUseOfUsedMemoryInPercentagePointsAndVllmsRemainderAsOne() throws IOException {
    Reproductions.Reproduction r = Reproductions.run("vllm-fig2", "test", REQUESTS, null);
    assertEquals(List.of("system", "use", "kvsim (steady window)", "kvsim (whole run)", "paper", "deviation (pp, steady)"), r.header());
    // Four uses and the idle row for each Orca system, two uses and the idle row for vLLM (its bar
    // gives token states and one remainder).
    assertEquals(3 * 5 + 3, r.rows().size());
    assertEquals(List.of("orca-max", "internal fragmentation"), r.rows().get(2).subList(0, 2));
    assertEquals("57.3 %", r.rows().get(2).get(4));
    assertEquals(List.of("vllm", "all other uses"), r.rows().get(16).subList(0, 2));
    assertEquals("3.7 %", r.rows().get(16).get(4));
    assertTrue(r.rows().get(17).get(1).startsWith("idle"), r.rows().get(17).toString());
    for (String system : Reproductions.VLLM_SYSTEMS) {
      for (int column : new int[] {2, 3}) {
        double sum = r.rows().stream().filter(row -> row.get(0).equals(system) && !row.get(1).startsWith("idle"))
            .mapToDouble(row -> Double.parseDouble(row.get(column).replace(" %", ""))).sum();
        assertEquals(100, sum, 0.25, system + ": the uses cover the memory in use");
      }
    }
    for (List<String> row : r.rows()) {
      if (row.get(1).startsWith("idle")) {
        double idle = Double.parseDouble(row.get(2).replace(" %", ""));
        assertTrue(idle >= 0 && idle <= 100, row.toString());
        continue;
      }
      double kvsim = Double.parseDouble(row.get(2).replace(" %", ""));
      double paper = Double.parseDouble(row.get(4).replace(" %", ""));
      assertEquals(kvsim - paper, Double.parseDouble(row.get(5)), 0.051, row.toString());
    }
  }

  @Test
  void fig12sFolderReadsBackWithEachSearchAsACapacityResult() throws IOException {
    Reproductions.Reproduction r = Reproductions.run("vllm-fig12", "test", REQUESTS, null);
    Path dir = tmp.resolve("fig12");
    ReproductionFolder.write(ResultFolder.Target.at(dir, ResultFolder.Kind.REPRODUCTION, false), r.results(), r.notes(), r.parts());
    assertEquals(r.rows(), ReproductionFolder.read(dir).rows());
    for (Reproductions.Search s : r.searches()) {
      CapacityResults back = ResultsReader.readCapacity(dir.resolve(s.name()));
      assertEquals(s.results().systems().get(3).maxRateRps(), back.systems().get(3).maxRateRps());
    }
    assertTrue(Files.readString(dir.resolve("README.md")).contains("|threshold|ratio|vllm rate|"));
  }
}

package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** What-if grids: parsing, the order of cells, each setting reaching the system it applies to, and bad settings refused before any run. */
class ServingGridTest {
  private static ServingSpec.Request request(String... systems) {
    return ServingSpec.Request.of("requests:preset=sharegpt,rate=4,count=120", List.of(systems),
        Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.KV_MEMORY, "12GiB"));
  }

  private static List<ServingGrid.Cell> cells(ServingSpec.Request r, String... sets) {
    return ServingGrid.cells(r, ServingGrid.parse(List.of(sets)));
  }

  @Test
  void cellsAreTheCrossProductFirstSetSlowestSystemFastest() {
    List<ServingGrid.Cell> cells = cells(request("vllm", "orca-oracle"), "max-num-batched-tokens=2048,4096", "max-num-seqs=32,64,128");
    assertEquals(12, cells.size());
    assertEquals("vllm max-num-batched-tokens=2048 max-num-seqs=32", cells.get(0).label());
    assertEquals("orca-oracle max-num-batched-tokens=2048 max-num-seqs=32", cells.get(1).label());
    assertEquals("vllm max-num-batched-tokens=2048 max-num-seqs=64", cells.get(2).label());
    assertEquals("orca-oracle max-num-batched-tokens=4096 max-num-seqs=128", cells.get(11).label());
    assertEquals(4096, cells.get(11).spec().scheduler().maxNumBatchedTokens());
    assertEquals(128, cells.get(11).spec().scheduler().maxNumSeqs());
    assertEquals(List.of("orca-oracle"), cells.get(11).spec().systems());
    List<ServingGrid.Cell> plain = cells(request("vllm", "orca-max"));
    assertEquals(2, plain.size());
    assertEquals(Map.of(), plain.get(0).settings());
    assertEquals("orca-max", plain.get(1).label());
  }

  @Test
  void kvMemoryAndUtilisationReplaceEachOtherAndWatermarkReachesV0() {
    List<ServingGrid.Cell> cells = cells(request("vllm-v0"), "gpu-memory-utilization=0.9", "watermark=0.01,0.2");
    ServingSpec byUtilisation = ServingSpec.resolve(ServingSpec.Request.of("requests:preset=sharegpt,rate=4,count=120", List.of("vllm-v0"),
        Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.GPU_MEMORY_UTILIZATION, "0.9")));
    assertEquals(byUtilisation.kvMemoryBytes(), cells.get(0).spec().kvMemoryBytes(), "utilisation replaces the command line's --kv-memory");
    assertTrue(byUtilisation.kvMemoryBytes() != 12L << 30);
    assertEquals(0.2, cells.get(1).spec().scheduler().watermark());
    ServingGrid.Cell kv = cells(request("vllm"), "kv-memory=6GiB").get(0);
    assertEquals(6L << 30, kv.spec().kvMemoryBytes());
    assertEquals(false, ServingGrid.sameKvMemory(cells(request("vllm"), "kv-memory=6GiB,12GiB")));
  }

  @Test
  void aWatermarkChangesWhatV0AdmitsAndAnAllocatorOptionReachesTheBuddy() throws IOException {
    List<ServingGrid.Cell> cells = cells(request("vllm-v0"), "watermark=0.01,0.9");
    List<ServingRunner.SystemResult> rs = new ServingRunner(2).runCells(cells, null);
    assertEquals(0.9, rs.get(1).parts().get("watermark"));
    assertTrue(rs.get(1).metrics().rejected() > rs.get(0).metrics().rejected(),
        "a 90 % watermark leaves requests that v0 can never admit: " + rs.get(0).metrics().rejected() + " vs " + rs.get(1).metrics().rejected());
    List<ServingGrid.Cell> buddy = cells(request("orca-max"), "buddy.min-block=2MiB,64MiB");
    List<ServingRunner.SystemResult> b = new ServingRunner(2).runCells(buddy, null);
    assertEquals("67108864", String.valueOf(((Map<?, ?>) b.get(1).parts().get("allocator_options")).get("min-block")));
    assertEquals("2097152", String.valueOf(((Map<?, ?>) b.get(0).parts().get("allocator_options")).get("min-block")));
  }

  @Test
  void badSettingsFailBeforeAnyRun() {
    assertTrue(assertThrows(InputException.class, () -> ServingGrid.parse(List.of("blocksize=8"))).getMessage()
        .contains("'blocksize' is not a serving setting"));
    assertTrue(assertThrows(InputException.class, () -> ServingGrid.parse(List.of("block-size=8", "block-size=16"))).getMessage()
        .contains("block-size is given twice"));
    assertTrue(assertThrows(InputException.class, () -> ServingGrid.parse(List.of("block-size=8,,16"))).getMessage().contains("an empty value"));
    assertTrue(assertThrows(InputException.class, () -> cells(request("vllm"), "block-size=eight")).getMessage()
        .contains("--set block-size=eight: 'eight' is not a whole number"));
    InputException notTested = assertThrows(InputException.class, () -> cells(request("vllm", "orca-max"), "slab.block-size=4MiB"));
    assertTrue(notTested.getMessage().contains("allocator 'slab' is not under test in the systems run [vllm, orca-max] (allocators under test: [buddy])"),
        notTested.getMessage());
    InputException unknown = assertThrows(InputException.class, () -> cells(request("orca-max"), "buddy.block=4MiB"));
    assertTrue(unknown.getMessage().startsWith("--set buddy.block: "), unknown.getMessage());
    assertTrue(unknown.getMessage().contains("unknown option 'block'"), unknown.getMessage());
    assertTrue(assertThrows(InputException.class, () -> cells(request("vllm-v0"), "watermark=1")).getMessage()
        .contains("--set watermark=1: must be in [0, 1), got 1.0"));
  }

  @Test
  void aKeyThatASystemOfTheGridDoesNotReadIsAnErrorNamingThatSystem() {
    String alone = assertThrows(InputException.class, () -> cells(request("vllm"), "watermark=0.05")).getMessage();
    assertTrue(alone.startsWith("--set watermark=0.05: vllm does not read watermark (vllm-v0 does)"), alone);
    String mixed = assertThrows(InputException.class, () -> cells(request("vllm-v0", "vllm"), "watermark=0.01,0.05")).getMessage();
    assertTrue(mixed.startsWith("--set watermark=0.01,0.05: vllm does not read watermark"), mixed);
    String blocks = assertThrows(InputException.class, () -> cells(request("vllm", "orca-max"), "block-size=8,16")).getMessage();
    assertTrue(blocks.contains(": orca-max does not read block-size (vllm, vllm-v0 do)"), blocks);
    String seqs = assertThrows(InputException.class, () -> cells(request("hf-naive"), "max-num-seqs=1,2")).getMessage();
    assertTrue(seqs.contains("hf-naive does not read max-num-seqs"), seqs);
    String paged = assertThrows(InputException.class, () -> cells(request("vattention"), "block-size=8")).getMessage();
    assertTrue(paged.contains("vattention does not read block-size"), paged);
    String buddy = assertThrows(InputException.class, () -> cells(request("orca-max", "vllm"), "buddy.min-block=2MiB")).getMessage();
    assertTrue(buddy.startsWith("--set buddy.min-block=2MiB: vllm does not read buddy.min-block (orca-max, orca-pow2, orca-oracle do)"), buddy);
    assertEquals(4, cells(request("vllm-v0", "vllm"), "kv-memory=6GiB,12GiB").size(), "a key every system reads still makes cells");
  }

  @Test
  void whatOnlyABuildFindsFailsWhenTheCellsAreMadeNamingTheCell() {
    // 1700 MiB holds max_model_len's blocks for vLLM, but the buddy's largest block is 1 GiB: 1,310 OPT-13B tokens.
    String tooSmall = assertThrows(InputException.class, () -> cells(request("vllm", "orca-max"), "kv-memory=12GiB,1700MiB")).getMessage();
    assertTrue(tooSmall.startsWith("the cell orca-max kv-memory=1700MiB: orca-max: buddy over KV memory of 1.66 GiB gives one sequence at most 1310 tokens"),
        tooSmall);
  }
}

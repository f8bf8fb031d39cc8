package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** What-if grids: parsing, the order of cells, each setting reaching the system it applies to, and bad settings refused before any run. */
class ServingGridTest {
  private static ServingSpec.Request request(String... systems) {
    return new ServingSpec.Request("requests:preset=sharegpt,rate=4,count=120", List.of(systems), "opt-13b", "a100-40", "12GiB", null, null, null,
        null, null, false);
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
    ServingSpec byUtilisation = ServingSpec.resolve(new ServingSpec.Request("requests:preset=sharegpt,rate=4,count=120", List.of("vllm-v0"),
        "opt-13b", "a100-40", null, 0.9, null, null, null, null, false));
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
        .contains("'blocksize' is not a serving option"));
    assertTrue(assertThrows(InputException.class, () -> ServingGrid.parse(List.of("block-size=8", "block-size=16"))).getMessage()
        .contains("block-size is given twice"));
    assertTrue(assertThrows(InputException.class, () -> ServingGrid.parse(List.of("block-size=8,,16"))).getMessage().contains("an empty value"));
    assertTrue(assertThrows(InputException.class, () -> cells(request("vllm"), "block-size=eight")).getMessage()
        .contains("--set block-size=eight: not an integer"));
    InputException notTested = assertThrows(InputException.class, () -> cells(request("vllm", "orca-max"), "slab.block-size=4MiB"));
    assertTrue(notTested.getMessage().contains("allocator 'slab' is not under test in the systems run [vllm, orca-max] (allocators under test: [buddy])"),
        notTested.getMessage());
    InputException unknown = assertThrows(InputException.class, () -> cells(request("orca-max"), "buddy.block=4MiB"));
    assertTrue(unknown.getMessage().startsWith("--set buddy.block: "), unknown.getMessage());
    assertTrue(unknown.getMessage().contains("unknown option 'block'"), unknown.getMessage());
    assertTrue(assertThrows(InputException.class, () -> cells(request("vllm-v0"), "watermark=1")).getMessage().contains("--watermark: must be in [0, 1)"));
  }
}

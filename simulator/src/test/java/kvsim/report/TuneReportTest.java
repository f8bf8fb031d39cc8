package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The tune folder's text and tables, from results made by hand. */
class TuneReportTest {
  private static TuneResults results() {
    TuneResults.Cell def = new TuneResults.Cell(0, "grid", Map.of("expandable_segments", "False"), "(defaults)", 3, 110L << 20, 100L << 20, 2_000_000, 0.5,
        false, 3);
    TuneResults.Cell simple = new TuneResults.Cell(1, "grid", Map.of("expandable_segments", "True"), "expandable_segments:True", 0, 101L << 20, 100L << 20,
        1_010_000, 0.1, false, 1);
    TuneResults.Cell fast = new TuneResults.Cell(2, "refine-1", Map.of("expandable_segments", "True"), "expandable_segments:True,roundup_power2_divisions:16", 0,
        101L << 20, 100L << 20, 1_000_000, 0.1, true, 2);
    return new TuneResults(Map.of("input", "t.jsonl"), "pytorch-caching", true, Map.of("cells", 3, "grid_cells", 2, "refinement_cells", 1, "refinement", "r"),
        List.of(def, simple, fast), 0, 1, List.of(2), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  }

  @Test
  void printsTheDefaultTheRecommendationAndAFrontWithoutIt() {
    StringWriter s = new StringWriter();
    TuneReport.print(new PrintWriter(s, true), results());
    String out = s.toString();
    assertTrue(out.contains("default         3     110.00 MiB    2.000 ms  (defaults)"), out);
    assertTrue(out.contains("recommended     0     101.00 MiB    1.010 ms  expandable_segments:True\n"), out);
    // The front's one cell is not the recommendation: its mark column is blank.
    assertTrue(out.contains("      0     101.00 MiB    1.000 ms  expandable_segments:True,roundup_power2_divisions:16"), out);
    assertTrue(out.endsWith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"), out);
  }

  @Test
  void theCsvHasOneRowPerCellInTheOrderTried() {
    List<String> lines = TuneReport.csv(results()).lines().toList();
    assertEquals("order,phase,expandable_segments,oom_count,peak_reserved_bytes,peak_allocated_bytes,modelled_allocator_nanos,peak_external_fragmentation,on_front,rank",
        lines.get(0));
    assertEquals(4, lines.size());
    assertEquals("2,refine-1,True,0,105906176,104857600,1000000,0.1,true,2", lines.get(3));
  }
}

package kvsim.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** Grid files: values or lists, seed ranges, and every mistake named by file, line and field. */
class GridSpecTest {
  private static GridSpec parse(String text) {
    return GridSpec.parse("g.yaml", text, Path.of("/grids"));
  }

  private static String error(String text) {
    return assertThrows(InputException.class, () -> parse(text)).getMessage();
  }

  @Test
  void singleValuesAndListsAndSeedRangesAreRead() {
    GridSpec g = parse("workloads: churn:ops=10\nallocators: [first-fit, buddy]\nset: {first-fit.alignment: [512, 2MiB]}\nseeds: 3..5\ndevice: a100-80\n");
    assertEquals(List.of("churn:ops=10"), g.workloads());
    assertEquals(List.of("first-fit", "buddy"), g.allocators());
    assertEquals(List.of(3L, 4L, 5L), g.seeds());
    assertEquals(List.of("512", "2MiB"), g.sets().get("first-fit.alignment"));
    assertEquals(List.of("a100-80"), g.devices());
    assertFalse(g.serving());
  }

  @Test
  void servingGridsNameSystemsAndServingOptions() {
    GridSpec g = parse("workloads: [\"requests:count=5\"]\nsystems: vllm\nset:\n  block-size: [8, 16]\nseeds: [1, 9]\n");
    assertTrue(g.serving());
    assertEquals(List.of(1L, 9L), g.seeds());
    assertEquals(List.of("8", "16"), g.sets().get("block-size"));
  }

  @Test
  void mistakesNameTheFileLineAndField() {
    assertEquals("g.yaml:2: alocators: unknown field (known: workloads, allocators, systems, seeds, device, model, set, plan, calibration)",
        error("workloads: [churn]\nalocators: [first-fit]\n"));
    assertTrue(error("workloads: [churn]\nallocators: [a]\nsystems: [vllm]\n").contains("give either allocators (L1 cells) or systems"));
    assertTrue(error("allocators: [first-fit]\n").contains("workloads: a grid needs at least one workload"), error("allocators: [first-fit]\n"));
    assertTrue(error("workloads: [churn]\nallocators: [a]\nseeds: 5..1\n").startsWith("g.yaml:3: seeds: the range 5..1 is empty"));
    assertTrue(error("workloads: [churn]\nallocators: [a]\nseeds: [1, x]\n").contains("seeds: 'x' is not a whole number"));
    assertTrue(error("workloads: [churn]\nallocators: [a]\nset:\n  alignment: [1]\n").startsWith("g.yaml:4: set.alignment: an L1 option is written ALLOCATOR.KEY"));
    assertTrue(error("workloads: [x]\nsystems: [vllm]\nset:\n  watermarks: [1]\n").contains("set.watermarks: 'watermarks' is not a serving setting"));
    assertTrue(error("workloads: [x]\nsystems: [vllm]\nplan: {weights: 1GiB}\n").contains("plan: applies to L1 cells only"));
    assertTrue(error("workloads: [x\n").startsWith("g.yaml:"), error("workloads: [x\n"));
  }

  @Test
  void errorsAfterParsingNameTheLineOfTheValueItself() {
    GridSpec g = parse("workloads: [\"churn:ops=10\"]\nallocators: [first-fit, buddy]\nset:\n  first-fit.alignment:\n    - 512\n    - banana\n"
        + "  buddy.min-block: [4KiB, 8KiB]\nplan: {weights: 1GiB}\n");
    assertEquals("g.yaml:6: set.first-fit.alignment: bad", g.error("set.first-fit.alignment", 1, "bad").getMessage());
    assertEquals("g.yaml:4: set.first-fit.alignment: bad", g.error("set.first-fit.alignment", -1, "bad").getMessage());
    assertEquals("g.yaml:7: set.buddy.min-block: bad", g.error("set.buddy.min-block", 1, "bad").getMessage());
    assertEquals("g.yaml:2: allocators: bad", g.error("allocators", 1, "bad").getMessage());
    assertEquals("g.yaml:8: plan.weights: bad", g.error("plan.weights", -1, "bad").getMessage());
    assertEquals("g.yaml:1: workloads: bad", g.error("workloads", 0, "bad").getMessage());
  }

  @Test
  void aValueGivenTwiceIsAMistakeAtItsSecondLine() {
    assertEquals("g.yaml:4: allocators: 'first-fit' given twice", error("workloads: [churn]\nallocators:\n  - first-fit\n  - first-fit\n"));
    assertEquals("g.yaml:6: set.first-fit.alignment: '512' given twice",
        error("workloads: [churn]\nallocators: [first-fit]\nset:\n  first-fit.alignment:\n    - 512\n    - 512\n"));
    assertEquals("g.yaml:3: seeds: '1' given twice", error("workloads: [churn]\nallocators: [a]\nseeds: [1, 2, 1]\n"));
    assertEquals("g.yaml:3: seeds: the seed 1 given twice", error("workloads: [churn]\nallocators: [a]\nseeds: [1, 2, '01']\n"));
    assertTrue(error("workloads: [churn, churn]\nallocators: [a]\n").startsWith("g.yaml:1: workloads: 'churn' given twice"));
  }

  // Found by ReaderFuzzTest: the widest range passed the size check by overflow and filled the heap;
  // a range ending at 2^63-1 looped for ever.
  @Test
  void seedRangesAtTheEndsOfTheLongsAreBoundedAndEnd() {
    assertEquals("g.yaml:2: seeds: the range -9223372036854775808..9223372036854775807 holds more than 10,000,000 seeds",
        error("workloads: churn\nseeds: -9223372036854775808..9223372036854775807\nallocators: buddy\n"));
    GridSpec g = parse("workloads: churn\nallocators: buddy\nseeds: 9223372036854775806..9223372036854775807\n");
    assertEquals(List.of(Long.MAX_VALUE - 1, Long.MAX_VALUE), g.seeds());
  }

  // Found probing the readers beside ReaderFuzzTest: a workload holding a NUL was read, and failed as an InvalidPathException when run.
  @Test
  void aNulInAWorkloadIsRefusedAtItsLine() {
    assertEquals("g.yaml:1: workloads: cannot be a file name: it holds a NUL or a lone UTF-16 surrogate",
        error("workloads: [churn, \"t\\0.jsonl\"]\nallocators: buddy\n"));
  }

  // Found probing the readers beside ReaderFuzzTest: a key given twice silently kept the last value, and a second
  // YAML document was silently ignored.
  @Test
  void aKeyGivenTwiceAndASecondDocumentAreRefused() {
    assertEquals("g.yaml:2: bad YAML: Duplicate field 'workloads'", error("workloads: churn\nworkloads: buddy\nallocators: buddy\n"));
    assertEquals("g.yaml:4: a second YAML document; a grid file is one document", error("workloads: churn\nallocators: buddy\n---\nseeds: 5\n"));
  }
}

package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import kvsim.core.InputException;
import kvsim.report.ResultsWriter;
import kvsim.report.SweepResults;
import org.junit.jupiter.api.Test;

/** The run library gives the same results whatever the number of threads, in the order asked for. */
class RunnerTest {

  private static RunSpec spec(String workload, List<String> allocators) {
    RunRequest request = RunRequest.of(workload).withAllocators(allocators);
    return RunSpec.resolve(request, new PrintWriter(new StringWriter()));
  }

  private static String json(Object tree) throws IOException {
    return ResultsWriter.json().writeValueAsString(tree);
  }

  @Test
  void aSweepIsTheSameOnOneThreadAndOnMany() throws IOException {
    RunSpec spec = spec("churn:ops=300", List.of("first-fit", "paged", "slab"));
    long[] seeds = {7, 1, 3, 5, 2, 9};
    SweepResult one = new Runner("test", 1).sweep(spec, seeds, null);
    SweepResult many = new Runner("test", 4).sweep(spec, seeds, null);
    String a = json(ResultsWriter.sweepSummary(SweepResults.of(one.config(), one.seeds(), one.sweeps())));
    assertEquals(a, json(ResultsWriter.sweepSummary(SweepResults.of(many.config(), many.seeds(), many.sweeps()))));
    assertEquals(List.of("first-fit", "paged", "slab"), List.copyOf(one.sweeps().keySet()));
    List<Long> seedOrder = one.sweeps().get("paged").perSeed().stream().map(r -> r.seed()).toList();
    assertEquals(List.of(7L, 1L, 3L, 5L, 2L, 9L), seedOrder, "seeds in the order given");
  }

  @Test
  void aSweepCellEqualsTheSingleRunOfItsSeed() throws IOException {
    RunSpec spec = spec("churn:ops=500", List.of("first-fit"));
    SweepResult sweep = new Runner("test", 2).sweep(spec, new long[] {4, 11}, null);
    RunResult single = new Runner("test", 2).run(spec("churn:ops=500,seed=11", List.of("first-fit")), name -> null, null);
    Double peak = sweep.sweeps().get("first-fit").perSeed().get(1).headlines().get("external_fragmentation.peak");
    assertEquals(single.results().get(0).headline("external_fragmentation.peak"), peak);
  }

  @Test
  void runResultsKeepTheAllocatorOrderWhateverTheThreads() throws IOException {
    RunSpec spec = spec("churn:ops=400", List.of("slab", "first-fit", "paged", "multi-slab"));
    RunResult one = new Runner("test", 1).run(spec, name -> null, null);
    RunResult many = new Runner("test", 4).run(spec, name -> null, null);
    assertEquals(
        json(ResultsWriter.summary(one.config(), one.results())), json(ResultsWriter.summary(many.config(), many.results())));
    assertEquals(List.of("slab", "first-fit", "paged", "multi-slab"), one.results().stream().map(r -> r.allocator()).toList());
    assertEquals(400, one.events());
  }

  @Test
  void anEmptyWorkloadIsRefused() {
    InputException e = assertThrows(InputException.class, () -> new Runner("test").run(spec("churn:ops=0", List.of("slab")), n -> null, null));
    assertTrue(e.getMessage().contains("no events"), e.getMessage());
  }
}

package kvsim.gpu.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.gpu.replay.GpuReplay;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import kvsim.testing.CliRun;
import kvsim.trace.TraceEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The planner's rules beyond the golden plans: probes, teardown, bad traces, a trace file as source, pages below the granularity. */
class PlannerTest {
  @TempDir Path tmp;

  private static final long MiB = 1L << 20;

  @Test
  void rawProbesEveryNEventsAndAtTheEndThenFreesWhatIsLive() throws IOException {
    List<TraceEvent> events = List.of(
        TraceEvent.alloc(1, 10, MiB, Tag.KV, true, 0),
        TraceEvent.alloc(2, 11, 3 * MiB, Tag.KV, true, 0),
        TraceEvent.free(3, 10, 0),
        TraceEvent.alloc(4, 12, 5 * MiB, Tag.KV, true, 0),
        TraceEvent.alloc(5, 13, 7 * MiB, Tag.KV, true, 0));
    Plan plan = Planner.raw(new PlanPropertyTest.ListSource(events), "t", 2);
    assertEquals(List.of(
        "{\"op\":\"alloc\",\"event\":1,\"id\":10,\"size_bytes\":1048576}",
        "{\"op\":\"alloc\",\"event\":2,\"id\":11,\"size_bytes\":3145728}",
        "{\"op\":\"probe\",\"event\":2}",
        "{\"op\":\"free\",\"event\":3,\"id\":10}",
        "{\"op\":\"alloc\",\"event\":4,\"id\":12,\"size_bytes\":5242880}",
        "{\"op\":\"probe\",\"event\":4}",
        "{\"op\":\"alloc\",\"event\":5,\"id\":13,\"size_bytes\":7340032}",
        "{\"op\":\"probe\",\"event\":5}",
        "{\"op\":\"free\",\"event\":0,\"id\":11}",
        "{\"op\":\"free\",\"event\":0,\"id\":12}",
        "{\"op\":\"free\",\"event\":0,\"id\":13}"),
        plan.ops().stream().map(PlanOp::toJsonLine).toList());
    assertEquals(5, plan.events());
  }

  @Test
  void rawRefusesAFreeOfWhatIsNotLive() {
    List<TraceEvent> events = List.of(TraceEvent.alloc(1, 1, MiB, Tag.KV, true, 0), TraceEvent.free(2, 2, 0));
    InputException e = assertThrows(InputException.class, () -> Planner.raw(new PlanPropertyTest.ListSource(events), "t.jsonl", 10));
    assertEquals("t.jsonl: event 2: free of id 2, which is not live", e.getMessage());
  }

  @Test
  void aTraceFilePlansAsItsGeneratorDoes() throws IOException {
    Path trace = tmp.resolve("churn.jsonl");
    CliRun.of("generate", "churn", "--ops", "100", "--seed", "0", "-o", trace.toString()).ok();
    Plan fromFile = PlanGoldenTest.planOf(trace.toString(), "raw", "first-fit", null);
    Plan fromGenerator = PlanGoldenTest.plan("raw", "first-fit", null);
    assertEquals(fromGenerator.ops(), fromFile.ops());
  }

  @Test
  void pagesBelowTheGranularityAreBadInput() {
    RunRequest request = RunRequest.of(PlanGoldenTest.WORKLOAD).withAllocators(List.of("vattention")).withSettings(List.of("vattention.page-size=64KiB"));
    RunSpec spec = RunSpec.resolve(request, new PrintWriter(new StringWriter()));
    InputException e = assertThrows(InputException.class, () -> GpuReplay.plan(new GpuReplay.Setting(spec, true, 25), 2 * MiB));
    assertTrue(e.getMessage().startsWith("arena mode: vattention maps "), e.getMessage());
    assertTrue(e.getMessage().endsWith("not in whole device pages of 2097152 bytes (is its page size below the device's granularity?)"), e.getMessage());
  }
}

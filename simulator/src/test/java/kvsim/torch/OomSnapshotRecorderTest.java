package kvsim.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import kvsim.run.Runner;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link OomSnapshotRecorder}: the snapshot written at a run's first OOM holds the allocator's state
 * at that refusal, as the allocator itself reports it there, and ends with the refusal.
 */
class OomSnapshotRecorderTest {
  @TempDir Path dir;

  /** What the allocator says of itself inside the refusal that is captured, heard after the recorder. */
  private static final class Probe implements AllocatorListener {
    final OomSnapshotRecorder.Trigger trigger;
    Allocator allocator;
    long events;
    long refusals;
    List<SegmentLayout> layout;
    long allocatedBytes;
    long reservedBytes;
    long freeBytes;
    long expectedSize;
    long stream;
    long event;
    OomReason reason;
    /** The allocated bytes after the event that follows the refusal: the state moved on. */
    long allocatedAfter = -1;

    Probe(OomSnapshotRecorder.Trigger trigger) {
      this.trigger = trigger;
    }

    @Override
    public void attach(Allocator a) {
      allocator = a;
    }

    @Override
    public void time(long timeNanos) {
      events++;
    }

    @Override
    public void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {
      refusals++;
      if (layout != null || !trigger.matches(outcome.reason())) {
        return;
      }
      layout = allocator.layout();
      allocatedBytes = allocator.stats().allocatedBytes();
      reservedBytes = allocator.stats().reservedBytes();
      freeBytes = outcome.freeBytes();
      expectedSize = allocator instanceof TorchCachingModel c ? c.roundSize(request.sizeBytes()) : request.sizeBytes();
      stream = request.stream();
      event = events;
      reason = outcome.reason();
    }
  }

  private static Runner.Progress none() {
    return null;
  }

  private Probe run(String allocator, OomSnapshotRecorder recorder) throws Exception {
    Probe probe = new Probe(recorder.trigger());
    RunSpec spec = RunSpec.resolve(RunRequest.of("churn:ops=3000,seed=3").withAllocators(List.of(allocator)).withDevice("2GiB"),
        new PrintWriter(new StringWriter()));
    new Runner("test", 1).run(spec, name -> AllocatorListener.both(recorder, probe), none());
    return probe;
  }

  @ParameterizedTest(name = "{0}: the snapshot at the first OOM is the allocator's state at that refusal")
  @ValueSource(strings = {"pytorch-caching", "first-fit", "paged", "buddy"})
  void theSnapshotIsTheAllocatorsStateAtTheFirstOom(String allocator) throws Exception {
    OomSnapshotRecorder recorder = new OomSnapshotRecorder(OomSnapshotRecorder.Trigger.ANY);
    Probe probe = run(allocator, recorder);
    assertTrue(recorder.captured(), "a 2 GiB churn run refuses something");
    assertNotNull(probe.layout);
    Path file = dir.resolve(allocator + ".pickle");
    recorder.write(file);
    TorchSnapshot back = SnapshotReader.read(file);

    // Segments and blocks read back equal the allocator's own layout at the refusal.
    assertEquals(probe.layout.size(), back.segments().size());
    long allocated = 0;
    long total = 0;
    for (int i = 0; i < probe.layout.size(); i++) {
      SegmentLayout want = probe.layout.get(i);
      TorchSnapshot.Segment got = back.segments().get(i);
      assertEquals(want.addressBytes(), got.address(), "segment " + i + " address");
      assertEquals(want.sizeBytes(), got.totalSize(), "segment " + i + " size");
      assertEquals(want.blocks().size(), got.blocks().size(), "segment " + i + " blocks");
      for (int k = 0; k < want.blocks().size(); k++) {
        SegmentLayout.Block wb = want.blocks().get(k);
        TorchSnapshot.Block gb = got.blocks().get(k);
        assertEquals(wb.addressBytes(), gb.address(), "segment " + i + " block " + k);
        assertEquals(wb.sizeBytes(), gb.size(), "segment " + i + " block " + k);
        assertEquals(wb.state().label(), gb.state(), "segment " + i + " block " + k);
        if (gb.allocated()) {
          allocated += gb.size();
        }
      }
      total += got.totalSize();
    }
    // ... and the allocator's own counters at that moment, which do not come from the layout.
    assertEquals(probe.allocatedBytes, allocated, "bytes in allocated blocks");
    if (allocator.equals("pytorch-caching")) {
      assertEquals(probe.reservedBytes, total, "reserved bytes");
    }

    // The refusal is the last trace entry, with the failed request's size and stream.
    List<TorchSnapshot.Entry> trace = back.traceOf(0);
    TorchSnapshot.Entry last = trace.get(trace.size() - 1);
    assertEquals("oom", last.action());
    assertEquals(probe.expectedSize, last.size());
    assertEquals(probe.stream, last.stream());
    assertEquals(probe.freeBytes, last.deviceFree());
    assertEquals(1, trace.stream().filter(e -> e.action().equals("oom")).count(), "the first OOM ends the trace");
    assertEquals(probe.event, recorder.oom().event());
    assertEquals(probe.expectedSize, recorder.oom().sizeBytes());
    // The run went on after the capture: it refused more, and the snapshot did not follow.
    assertTrue(probe.refusals > 1, "the run refused " + probe.refusals);
    assertTrue(probe.events > probe.event);
  }

  @ParameterizedTest(name = "{0}: :frag captures the first fragmentation refusal, not the first refusal")
  @ValueSource(strings = {"pytorch-caching", "first-fit"})
  void theFragmentationTriggerWaitsForAFragmentationRefusal(String allocator) throws Exception {
    OomSnapshotRecorder recorder = new OomSnapshotRecorder(OomSnapshotRecorder.Trigger.FRAGMENTATION);
    Probe probe = run(allocator, recorder);
    assertTrue(recorder.captured());
    assertEquals(OomReason.FRAGMENTATION, recorder.oom().reason());
    assertEquals(probe.event, recorder.oom().event());
    Map<String, Object> s = recorder.snapshot();
    List<?> trace = (List<?>) ((List<?>) s.get("device_traces")).get(0);
    Map<?, ?> last = (Map<?, ?>) trace.get(trace.size() - 1);
    assertEquals("oom", last.get("action"));
    // PyTorch's free figure at the OOM: at least the refused size is free, in pieces.
    assertTrue(((Number) last.get("device_free")).longValue() >= probe.expectedSize || allocator.equals("pytorch-caching"));
  }

  @ParameterizedTest(name = "{0}: a run without OOM captures nothing")
  @ValueSource(strings = {"paged"})
  void aRunWithoutOomCapturesNothing(String allocator) throws Exception {
    OomSnapshotRecorder recorder = new OomSnapshotRecorder(OomSnapshotRecorder.Trigger.ANY);
    RunSpec spec = RunSpec.resolve(RunRequest.of("churn:ops=300").withAllocators(List.of(allocator)), new PrintWriter(new StringWriter()));
    new Runner("test", 1).run(spec, name -> recorder, null);
    assertTrue(recorder.bound());
    assertFalse(recorder.captured());
    assertEquals(0, recorder.entries());
    Path file = dir.resolve("none.pickle");
    org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> recorder.write(file));
    assertFalse(Files.exists(file));
  }

  @ParameterizedTest(name = "a state snapshot of {0} segments holds them and one oom entry")
  @ValueSource(ints = {1})
  void aStateSnapshotHoldsTheLayoutAndOneOomEntry(int n) throws Exception {
    List<SegmentLayout> layout = new ArrayList<>();
    layout.add(new SegmentLayout(0, 4096, "large", 0, false, List.of(new SegmentLayout.Block(0, 1024, 1000, SegmentLayout.State.ACTIVE_ALLOCATED),
        new SegmentLayout.Block(1024, 3072, 0, SegmentLayout.State.INACTIVE))));
    Path file = dir.resolve("state.pickle");
    kvsim.core.AtomicFiles.write(file, out -> PickleWriter.write(OomSnapshotRecorder.ofState(layout, 4096, 0, 3072, 5_000_000), out));
    TorchSnapshot back = SnapshotReader.read(file);
    assertEquals(n, back.segments().size());
    assertEquals(2, back.segments().get(0).blocks().size());
    List<TorchSnapshot.Entry> trace = back.traceOf(0);
    assertEquals(1, trace.size());
    assertEquals("oom", trace.get(0).action());
    assertEquals(4096, trace.get(0).size());
    assertEquals(3072, trace.get(0).deviceFree());
    assertEquals(5000, trace.get(0).timeMicros());
  }
}

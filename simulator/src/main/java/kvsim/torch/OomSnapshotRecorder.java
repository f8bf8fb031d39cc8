package kvsim.torch;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.AtomicFiles;

/**
 * Records a run as {@link SnapshotRecorder} does, up to its first out-of-memory refusal (or its
 * first fragmentation refusal, {@link Trigger#FRAGMENTATION}), and keeps the PyTorch snapshot of
 * that moment: the allocator's {@link Allocator#layout()} read inside the {@link #refused} call, before
 * the engine or a scheduler frees or retries anything, and the trace up to it, ending with the
 * refusal's {@code oom} entry (size and stream of the failed request, {@code device_free} the
 * free bytes), as PyTorch's allocator records an OOM before it raises. After that moment the
 * recorder ignores the run.
 *
 * <p>Note [Snapshot at the failure]: PyTorch's {@code malloc} frees cached blocks and retries
 * before it gives up and records its {@code oom} entry; a kvsim model does the same inside its
 * {@code allocate}, and reports what it released through its listener, so a refusal arrives here
 * after those {@code segment_free}s and before anything that follows the refusal. The captured
 * state is therefore the one PyTorch's own OOM observer would dump.
 */
public final class OomSnapshotRecorder implements AllocatorListener {
  /** Which refusal is captured. */
  public enum Trigger {
    /** The first refusal, whatever its reason. */
    ANY("first OOM"),
    /** The first refusal while enough bytes were free in total ({@link OomReason#FRAGMENTATION}). */
    FRAGMENTATION("first fragmentation OOM");

    private final String label;

    Trigger(String label) {
      this.label = label;
    }

    /** Returns the words for it: "first OOM", "first fragmentation OOM". */
    public String label() {
      return label;
    }

    /** Returns whether a refusal for this reason is the one to capture. */
    public boolean matches(OomReason reason) {
      return this == ANY || reason == OomReason.FRAGMENTATION;
    }
  }

  /**
   * The refusal captured.
   *
   * @param event the event that was refused, 1-based as in {@code timeseries.csv} and the memory map
   * @param timeNanos its simulated time
   * @param sizeBytes the size the {@code oom} entry records (the caching model's rounded size, else the request's)
   * @param stream the request's stream
   * @param reason why it was refused
   */
  public record Oom(long event, long timeNanos, long sizeBytes, long stream, OomReason reason) {}

  private final Trigger trigger;
  private final SnapshotRecorder trace = new SnapshotRecorder();
  private long events;
  private long timeNanos;
  private Oom oom;
  private Map<String, Object> snapshot;

  /** A recorder capturing the refusal {@code trigger} names. */
  public OomSnapshotRecorder(Trigger trigger) {
    this.trigger = java.util.Objects.requireNonNull(trigger, "trigger");
  }

  /** Returns which refusal it captures. */
  public Trigger trigger() {
    return trigger;
  }

  @Override
  public void attach(Allocator allocator) {
    trace.attach(allocator);
  }

  /** Returns whether a model has been bound (a recorder for an allocator that never ran is not). */
  public boolean bound() {
    return trace.bound();
  }

  /** Returns whether the refusal was captured. */
  public boolean captured() {
    return snapshot != null;
  }

  /** Returns the refusal captured; null when none was. */
  public Oom oom() {
    return oom;
  }

  @Override
  public void time(long timeNanos) {
    if (snapshot == null) {
      events++;
      this.timeNanos = timeNanos;
      trace.time(timeNanos);
    }
  }

  @Override
  public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
    if (snapshot == null) {
      trace.allocated(id, request, extents, allocatedBytes);
    }
  }

  @Override
  public void freed(long id, long requestedBytes, long stream, Extents extents) {
    if (snapshot == null) {
      trace.freed(id, requestedBytes, stream, extents);
    }
  }

  @Override
  public void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {
    if (snapshot != null) {
      return;
    }
    trace.refused(id, request, outcome);
    if (trigger.matches(outcome.reason())) {
      // The layout is read now, inside the refusal (Note [Snapshot at the failure]); the trace stops growing here.
      snapshot = trace.snapshot();
      Map<?, ?> last = lastEntry(snapshot);
      oom = new Oom(events, timeNanos, ((Number) last.get("size")).longValue(), request.stream(), outcome.reason());
    }
  }

  private static Map<?, ?> lastEntry(Map<String, Object> snapshot) {
    List<?> traces = (List<?>) snapshot.get("device_traces");
    List<?> t = (List<?>) traces.get(0);
    return (Map<?, ?>) t.get(t.size() - 1);
  }

  @Override
  public void segmentAlloc(long addressBytes, long sizeBytes, long stream) {
    if (snapshot == null) {
      trace.segmentAlloc(addressBytes, sizeBytes, stream);
    }
  }

  @Override
  public void segmentFree(long addressBytes, long sizeBytes, long stream) {
    if (snapshot == null) {
      trace.segmentFree(addressBytes, sizeBytes, stream);
    }
  }

  @Override
  public void segmentMap(long addressBytes, long sizeBytes, long stream) {
    if (snapshot == null) {
      trace.segmentMap(addressBytes, sizeBytes, stream);
    }
  }

  @Override
  public void segmentUnmap(long addressBytes, long sizeBytes, long stream) {
    if (snapshot == null) {
      trace.segmentUnmap(addressBytes, sizeBytes, stream);
    }
  }

  /** Returns the number of trace entries captured (0 before the capture). */
  public int entries() {
    return snapshot == null ? 0 : ((List<?>) ((List<?>) snapshot.get("device_traces")).get(0)).size();
  }

  /** Returns the snapshot dict captured. */
  public Map<String, Object> snapshot() {
    if (snapshot == null) {
      throw new IllegalStateException("no " + trigger.label() + " was captured");
    }
    return snapshot;
  }

  /** Writes the captured snapshot as a pickle to a stream. */
  public void write(OutputStream out) throws IOException {
    PickleWriter.write(snapshot(), out);
  }

  /** Writes the captured snapshot to a file atomically. */
  public void write(Path file) throws IOException {
    AtomicFiles.write(file, this::write);
  }

  /**
   * Returns a snapshot dict of a state not recorded event by event (a serving system's KV memory
   * at its first refusal): the {@code segments} of {@code layout}, and a trace of the one {@code
   * oom} entry, stamped {@code timeNanos}, for a request of {@code sizeBytes} on {@code stream} refused
   * with {@code freeBytes} free.
   */
  public static Map<String, Object> ofState(List<SegmentLayout> layout, long sizeBytes, long stream, long freeBytes, long timeNanos) {
    return SnapshotRecorder.stateSnapshot(layout, sizeBytes, stream, freeBytes, timeNanos);
  }
}

package kvsim.engine;

import java.io.IOException;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorListener;
import kvsim.core.HeapExhaustedException;
import kvsim.core.InputException;
import kvsim.core.LongLongMap;
import kvsim.metrics.RunMetrics;
import kvsim.trace.EventSource;
import kvsim.trace.TraceEvent;

/**
 * Applies an L1 event stream to one allocator model, in order, and records its metrics after every
 * event (DESIGN §3, L1). The engine owns the mapping from trace ids to the model's handles, so the
 * models never see trace ids.
 *
 * <ul>
 *   <li>An allocation the model refuses is counted by reason and the run goes on; the source is told
 *       (closed-loop generators then never free it), and a later free of that id is a no-op,
 *       counted as {@code frees_of_refused_count}.
 *   <li>With an activations region in the memory plan, requests that may not be split go to that
 *       region's model; metrics describe the region under test, and the activations region's
 *       refusals are counted apart.
 *   <li>With {@code check}, the model's invariant checker runs after every event.
 *   <li>Annotations are passed over.
 *   <li>Memory grows with the live set (one map entry per live id, plus the model's own state), never
 *       with the trace's length; when the heap runs out the run stops with {@link
 *       HeapExhaustedException}, which says how many allocations were live.
 * </ul>
 */
public final class ReplayEngine {
  /** Handles of the activations model carry this bit in the id map. */
  private static final long ACTIVATIONS_BIT = 1L << 62;
  private static final long REFUSED = -2;
  private static final long ABSENT = -1;
  /** Events between two progress callbacks. */
  public static final long PROGRESS_EVERY = 1 << 20;

  /** Receives the number of events applied so far, every {@link #PROGRESS_EVERY} events. */
  @FunctionalInterface
  public interface Progress {
    /** Called with the running event count. */
    void eventsApplied(long events);
  }

  /**
   * How to run.
   *
   * @param check run the invariant checker after every event
   * @param sampleEvery time-series stride in events, 0 for automatic
   * @param listener receives the allocations, frees and refusals of the region under test (null for none)
   * @param progress progress callback (null for none)
   */
  public record Options(boolean check, long sampleEvery, AllocatorListener listener, Progress progress) {
    /** Default options: no checks, automatic sampling, no listener. */
    public static Options defaults() {
      return new Options(false, 0, null, null);
    }
  }

  /**
   * What one run produced.
   *
   * @param metrics the region under test's gauges, summaries, samples and counters
   * @param activationOomCount refusals in the activations region
   * @param wallNanos wall-clock time of the run
   */
  public record Result(RunMetrics metrics, long activationOomCount, long wallNanos) {}

  private ReplayEngine() {}

  /**
   * Runs {@code source} through {@code tested} (and {@code activations}, which may be null).
   *
   * @throws InputException when the stream frees an id that is not live or reuses a live id
   */
  public static Result run(Allocator tested, Allocator activations, EventSource source, Options options)
      throws IOException {
    long start = System.nanoTime();
    RunMetrics metrics = new RunMetrics(options.sampleEvery());
    AllocatorListener listener = options.listener();
    LongLongMap handles = new LongLongMap(1 << 12);
    // Requested sizes of live allocations, kept only when a listener needs them for frees.
    LongLongMap requestedById = listener == null ? null : new LongLongMap(1 << 12);
    long activationOoms = 0;
    long events = 0;
    TraceEvent e = null;
    try {
      while ((e = source.next()) != null) {
        if (listener != null) {
          listener.time(e.timeNanos());
        }
        switch (e.op()) {
          case ALLOC -> {
            AllocRequest request = new AllocRequest(e.sizeBytes(), e.tag(), e.splittable(), e.stream());
            boolean toActivations = activations != null && !e.splittable();
            Allocator target = toActivations ? activations : tested;
            AllocOutcome outcome = target.allocate(request);
            if (outcome instanceof AllocOutcome.Allocated a) {
              long handle = toActivations ? a.handle() | ACTIVATIONS_BIT : a.handle();
              if (!handles.putIfAbsent(e.id(), handle)) {
                throw duplicate(source, e);
              }
              if (!toActivations) {
                metrics.countAlloc();
              }
              if (listener != null && !toActivations) {
                requestedById.putIfAbsent(e.id(), e.sizeBytes());
                listener.allocated(e.id(), request, a.extents(), a.allocatedBytes());
              }
              source.acknowledge(e, true);
            } else {
              AllocOutcome.OutOfMemory oom = (AllocOutcome.OutOfMemory) outcome;
              if (!handles.putIfAbsent(e.id(), REFUSED)) {
                throw duplicate(source, e);
              }
              if (toActivations) {
                activationOoms++;
              } else {
                metrics.countOom(oom.reason().label());
              }
              if (listener != null && !toActivations) {
                listener.refused(e.id(), request, oom);
              }
              source.acknowledge(e, false);
            }
          }
          case FREE -> {
            long handle = handles.remove(e.id(), ABSENT);
            if (handle == ABSENT) {
              throw at(source, e, "free of id " + e.id() + ", which is not live (never allocated, or already freed: double free)");
            }
            if (handle == REFUSED) {
              metrics.countFreeOfRefused();
            } else {
              boolean inActivations = (handle & ACTIVATIONS_BIT) != 0;
              Allocator target = inActivations ? activations : tested;
              long h = handle & ~ACTIVATIONS_BIT;
              if (listener != null && !inActivations) {
                listener.freed(e.id(), requestedById.remove(e.id(), 0), e.stream(), target.extentsOf(h));
              }
              target.free(h);
              if (!inActivations) {
                metrics.countFree();
              }
            }
          }
          case ANNOTATE -> {}
        }
        if (options.check()) {
          tested.checkInvariants();
          if (activations != null) {
            activations.checkInvariants();
          }
        }
        metrics.record(
            e.timeNanos(),
            tested.reservedBytes(),
            tested.allocatedBytes(),
            tested.requestedBytes(),
            tested.freeBytes(),
            tested.largestFreeBytes(),
            tested.liveAllocations());
        events++;
        if (options.progress() != null && events % PROGRESS_EVERY == 0) {
          options.progress().eventsApplied(events);
        }
      }
    } catch (OutOfMemoryError oom) {
      long live = handles.size();
      String where = source.name() + (e == null ? "" : ":" + e.line());
      handles = null; // let the heap breathe before anything else is allocated
      requestedById = null;
      throw new HeapExhaustedException(where, tested.name(), live, Runtime.getRuntime().maxMemory());
    }
    return new Result(metrics, activationOoms, System.nanoTime() - start);
  }

  private static InputException duplicate(EventSource source, TraceEvent e) {
    return at(source, e, "id " + e.id() + " is already live");
  }

  private static InputException at(EventSource source, TraceEvent e, String problem) {
    return InputException.at(source.name(), e.line(), "id", problem);
  }
}

package kvsim.engine;

import java.io.IOException;
import java.io.UncheckedIOException;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.AllocatorStats;
import kvsim.core.DenseLongSet;
import kvsim.core.HeapExhaustedException;
import kvsim.core.InputException;
import kvsim.core.LongLongMap;
import kvsim.core.Tag;
import kvsim.metrics.RunMetrics;
import kvsim.trace.EventSource;
import kvsim.trace.L1BinaryReader;
import kvsim.trace.L1TraceReader;
import kvsim.trace.TraceEvent;

/**
 * The L1 replay: applies an event stream to the models of a memory plan, in order, on the event
 * core ({@link Simulator}), and records the region under test's metrics after every event. One
 * {@link TraceStep} event is the replayed stream: it applies the current trace event, reads the
 * next one and schedules itself at that event's time. The engine owns the mapping from trace ids
 * to the models' handles, so the models never see trace ids.
 *
 * <ul>
 *   <li>A request goes to the region the {@link RegionRouter} picks (with vLLM's two-pool layout,
 *       unsplittable requests to the activations region); metrics describe the region under test,
 *       and other regions' refusals are counted apart.
 *   <li>An allocation the model refuses is counted by reason and the run goes on; the source is told
 *       (closed-loop generators then never free it), and a later free of that id is a no-op,
 *       counted as {@code frees_of_refused_count}. Refused ids are remembered only for a source
 *       that may free them ({@link EventSource#freesRefused}).
 *   <li>With {@code check}, every region's invariant checker runs after every event.
 *   <li>Annotations are passed over.
 *   <li>Events are read on the engine's thread, from a file (JSONL or binary) as from a generator
 *       (Note [Trace files read on the engine's thread]); a closed-loop generator must be, since it
 *       hears each refusal before its next event. A binary trace's reader may decode on another
 *       core, into columns the engine's thread reads in place (Notes [Decoded ahead in columns]
 *       and [Rows read in place] on {@link L1BinaryReader}).
 *   <li>Memory grows with the live set (one map entry per live id, and about a bit per refused id a
 *       file has not freed yet, plus the models' own state),
 *       never with a trace's length; when the heap runs out the run stops with {@link HeapExhaustedException}, which says how many allocations were
 *       live.
 * </ul>
 *
 * <p>Note [One table of live ids]: a trace file's reader checks that every allocated id is not
 * live and every freed id is, and the engine maps the same live ids to handles. Two tables of a
 * replay's live ids, each far larger than the caches, one cache miss per event in each, were
 * about half of a 2 M-event trace's replay in JFR samples, the reader's table alone 30 %. For a
 * source that may free refused ids (a file), the engine's tables hold every live id, the served in
 * {@code handles} and the refused in {@code refused} (Note [Refused ids in a bitset] on {@link
 * DenseLongSet}), so together they are exactly the reader's; the
 * engine then asks the reader to leave its table out ({@link EventSource#leaveLiveIdsToCaller})
 * and, where its own check fails, reports the reader's own message for that event ({@link
 * EventSource#liveIdError}, which reads the file again up to it), so errors read as before.
 *
 * <p>Note [Trace files read on the engine's thread]: a file's events do not depend on the run,
 * so another core could read them ahead ({@code core.ReadAhead}), and replays did so while parsing
 * was a large part of their time. Since then the engine's own work per event has become cheaper
 * than moving an event between cores: the event a reader thread builds reaches the engine's core
 * as cache misses, and under the serial collector the launcher runs with, two threads allocating
 * side by side parsed more slowly than one. Replaying the 2 M-event churn trace with first fit
 * through a warm resident server on 2 cores, reading on the engine's thread took the engine
 * 0.19-0.20 s against 0.28 s from {@code .kvt}, and the whole command 0.79 s against 0.91 s from
 * JSONL; a direct run of a 10 M-event JSONL trace took 0.96 of the time with a fifth less CPU. A
 * short direct JSONL replay, whose parsing overlapped the JIT's warm-up, took 1.03 of the time.
 * JMH's {@code ReplayBenchmark.replayJsonl} is the exception, not yet understood: read ahead, a
 * fork ran at anywhere from 2.2 to 4.5 M events/s, parsed here at 2.6 to 2.8. Serving runs still
 * read their requests ahead, where each request's prompt is hashed too ({@code
 * serving.PreparedRequests}), and a binary trace's reader, given a core to spare, decodes on it
 * into plain arrays, which reach the engine's core at a fraction of the cost of objects.
 */
public final class ReplayEngine {
  private static final long ABSENT = -1;
  /**
   * The id maps' starting size: small, since a seed sweep makes one per cell and most cells are
   * short (filling an 8,192-slot table was 2 % of a 5,000-operation sweep's JFR samples and a
   * third of a one-operation cell's); they grow as needed.
   */
  private static final int INITIAL_IDS = 64;
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
   * @param check run the invariant checkers after every event
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
   * @param otherRegionOomCounts refusals in each region other than the one under test, in router order
   * @param wallNanos wall-clock time of the run
   */
  public record Result(RunMetrics metrics, long[] otherRegionOomCounts, long wallNanos) {
    /** Returns the refusals in all regions other than the one under test. */
    public long otherRegionOomCount() {
      long sum = 0;
      for (long c : otherRegionOomCounts) {
        sum += c;
      }
      return sum;
    }
  }

  private ReplayEngine() {}

  /** Runs {@code source} through one model managing the whole plan. */
  public static Result run(Allocator tested, EventSource source, Options options) throws IOException {
    return run(new RegionRouter(tested), source, options);
  }

  /**
   * Runs {@code source} through the regions of a plan.
   *
   * @throws InputException when the stream frees an id that is not live or reuses a live id
   */
  public static Result run(RegionRouter regions, EventSource source, Options options) throws IOException {
    long start = System.nanoTime();
    Simulator sim = new Simulator();
    TraceStep step = new TraceStep(sim, regions, source, options);
    try { // Note [Trace files read on the engine's thread]
      if (step.advance()) {
        sim.run();
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    } catch (OutOfMemoryError oom) {
      long live = step.handles.size() + step.refused.size();
      String where = source.name() + step.at();
      step.releaseMemory(); // let the heap breathe before anything else is allocated
      throw new HeapExhaustedException(where, regions.allocator(0).name(), live, Runtime.getRuntime().maxMemory());
    }
    return new Result(step.metrics, step.otherOoms(), System.nanoTime() - start);
  }

  /** The replayed stream as one event that reschedules itself at each trace event's time. */
  private static final class TraceStep extends Event {
    private final Simulator sim;
    private final RegionRouter regions;
    private final Allocator tested;
    private final AllocatorStats testedStats;
    private final EventSource source;
    /**
     * The source when it is a binary trace file, else null.
     *
     * <p>Note [The reader called directly]: {@code source.next()} is an interface call, and where one
     * JVM has replayed more than one kind of source (the resident server warms up on generators,
     * JSONL and binary traces) the JIT compiles it as a look-up in the interface's table, which it
     * cannot inline; a trace file's reader, a final class, called through a field of its own type
     * is a plain call it inlines.
     */
    private final L1BinaryReader binary;
    /**
     * Whether the events are read field by field from the binary reader's rows, not as objects
     * (Note [Rows read in place] on {@link L1BinaryReader}); {@code current} is then null.
     */
    private final boolean rows;
    /** The source when it is a JSONL trace file, else null (Note [The reader called directly]). */
    private final L1TraceReader jsonl;
    /** Whether the source is told each allocation's outcome: a generator, not a file, whose events are fixed. */
    private final boolean hearsOutcomes;
    private final Options options;
    private final AllocatorListener listener;
    private final RunMetrics metrics;
    private final long[] oomsByRegion;
    private final boolean freesRefused;
    /** The live ids the models hold, to their region and handle. */
    private LongLongMap handles = new LongLongMap(INITIAL_IDS);
    /** The refused ids not yet freed, for a source that may free them (Note [Refused ids in a bitset] on DenseLongSet). */
    private DenseLongSet refused = new DenseLongSet();
    /**
     * The largest id allocated so far (served or refused), or none yet ({@code anyAllocated} false).
     * A larger id cannot be live, so a refused allocation of one skips the look-up in {@code
     * handles}: traces number their allocations in order, and in the 2 M-event churn trace, whose
     * device refuses 1.13 M of 1.2 M allocations, that look-up was a tenth of the warm replay.
     */
    private long largestId;
    private boolean anyAllocated;
    /** Requested sizes of live allocations, kept only for a listener that reads them at frees. */
    private LongLongMap requestedById;
    /** The event being applied, read as an object (null when {@code rows}). */
    private TraceEvent current;
    private long events;

    TraceStep(Simulator sim, RegionRouter regions, EventSource source, Options options) {
      this.sim = sim;
      this.regions = regions;
      this.tested = regions.allocator(0);
      this.testedStats = tested.stats();
      this.source = source;
      this.binary = source instanceof L1BinaryReader b ? b : null;
      this.jsonl = source instanceof L1TraceReader j ? j : null;
      this.hearsOutcomes = binary == null && jsonl == null;
      this.options = options;
      this.listener = options.listener();
      this.metrics = new RunMetrics(options.sampleEvery());
      this.oomsByRegion = new long[regions.size()];
      this.freesRefused = source.freesRefused();
      if (freesRefused) { // handles and refused then hold every live id: Note [One table of live ids]
        source.leaveLiveIdsToCaller();
      }
      this.rows = binary != null && freesRefused && binary.decodesAhead();
      this.requestedById = listener == null || !listener.readsFreeDetails() ? null : new LongLongMap(INITIAL_IDS);
    }

    /** Reads the next trace event and schedules this step at its time; false at the end. */
    boolean advance() {
      long timeNanos;
      try {
        if (rows) {
          if (!binary.nextRow()) {
            return false;
          }
          timeNanos = binary.rowTimeNanos();
        } else {
          current = binary != null ? binary.next() : jsonl != null ? jsonl.next() : source.next(); // Note [The reader called directly]
          if (current == null) {
            return false;
          }
          timeNanos = current.timeNanos();
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      sim.scheduleAt(this, timeNanos);
      return true;
    }

    /** The event being applied, as an object, for messages. */
    private TraceEvent event() {
      return rows ? binary.rowEvent() : current;
    }

    /** Where the run is in its source: {@code :} and the event's line, or nothing before the first event. */
    String at() {
      if (rows) {
        long read = binary.eventsRead();
        return read == 0 ? "" : ":" + read;
      }
      return current == null ? "" : ":" + current.line();
    }

    @Override
    protected void actions() {
      long timeNanos = timeNanos(); // the trace event's, which this step was scheduled at
      if (listener != null) {
        listener.time(timeNanos);
      }
      // Each way of reading calls alloc and free itself: one call of each, its arguments picked
      // field by field, replayed both formats slower in a resident server (README, "Rows read in place").
      if (rows) {
        L1BinaryReader r = binary;
        TraceEvent.Op op = r.rowOp();
        if (op == TraceEvent.Op.ALLOC) {
          alloc(r.rowId(), r.rowSizeBytes(), r.rowTag(), r.rowSplittable(), r.rowStream());
        } else if (op == TraceEvent.Op.FREE) {
          free(r.rowId(), r.rowStream());
        }
      } else {
        TraceEvent e = current;
        switch (e.op()) {
          case ALLOC -> alloc(e.id(), e.sizeBytes(), e.tag(), e.splittable(), e.stream());
          case FREE -> free(e.id(), e.stream());
          case ANNOTATE -> {}
        }
      }
      if (options.check()) {
        regions.checkInvariants();
      }
      metrics.record(
          timeNanos,
          testedStats.reservedBytes(),
          testedStats.allocatedBytes(),
          testedStats.requestedBytes(),
          tested.freeBytes(),
          tested.largestFreeBytes(),
          testedStats.liveAllocations());
      events++;
      if (options.progress() != null && events % PROGRESS_EVERY == 0) {
        options.progress().eventsApplied(events);
      }
      advance();
    }

    private void alloc(long id, long sizeBytes, Tag tag, boolean splittable, long stream) {
      boolean newId = !anyAllocated || id > largestId; // Note on largestId: never allocated, so not live
      if (newId) {
        largestId = id;
        anyAllocated = true;
      }
      AllocRequest request = new AllocRequest(sizeBytes, tag, splittable, stream);
      int region = regions.route(request);
      AllocOutcome outcome = regions.allocator(region).allocate(request);
      if (outcome instanceof AllocOutcome.Allocated a) {
        if (refused.contains(id) || !handles.putIfAbsent(id, RegionRouter.encode(region, a.handle()))) {
          throw duplicate(id);
        }
        if (region == 0) {
          metrics.countAlloc();
          if (listener != null) {
            if (requestedById != null) {
              requestedById.putIfAbsent(id, sizeBytes);
            }
            listener.allocated(id, request, a.extents(), a.allocatedBytes());
          }
        }
        if (hearsOutcomes) {
          source.acknowledge(current, true);
        }
      } else {
        AllocOutcome.OutOfMemory oom = (AllocOutcome.OutOfMemory) outcome;
        if (!newId && handles.containsKey(id) || freesRefused && !refused.add(id)) {
          throw duplicate(id);
        }
        if (region == 0) {
          metrics.countOom(oom.reason().label());
          if (listener != null) {
            listener.refused(id, request, oom);
          }
        } else {
          oomsByRegion[region]++;
        }
        if (hearsOutcomes) {
          source.acknowledge(current, false);
        }
      }
    }

    private void free(long id, long stream) {
      if (refused.remove(id)) {
        metrics.countFreeOfRefused();
        return;
      }
      long code = handles.remove(id, ABSENT);
      if (code == ABSENT) {
        throw notLive(id);
      }
      int region = RegionRouter.regionOf(code);
      Allocator target = regions.allocator(region);
      long handle = RegionRouter.handleOf(code);
      if (region == 0 && listener != null) {
        if (requestedById != null) {
          listener.freed(id, requestedById.remove(id, 0), stream, target.extentsOf(handle));
        } else {
          listener.freed(id, 0, stream, null);
        }
      }
      target.free(handle);
      if (region == 0) {
        metrics.countFree();
      }
    }

    long[] otherOoms() {
      return java.util.Arrays.copyOfRange(oomsByRegion, 1, oomsByRegion.length);
    }

    void releaseMemory() {
      handles = null;
      refused = null;
      requestedById = null;
    }

    private InputException duplicate(long id) {
      TraceEvent e = event();
      InputException own = source.liveIdError(e);
      return own != null ? own : at(e, "id " + id + " is already live");
    }

    private InputException notLive(long id) {
      TraceEvent e = event();
      InputException own = source.liveIdError(e);
      return own != null ? own : at(e, "free of id " + id + ", which is not live (never allocated, or already freed: double free)");
    }

    private InputException at(TraceEvent e, String problem) {
      return InputException.at(source.name(), e.line(), "id", problem);
    }
  }
}

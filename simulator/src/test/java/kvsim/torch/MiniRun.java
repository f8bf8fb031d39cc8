package kvsim.torch;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.Extents;
import kvsim.core.Tag;
import kvsim.trace.TraceEvent;

/**
 * A minimal L1 driver for tests: applies alloc/free events to one model, reporting them to a
 * {@link SnapshotRecorder} the way the engine does, and records which allocations were served.
 */
final class MiniRun {
  final Allocator model;
  final SnapshotRecorder recorder;
  /** The served events in order: alloc (id, size, stream) and free (id). */
  final List<TraceEvent> served = new ArrayList<>();
  int refused;

  MiniRun(Allocator model) {
    this.model = model;
    this.recorder = SnapshotRecorder.recording(model);
  }

  /** A churn-like workload: random sizes (small and large), random frees, two streams. */
  static List<TraceEvent> churn(long seed, int events, long maxBytes) {
    SplittableRandom rnd = new SplittableRandom(seed);
    List<TraceEvent> out = new ArrayList<>();
    List<Long> live = new ArrayList<>();
    long next = 0;
    long t = 0;
    for (int i = 0; i < events; i++) {
      t += 1000 + rnd.nextInt(5000);
      if (live.isEmpty() || rnd.nextInt(100) < 55) {
        long size = rnd.nextInt(3) == 0 ? 1 + rnd.nextLong(1L << 20) : (1L << 20) + rnd.nextLong(maxBytes);
        long stream = rnd.nextInt(5) == 0 ? 7 : 0;
        out.add(TraceEvent.alloc(t, next, size, Tag.TEMP, false, stream));
        live.add(next++);
      } else {
        long id = live.remove(rnd.nextInt(live.size()));
        out.add(TraceEvent.free(t, id, 0));
      }
    }
    return out;
  }

  /** Applies the events; frees of refused allocations are skipped (the closed-loop churn rule). */
  MiniRun run(List<TraceEvent> events) {
    Map<Long, long[]> live = new HashMap<>(); // id -> {handle, requested, stream}
    for (TraceEvent e : events) {
      recorder.time(e.timeNanos());
      if (e.op() == TraceEvent.Op.ALLOC) {
        AllocRequest req = new AllocRequest(e.sizeBytes(), e.tag(), e.splittable(), e.stream());
        AllocOutcome o = model.allocate(req);
        if (o instanceof AllocOutcome.Allocated a) {
          recorder.allocated(e.id(), req, a.extents(), a.allocatedBytes());
          live.put(e.id(), new long[] {a.handle(), e.sizeBytes(), e.stream()});
          served.add(e);
        } else {
          recorder.refused(e.id(), req, (AllocOutcome.OutOfMemory) o);
          refused++;
        }
      } else if (e.op() == TraceEvent.Op.FREE) {
        long[] l = live.remove(e.id());
        if (l == null) {
          continue;
        }
        Extents ex = model.extentsOf(l[0]);
        model.free(l[0]);
        recorder.freed(e.id(), l[1], l[2], ex);
        served.add(TraceEvent.free(e.timeNanos(), e.id(), l[2]));
      }
      model.checkInvariants();
    }
    return this;
  }

  byte[] pickle() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    recorder.write(out);
    return out.toByteArray();
  }
}

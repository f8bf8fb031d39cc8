package kvsim.torch;

import java.io.IOException;
import java.io.OutputStream;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.TraceEvent;

/**
 * Turns one device's {@code device_traces} of a snapshot into a kvsim L1 trace ({@code kvsim
 * import torch-snapshot}).
 *
 * <ul>
 *   <li>{@code alloc} becomes an {@code alloc} event with the <b>requested</b> size, the stream and
 *       the recorded address in {@code addr}; {@code free_completed} becomes the {@code free} of
 *       the same allocation (the moment the block returns to the pool, in PyTorch's {@code
 *       free_block}). {@code free_requested} is dropped (it always precedes or equals {@code
 *       free_completed}).
 *   <li>Tag {@code temp} with {@code splittable:false}: a tensor is one contiguous block that no
 *       allocator may split into pages, and a snapshot does not say what a tensor is for.
 *   <li>Blocks live when recording began (the final segments walked back through the trace, {@link
 *       RecordingStart}) are allocated first, at the time of the first entry, in address order, so
 *       every later free refers to a live id; an {@code annotate} event {@code recording_start}
 *       follows them.
 *   <li>{@code segment_alloc}, {@code segment_free}, {@code segment_map}, {@code segment_unmap} and
 *       {@code oom} are kept as {@code annotate} events with their address, size and stream; other
 *       entries ({@code snapshot}, user annotations) are dropped.
 *   <li>Times: {@code t} = ({@code time_us} − the first entry's) × 1000 ns; a file without times
 *       gives events without {@code t}. Times going backwards are an error naming the entry.
 * </ul>
 */
public final class SnapshotImporter {
  private SnapshotImporter() {}

  /** What an import wrote. */
  public record Summary(int device, long preludeAllocations, long allocations, long frees, long annotations) {}

  /** Picks the device to import: the given one, or the only device with history. */
  public static int chooseDevice(TorchSnapshot snapshot, int requested) {
    List<Integer> withHistory = snapshot.devicesWithHistory();
    if (requested >= 0) {
      if (requested >= snapshot.deviceTraces().size()) {
        throw new InputException(snapshot.source() + ": device " + requested + " is not in the file (" + snapshot.deviceTraces().size() + " device trace(s))");
      }
      return requested;
    }
    if (withHistory.isEmpty()) {
      throw new InputException(snapshot.source() + ": the snapshot has no allocation history to import (device_traces holds no 'alloc' entry)");
    }
    if (withHistory.size() > 1) {
      throw new InputException(snapshot.source() + ": devices " + withHistory + " all have history; choose one with --device");
    }
    return withHistory.get(0);
  }

  /** Writes the L1 trace of one device to {@code out}, as JSONL. */
  public static Summary write(TorchSnapshot snapshot, int device, OutputStream out) throws IOException {
    return write(snapshot, device, out, false);
  }

  /** Writes the L1 trace of one device to {@code out}, binary ({@code kvsim.trace.BinaryTraceFormat}) or JSONL. */
  public static Summary write(TorchSnapshot snapshot, int device, OutputStream out, boolean binary) throws IOException {
    List<TorchSnapshot.Entry> trace = snapshot.traceOf(device);
    // Blocks live at the start: final live blocks, walked back through the trace.
    TreeMap<Long, long[]> live = new TreeMap<>(); // addr -> {requested, stream}
    for (TorchSnapshot.Segment s : snapshot.segmentsOf(device)) {
      for (TorchSnapshot.Block b : s.blocks()) {
        if (b.live()) {
          live.put(b.address(), new long[] {b.requestedSize(), s.stream()});
        }
      }
    }
    for (int i = trace.size() - 1; i >= 0; i--) {
      TorchSnapshot.Entry e = trace.get(i);
      if (e.action().equals("alloc")) {
        if (live.remove(e.addr()) == null) {
          throw new InputException(snapshot.source() + ": event " + i + " (alloc at 0x" + Long.toHexString(e.addr()) + "): the trace does not match the final segments");
        }
      } else if (e.action().equals("free_completed")) {
        live.put(e.addr(), new long[] {e.size(), e.stream()});
      }
    }
    Map<String, Object> header = new LinkedHashMap<>();
    header.put("source", "torch-snapshot");
    header.put("file", snapshot.source());
    // Not "device": an L1 header's device names the simulated device the sizes were computed for.
    header.put("cuda_device", device);
    header.put("tag", "temp");
    header.put("prelude_allocations", live.size());
    long firstTime = -1;
    for (TorchSnapshot.Entry e : trace) {
      if (e.timeMicros() >= 0) {
        firstTime = e.timeMicros();
        break;
      }
    }
    long allocs = 0;
    long frees = 0;
    long notes = 0;
    try (L1TraceWriter w = L1TraceWriter.open(out, header, binary)) {
      long nextId = 0;
      Map<Long, Long> idByAddress = new HashMap<>();
      for (Map.Entry<Long, long[]> b : live.entrySet()) {
        long id = nextId++;
        idByAddress.put(b.getKey(), id);
        w.write(new TraceEvent(0, 0, TraceEvent.Op.ALLOC, id, Math.max(1, b.getValue()[0]), Tag.TEMP, false, b.getValue()[1], b.getKey(), null));
      }
      w.write(TraceEvent.annotate(0, "recording_start", -1, 0, 0));
      long lastTime = 0;
      for (int i = 0; i < trace.size(); i++) {
        TorchSnapshot.Entry e = trace.get(i);
        long t = lastTime;
        if (e.timeMicros() >= 0 && firstTime >= 0) {
          t = (e.timeMicros() - firstTime) * 1000;
          if (t < lastTime) {
            throw new InputException(snapshot.source() + ": event " + i + ": time_us goes backwards (" + e.timeMicros() + ")");
          }
        }
        lastTime = t;
        switch (e.action()) {
          case "alloc" -> {
            long id = nextId++;
            if (idByAddress.put(e.addr(), id) != null) {
              throw new InputException(snapshot.source() + ": event " + i + ": alloc at 0x" + Long.toHexString(e.addr()) + ", which is still live");
            }
            if (e.size() <= 0) {
              throw new InputException(snapshot.source() + ": event " + i + ": alloc of " + e.size() + " bytes");
            }
            w.write(new TraceEvent(0, t, TraceEvent.Op.ALLOC, id, e.size(), Tag.TEMP, false, e.stream(), e.addr(), null));
            allocs++;
          }
          case "free_completed" -> {
            Long id = idByAddress.remove(e.addr());
            if (id == null) {
              throw new InputException(snapshot.source() + ": event " + i + ": free_completed at 0x" + Long.toHexString(e.addr()) + ", where nothing is live");
            }
            w.write(new TraceEvent(0, t, TraceEvent.Op.FREE, id, 0, null, false, e.stream(), e.addr(), null));
            frees++;
          }
          case "segment_alloc", "segment_free", "segment_map", "segment_unmap" -> {
            w.write(TraceEvent.annotate(t, e.action(), e.addr(), e.size(), e.stream()));
            notes++;
          }
          case "oom" -> {
            w.write(TraceEvent.annotate(t, "oom", -1, e.size(), e.stream()));
            notes++;
          }
          default -> {}
        }
      }
    }
    return new Summary(device, live.size(), allocs, frees, notes);
  }
}

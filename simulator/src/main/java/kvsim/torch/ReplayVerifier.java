package kvsim.torch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.caching.RecordedDriver;
import kvsim.alloc.caching.TieBreak;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.alloc.caching.TorchStats;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.registry.AllocatorRegistry;

/**
 * Replays a recorded snapshot against the caching model and compares every decision ({@code kvsim
 * torch-replay}; README, "PyTorch's caching allocator and its memory snapshots").
 *
 * <ul>
 *   <li>The state at the start of the recording is rebuilt ({@link RecordingStart}) and installed
 *       in a model that runs with the recording's own settings ({@link SnapshotSettings}) on a
 *       {@link RecordedDriver}; both come from the {@link AllocatorRegistry}.
 *   <li>{@code alloc} entries become malloc(requested size, stream); the model's address is
 *       compared with the recorded one, and its segment decision (new memory or not, how much) with
 *       the {@code segment_alloc}/{@code segment_map} entries queued before it.
 *   <li>{@code free_completed} entries free the block the model gave for that recorded address;
 *       {@code free_requested}, {@code snapshot} and annotations change nothing.
 *   <li>{@code segment_free} entries are applied as given (they are the outcome of memory pressure
 *       the trace does not record); a run of {@code segment_unmap} entries is compared with the
 *       model's own {@code empty_cache}.
 *   <li>An {@code oom} entry is replayed as a malloc of its (rounded) size on a driver that refuses;
 *       the model must run out of memory too.
 *   <li>At the end the model's segments and blocks are compared with the file's.
 * </ul>
 */
public final class ReplayVerifier {
  /**
   * How to replay.
   *
   * @param conf options to replay with, or null for the recording's own settings
   * @param tieBreak the free-block tie-break of the PyTorch version that recorded the file
   * @param deviceTotalBytes the device size (only for the memory fraction and expandable
   *     reservations); 0 for the size a kvsim export records, else 80 GiB
   * @param device the device to replay, or -1 for every device with history
   * @param keepGoing whether to go on after the first divergence (counting what still matches)
   *     instead of stopping there
   */
  public record Options(TorchAllocConf conf, TieBreak tieBreak, long deviceTotalBytes, int device, boolean keepGoing) {
    /** The defaults: recorded settings, address tie-break, an 80 GiB device, every device, stop at the first divergence. */
    public static Options defaults() {
      return new Options(null, TorchCachingModel.DEFAULT_TIE_BREAK, 0, -1, false);
    }
  }

  /** The device size assumed for recordings that do not state one: 80 GiB. */
  public static final long DEFAULT_DEVICE_BYTES = 80L << 30;

  private ReplayVerifier() {}

  /** Replays every selected device of a snapshot and returns what matched. */
  public static ReplayReport verify(TorchSnapshot snapshot, Options options) {
    List<Integer> devices = snapshot.devicesWithHistory();
    if (options.device() >= 0) {
      if (!devices.contains(options.device())) {
        throw new InputException(snapshot.source() + ": device " + options.device() + " has no allocation history to replay (devices with history: " + devices + ")");
      }
      devices = List.of(options.device());
    }
    if (devices.isEmpty()) {
      throw new InputException(snapshot.source() + ": the snapshot has no allocation history (device_traces holds no 'alloc' entry); use torch-inspect for state-only snapshots");
    }
    List<ReplayReport.DeviceResult> out = new ArrayList<>();
    for (int d : devices) {
      out.add(new DeviceReplay(snapshot, d, options).run());
    }
    return new ReplayReport(snapshot.source(), out);
  }

  /**
   * Returns the segments and blocks at the start of a device's recording ({@link RecordingStart}),
   * ready for {@link TorchCachingModel#restoreSegment}; {@code model} supplies the rounding of
   * blocks whose size must be inferred.
   */
  public static List<SegmentLayout> startState(TorchSnapshot snapshot, int device, TorchCachingModel model) {
    return RecordingStart.rebuild(snapshot.source(), snapshot.segmentsOf(device), snapshot.traceOf(device), model).segments();
  }

  /** Installs a start state in a fresh model; fills {@code handleByAddress} for its live blocks. */
  public static void restore(TorchCachingModel model, List<SegmentLayout> start, Map<Long, Long> handleByAddress) {
    for (SegmentLayout s : start) {
      long[] handles = model.restoreSegment(s);
      for (int i = 0; i < handles.length; i++) {
        if (handles[i] >= 0) {
          handleByAddress.put(s.blocks().get(i).addressBytes(), handles[i]);
        }
      }
    }
  }

  private static final class DeviceReplay implements AllocatorListener {
    private final TorchSnapshot snapshot;
    private final int device;
    private final Options options;
    private final RecordedDriver driver = AllocatorRegistry.recordedDriver();
    private final Map<Long, Long> handleByAddress = new HashMap<>();
    private final List<long[]> unmaps = new ArrayList<>();
    private final List<String> unrecorded = new ArrayList<>();
    private final List<long[]> expectedUnmaps = new ArrayList<>();
    private final List<long[]> modelUnmaps = new ArrayList<>();
    private int current;
    private boolean applying;
    private TorchCachingModel model;
    private RecordingStart start;
    private ReplayReport.Divergence first;
    private long allocations;
    private long addressMatches;
    private long decisions;
    private long decisionMatches;
    private long newSegments;
    private long segmentFrees;
    private long frees;

    DeviceReplay(TorchSnapshot snapshot, int device, Options options) {
      this.snapshot = snapshot;
      this.device = device;
      this.options = options;
    }

    ReplayReport.DeviceResult run() {
      TorchAllocConf conf = options.conf() != null ? options.conf() : SnapshotSettings.conf(snapshot);
      long deviceBytes = options.deviceTotalBytes() > 0 ? options.deviceTotalBytes() : SnapshotSettings.deviceTotalBytes(snapshot, DEFAULT_DEVICE_BYTES);
      model = AllocatorRegistry.torchCaching(conf, options.tieBreak(), driver, deviceBytes);
      List<TorchSnapshot.Entry> trace = snapshot.traceOf(device);
      start = RecordingStart.rebuild(snapshot.source(), snapshot.segmentsOf(device), trace, model);
      restore(model, start.segments(), handleByAddress);
      model.setListener(this);
      driver.setReservationLookahead(() -> {
        for (int k = current + 1; k < trace.size(); k++) {
          TorchSnapshot.Entry m = trace.get(k);
          if (m.action().equals("segment_map") && model.segmentAddressOf(m.addr()) < 0) {
            return m.addr();
          }
        }
        return -1;
      });
      int walked = 0;
      for (int i = 0; i < trace.size() && (first == null || options.keepGoing()); i++) {
        walked = i + 1;
        current = i;
        TorchSnapshot.Entry e = trace.get(i);
        switch (e.action()) {
          case "segment_alloc", "segment_map" -> {
            newSegments++;
            driver.queue(e.action(), e.addr(), e.size());
          }
          case "segment_free" -> {
            segmentFrees++;
            applying = true;
            boolean released = model.releaseSegmentAt(e.addr());
            applying = false;
            if (!released) {
              diverge(i, e, -1, "the recording frees the segment at 0x" + Long.toHexString(e.addr()) + ", which in the model is not one whole free segment", e.addr());
            }
          }
          case "segment_unmap" -> i = unmaps(trace, i);
          case "alloc" -> alloc(i, e);
          case "free_completed" -> {
            Long h = handleByAddress.remove(e.addr());
            if (h == null) {
              diverge(i, e, -1, "the recording frees a block at 0x" + Long.toHexString(e.addr()) + " that the model does not hold", e.addr());
            } else {
              frees++;
              model.free(h);
            }
          }
          case "oom" -> oom(i, e);
          default -> {}
        }
      }
      Boolean finalMatches = walked == trace.size() ? finalStateMatches() : null;
      return new ReplayReport.DeviceResult(
          device, model.conf().canonical(), walked, allocations, addressMatches, decisions, decisionMatches,
          newSegments, segmentFrees, frees, start.inferred().size(),
          model.torchStats().peak(TorchStats.Kind.RESERVED_BYTES, "all"), model.torchStats().peak(TorchStats.Kind.ALLOCATED_BYTES, "all"),
          finalMatches, first);
    }

    private void alloc(int i, TorchSnapshot.Entry e) {
      allocations++;
      decisions++;
      driver.begin(false);
      unrecorded.clear();
      AllocOutcome o = model.allocate(new AllocRequest(e.size(), Tag.TEMP, false, e.stream()));
      driver.end();
      List<String> mismatches = new ArrayList<>(driver.mismatches());
      mismatches.addAll(unrecorded);
      String ladder = compareLadderUnmaps();
      if (ladder != null) {
        mismatches.add(ladder);
      }
      if (!(o instanceof AllocOutcome.Allocated a)) {
        diverge(i, e, -1, "the model ran out of memory where the recording allocated", e.addr());
        return;
      }
      long at = a.extents().offsetBytes(0);
      handleByAddress.put(e.addr(), a.handle());
      boolean addressOk = at == e.addr();
      if (addressOk) {
        addressMatches++;
      }
      if (mismatches.isEmpty()) {
        decisionMatches++;
      }
      if (!addressOk || !mismatches.isEmpty()) {
        StringBuilder what = new StringBuilder();
        if (!addressOk) {
          what.append("the model placed the allocation at 0x").append(Long.toHexString(at))
              .append(", the recording at 0x").append(Long.toHexString(e.addr()));
        }
        for (String m : mismatches) {
          what.append(what.length() > 0 ? "; " : "").append(m);
        }
        diverge(i, e, at, what.toString(), e.addr());
      }
    }

    private void oom(int i, TorchSnapshot.Entry e) {
      decisions++;
      driver.begin(true);
      unrecorded.clear();
      AllocOutcome o = model.allocate(new AllocRequest(Math.max(1, e.size()), Tag.TEMP, false, e.stream()));
      driver.end();
      List<String> mismatches = new ArrayList<>(driver.mismatches());
      mismatches.addAll(unrecorded);
      String ladder = compareLadderUnmaps();
      if (ladder != null) {
        mismatches.add(ladder);
      }
      if (o instanceof AllocOutcome.Allocated a) {
        model.free(a.handle());
        diverge(i, e, a.extents().offsetBytes(0), "the recording ran out of memory here but the model served the request", -1);
      } else if (!mismatches.isEmpty()) {
        diverge(i, e, -1, String.join("; ", mismatches), -1);
      } else {
        decisionMatches++;
      }
    }

    /**
     * A run of recorded unmaps. Followed by maps and an alloc, or by an oom, it is the retry ladder
     * of that malloc (PyTorch's {@code malloc} runs {@code release_cached_blocks}, which unmaps
     * through {@code unmap_block}): the device refused at this point, the model must unmap the same
     * ranges inside its own malloc. Otherwise it is an explicit {@code empty_cache()}.
     */
    private int unmaps(List<TorchSnapshot.Entry> trace, int i) {
      int j = i;
      while (j < trace.size() && trace.get(j).action().equals("segment_unmap")) {
        j++;
      }
      int k = j;
      while (k < trace.size() && trace.get(k).action().equals("segment_map")) {
        k++;
      }
      boolean ladder = k < trace.size() && (trace.get(k).action().equals("alloc") && k > j || trace.get(k).action().equals("oom"));
      if (!ladder) {
        return unmapRun(trace, i);
      }
      driver.queueRefusal();
      for (int m = i; m < j; m++) {
        expectedUnmaps.add(new long[] {trace.get(m).addr(), trace.get(m).size()});
      }
      return j - 1;
    }

    /** After a malloc: the model's own unmaps must be the recorded ladder's, in order. */
    private String compareLadderUnmaps() {
      if (expectedUnmaps.isEmpty() && modelUnmaps.isEmpty()) {
        return null;
      }
      decisions++;
      String problem = null;
      for (int k = 0; k < Math.max(expectedUnmaps.size(), modelUnmaps.size()); k++) {
        long[] r = k < expectedUnmaps.size() ? expectedUnmaps.get(k) : null;
        long[] m = k < modelUnmaps.size() ? modelUnmaps.get(k) : null;
        if (r == null || m == null || r[0] != m[0] || r[1] != m[1]) {
          problem = "unmap " + (k + 1) + " of the retry ladder is " + (r == null ? "nothing" : r[1] + " B at 0x" + Long.toHexString(r[0]))
              + " in the recording, " + (m == null ? "nothing" : m[1] + " B at 0x" + Long.toHexString(m[0])) + " in the model";
          break;
        }
      }
      expectedUnmaps.clear();
      modelUnmaps.clear();
      if (problem == null) {
        decisionMatches++;
      }
      return problem;
    }

    /** Compares a run of recorded segment_unmap entries with the model's own empty_cache. */
    private int unmapRun(List<TorchSnapshot.Entry> trace, int i) {
      List<long[]> recorded = new ArrayList<>();
      int j = i;
      while (j < trace.size() && trace.get(j).action().equals("segment_unmap")) {
        recorded.add(new long[] {trace.get(j).addr(), trace.get(j).size()});
        j++;
      }
      unmaps.clear();
      applying = true;
      model.emptyCache();
      applying = false;
      decisions++;
      boolean same = unmaps.size() == recorded.size();
      for (int k = 0; same && k < recorded.size(); k++) {
        same = unmaps.get(k)[0] == recorded.get(k)[0] && unmaps.get(k)[1] == recorded.get(k)[1];
      }
      if (same) {
        decisionMatches++;
      } else {
        int k = 0;
        while (k < recorded.size() && k < unmaps.size() && recorded.get(k)[0] == unmaps.get(k)[0] && recorded.get(k)[1] == unmaps.get(k)[1]) {
          k++;
        }
        String rec = k < recorded.size() ? recorded.get(k)[1] + " B at 0x" + Long.toHexString(recorded.get(k)[0]) : "nothing";
        String mine = k < unmaps.size() ? unmaps.get(k)[1] + " B at 0x" + Long.toHexString(unmaps.get(k)[0]) : "nothing";
        diverge(i + k, trace.get(Math.min(i + k, j - 1)), -1,
            "the recording unmaps " + recorded.size() + " ranges, the model's empty_cache " + unmaps.size() + "; unmap " + (k + 1) + " of the run is " + rec + " in the recording, " + mine + " in the model",
            trace.get(i).addr());
      }
      return j - 1;
    }

    @Override
    public void segmentUnmap(long addressBytes, long sizeBytes, long stream) {
      if (applying) {
        unmaps.add(new long[] {addressBytes, sizeBytes});
      } else {
        modelUnmaps.add(new long[] {addressBytes, sizeBytes});
      }
    }

    @Override
    public void segmentFree(long addressBytes, long sizeBytes, long stream) {
      if (!applying) {
        unrecorded.add("the model freed the segment of " + sizeBytes + " B at 0x" + Long.toHexString(addressBytes) + ", which the recording keeps");
      }
    }

    private void diverge(int i, TorchSnapshot.Entry e, long modelAddress, String what, long recordedAddress) {
      if (first != null) {
        return;
      }
      first = new ReplayReport.Divergence(
          device, i, e.action(), e.size(), e.stream(), e.addr(), modelAddress, what, state(recordedAddress, modelAddress), cause(i, recordedAddress, modelAddress));
    }

    private String state(long recordedAddress, long modelAddress) {
      StringBuilder sb = new StringBuilder();
      String rec = recordedAddress >= 0 ? model.describeSegmentAt(recordedAddress) : null;
      String mine = modelAddress >= 0 ? model.describeSegmentAt(modelAddress) : null;
      if (rec != null) {
        sb.append("In the model, after the event, the recorded address lies in ").append(rec);
      } else if (recordedAddress >= 0) {
        sb.append("In the model, no segment holds the recorded address 0x").append(Long.toHexString(recordedAddress)).append('.');
      }
      if (mine != null && (rec == null || !mine.equals(rec))) {
        sb.append(sb.length() > 0 ? " " : "").append("The model's choice lies in ").append(mine);
      }
      return sb.toString();
    }

    private String cause(int i, long recordedAddress, long modelAddress) {
      StringBuilder sb = new StringBuilder();
      RecordingStart.Inferred suspect = null;
      long impliedRemainder = -1;
      long bestDistance = Long.MAX_VALUE;
      int others = 0;
      for (RecordingStart.Inferred inf : start.inferred().values()) {
        if (inf.freedAtEvent() <= i || !(inSegment(inf, recordedAddress) || inSegment(inf, modelAddress))) {
          continue;
        }
        others++;
        long[] blk = model.blockAt(inf.address());
        if (blk == null) {
          continue;
        }
        long end = blk[0] + blk[1];
        // A remainder the rebuild could not see ends where the recorded choice begins.
        long gap = recordedAddress - end;
        long distance = gap >= 0 ? gap : Long.MAX_VALUE - 1;
        if (blk[5] == 1 && distance < bestDistance) {
          bestDistance = distance;
          suspect = inf;
          impliedRemainder = gap >= 0 && gap <= TorchCachingModel.SMALL_SIZE_BYTES && blk[3] == end ? gap : -1;
        }
      }
      if (suspect == null) {
        sb.append("No block of unknown size borders a free block here: the start state does not explain this difference.");
      } else {
        long[] blk = model.blockAt(suspect.address());
        sb.append("The block at 0x").append(Long.toHexString(suspect.address()))
            .append(" (requested ").append(suspect.requestedBytes()).append(" B) was allocated before recording began and is freed only at event ")
            .append(suspect.freedAtEvent()).append(". Free entries carry only the requested size, so the rebuild gave it ").append(suspect.sizeBytes())
            .append(" B (its rounded request").append(suspect.absorbedBytes() > 0 ? " plus a " + suspect.absorbedBytes() + " B gap too small to split off" : "")
            .append(") and counted everything after it as the free block of ").append(blk[4]).append(" B. The real block may have kept an unsplit remainder of up to 1 MiB (PyTorch splits a large-pool block only when more than 1 MiB remains: should_split in c10/cuda/CUDACachingAllocator.cpp), which the file cannot reveal");
        if (impliedRemainder > 0) {
          sb.append(": with a remainder of ").append(impliedRemainder).append(" B the free block would start exactly at the recorded address and be ")
              .append(blk[4] - impliedRemainder).append(" B, and best fit would choose it as the recording shows");
        }
        sb.append('.');
        if (others > 1) {
          sb.append(" (").append(others - 1).append(" more block(s) of unknown size live in the same segment(s).)");
        }
      }
      return sb.toString();
    }

    private boolean inSegment(RecordingStart.Inferred inf, long address) {
      if (address < 0) {
        return false;
      }
      String a = model.describeSegmentAt(address);
      String b = model.describeSegmentAt(inf.segmentAddress());
      return a != null && a.equals(b);
    }

    private boolean finalStateMatches() {
      List<SegmentLayout> mine = model.layout();
      List<TorchSnapshot.Segment> theirs = snapshot.segmentsOf(device);
      if (mine.size() != theirs.size()) {
        return false;
      }
      for (int k = 0; k < mine.size(); k++) {
        SegmentLayout m = mine.get(k);
        TorchSnapshot.Segment t = theirs.get(k);
        if (m.addressBytes() != t.address() || m.sizeBytes() != t.totalSize() || m.blocks().size() != t.blocks().size()
            || !m.pool().equals(t.segmentType()) || m.stream() != t.stream()) {
          return false;
        }
        for (int b = 0; b < m.blocks().size(); b++) {
          SegmentLayout.Block mb = m.blocks().get(b);
          TorchSnapshot.Block tb = t.blocks().get(b);
          if (mb.addressBytes() != tb.address() || mb.sizeBytes() != tb.size()
              || (mb.state() == SegmentLayout.State.ACTIVE_ALLOCATED) != tb.live()) {
            return false;
          }
        }
      }
      return true;
    }
  }
}

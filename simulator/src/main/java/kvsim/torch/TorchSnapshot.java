package kvsim.torch;

import java.util.List;
import java.util.Map;

/**
 * The content of a PyTorch memory snapshot ({@code torch.cuda.memory._snapshot()}, built by
 * PyTorch's {@code torch/csrc/cuda/memory_snapshot.cpp} at pytorch/pytorch @0006736) that kvsim
 * uses: the segments with their blocks at the moment of the snapshot, and the per-device trace of
 * allocator actions that led there. Stack frames are dropped when reading.
 *
 * @param source the file it was read from, for messages
 * @param segments every segment of every device, sorted by address as PyTorch writes them
 * @param deviceTraces one list of trace entries per device (empty lists for devices without history)
 * @param allocatorSettings the {@code allocator_settings} dict, or an empty map when absent (older
 *     files)
 */
public record TorchSnapshot(
    String source, List<Segment> segments, List<List<Entry>> deviceTraces, Map<String, Object> allocatorSettings) {

  /**
   * One segment; for expandable segments one entry per contiguous mapped run.
   *
   * @param device CUDA device index
   * @param address start address
   * @param totalSize bytes of the segment (or mapped run)
   * @param allocatedSize bytes in {@code active_allocated} blocks, as the file states it
   * @param activeSize bytes in allocated or pending-free blocks, as the file states it
   * @param requestedSize bytes requested by the live allocations, as the file states it
   * @param stream the {@code cudaStream_t} value (0 = default stream)
   * @param segmentType {@code small} or {@code large}
   * @param expandable whether it belongs to an expandable segment
   * @param blocks its blocks in address order
   */
  public record Segment(
      int device,
      long address,
      long totalSize,
      long allocatedSize,
      long activeSize,
      long requestedSize,
      long stream,
      String segmentType,
      boolean expandable,
      List<Block> blocks) {

    /** Returns whether the segment is in the small pool. */
    public boolean small() {
      return "small".equals(segmentType);
    }
  }

  /**
   * One block of a segment.
   *
   * @param address start address (computed from the segment address for older files without it)
   * @param size block size
   * @param requestedSize bytes the caller asked for (stale or 0 for free blocks)
   * @param state {@code active_allocated}, {@code active_pending_free} or {@code inactive}
   */
  public record Block(long address, long size, long requestedSize, String state) {
    /** Returns whether the block is held by a tensor (allocated or awaiting its free). */
    public boolean live() {
      return !"inactive".equals(state);
    }

    /** Returns whether the block is allocated ({@code active_allocated}). */
    public boolean allocated() {
      return "active_allocated".equals(state);
    }
  }

  /**
   * One trace entry ({@code device_traces}).
   *
   * @param action {@code alloc}, {@code free_requested}, {@code free_completed}, {@code
   *     segment_alloc}, {@code segment_free}, {@code segment_map}, {@code segment_unmap}, {@code
   *     oom}, {@code snapshot}, …
   * @param addr the address acted on (0 for {@code oom})
   * @param size bytes (requested size for alloc/free, segment or range size, rounded size for oom)
   * @param stream the stream
   * @param timeMicros {@code time_us}, or -1 when the file does not record it
   * @param deviceFree the {@code device_free} of an {@code oom} entry, else -1
   */
  public record Entry(String action, long addr, long size, long stream, long timeMicros, long deviceFree) {}

  /**
   * Returns whether any device has allocator history (an {@code alloc} entry); files recorded with
   * {@code enabled="state"} keep at most one entry and count as state-only.
   */
  public boolean hasHistory() {
    for (List<Entry> t : deviceTraces) {
      for (Entry e : t) {
        if (e.action().equals("alloc")) {
          return true;
        }
      }
    }
    return false;
  }

  /** Returns the devices that have an {@code alloc} entry in their trace. */
  public List<Integer> devicesWithHistory() {
    List<Integer> out = new java.util.ArrayList<>();
    for (int d = 0; d < deviceTraces.size(); d++) {
      for (Entry e : deviceTraces.get(d)) {
        if (e.action().equals("alloc")) {
          out.add(d);
          break;
        }
      }
    }
    return out;
  }

  /** Returns the segments of one device, in address order. */
  public List<Segment> segmentsOf(int device) {
    return segments.stream().filter(s -> s.device() == device).sorted(java.util.Comparator.comparingLong(Segment::address)).toList();
  }

  /** Returns the trace of one device (empty when the file has none for it). */
  public List<Entry> traceOf(int device) {
    return device < deviceTraces.size() ? deviceTraces.get(device) : List.of();
  }
}

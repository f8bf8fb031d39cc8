package kvsim.torch;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The outcome of replaying a recording against the caching model ({@code kvsim torch-replay}).
 *
 * @param file the snapshot file
 * @param devices per-device results, in device order
 */
public record ReplayReport(String file, List<DeviceResult> devices) {

  /**
   * What one device's replay found.
   *
   * @param device CUDA device index
   * @param conf the options replayed with, canonical PyTorch syntax
   * @param events trace entries walked (fewer than the trace holds when the replay stopped at a divergence)
   * @param allocations {@code alloc} entries replayed
   * @param addressMatches allocations the model placed at the recorded address
   * @param segmentDecisions decisions taken (one per allocation and per OOM: new memory or not, and
   *     how much)
   * @param segmentMatches decisions equal to the recording's
   * @param newSegmentsRecorded {@code segment_alloc}/{@code segment_map} entries in the trace
   * @param segmentFrees {@code segment_free} entries applied
   * @param frees {@code free_completed} entries replayed
   * @param inferredBlocks blocks live at the start whose size had to be inferred
   * @param peakReservedBytes the model's peak reserved bytes over the replay (start state included)
   * @param peakAllocatedBytes the model's peak allocated bytes over the replay
   * @param finalStateMatches whether the model's segments and blocks at the end equal the file's
   *     (null when the replay stopped early)
   * @param firstDivergence the first event where the model and the recording differ, or null
   */
  public record DeviceResult(
      int device,
      String conf,
      long events,
      long allocations,
      long addressMatches,
      long segmentDecisions,
      long segmentMatches,
      long newSegmentsRecorded,
      long segmentFrees,
      long frees,
      long inferredBlocks,
      long peakReservedBytes,
      long peakAllocatedBytes,
      Boolean finalStateMatches,
      Divergence firstDivergence) {}

  /**
   * The first place where the model and the recording disagree.
   *
   * @param device CUDA device index
   * @param eventIndex index of the trace entry (0-based, in {@code device_traces[device]})
   * @param action the entry's action
   * @param sizeBytes its size
   * @param stream its stream
   * @param recordedAddress the address the recording shows
   * @param modelAddress the address the model chose (-1 if none)
   * @param what what differed, in plain words
   * @param state the model's state around it (the segments holding the recorded and the model's
   *     address, block by block), in plain words
   * @param cause the likely cause, in plain words
   */
  public record Divergence(
      int device,
      long eventIndex,
      String action,
      long sizeBytes,
      long stream,
      long recordedAddress,
      long modelAddress,
      String what,
      String state,
      String cause) {}

  /** Returns the allocations over all devices. */
  public long allocations() {
    return devices.stream().mapToLong(DeviceResult::allocations).sum();
  }

  /** Returns the address matches over all devices. */
  public long addressMatches() {
    return devices.stream().mapToLong(DeviceResult::addressMatches).sum();
  }

  /** Returns the segment decisions over all devices. */
  public long segmentDecisions() {
    return devices.stream().mapToLong(DeviceResult::segmentDecisions).sum();
  }

  /** Returns the matching segment decisions over all devices. */
  public long segmentMatches() {
    return devices.stream().mapToLong(DeviceResult::segmentMatches).sum();
  }

  /** Returns the first divergence of the lowest device that has one, or null. */
  public Divergence firstDivergence() {
    for (DeviceResult d : devices) {
      if (d.firstDivergence() != null) {
        return d.firstDivergence();
      }
    }
    return null;
  }

  /** Returns whether every address, every segment decision and the final state matched. */
  public boolean allMatched() {
    for (DeviceResult d : devices) {
      if (d.firstDivergence() != null || d.addressMatches() != d.allocations() || d.segmentMatches() != d.segmentDecisions() || !Boolean.TRUE.equals(d.finalStateMatches())) {
        return false;
      }
    }
    return true;
  }

  /** Returns the report as one JSON-ready map. */
  public Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("file", file);
    m.put("allocations", allocations());
    m.put("address_matches", addressMatches());
    m.put("segment_decisions", segmentDecisions());
    m.put("segment_matches", segmentMatches());
    m.put("first_divergence", divergenceJson(firstDivergence()));
    m.put("all_matched", allMatched());
    List<Map<String, Object>> devs = new java.util.ArrayList<>();
    for (DeviceResult d : devices) {
      Map<String, Object> dm = new LinkedHashMap<>();
      dm.put("device", d.device());
      dm.put("torch_alloc_conf", d.conf());
      dm.put("events", d.events());
      dm.put("allocations", d.allocations());
      dm.put("address_matches", d.addressMatches());
      dm.put("segment_decisions", d.segmentDecisions());
      dm.put("segment_matches", d.segmentMatches());
      dm.put("new_segments_recorded", d.newSegmentsRecorded());
      dm.put("segment_frees", d.segmentFrees());
      dm.put("frees", d.frees());
      dm.put("inferred_blocks", d.inferredBlocks());
      dm.put("peak_reserved_bytes", d.peakReservedBytes());
      dm.put("peak_allocated_bytes", d.peakAllocatedBytes());
      dm.put("final_state_matches", d.finalStateMatches());
      dm.put("first_divergence", divergenceJson(d.firstDivergence()));
      devs.add(dm);
    }
    m.put("devices", devs);
    return m;
  }

  private static Map<String, Object> divergenceJson(Divergence d) {
    if (d == null) {
      return null;
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("device", d.device());
    m.put("event_index", d.eventIndex());
    m.put("action", d.action());
    m.put("size", d.sizeBytes());
    m.put("stream", d.stream());
    m.put("recorded_address", d.recordedAddress());
    m.put("model_address", d.modelAddress() < 0 ? null : d.modelAddress());
    m.put("what", d.what());
    m.put("state", d.state());
    m.put("cause", d.cause());
    return m;
  }
}

package kvsim.alloc.caching;

import java.util.List;
import java.util.function.LongSupplier;

/**
 * A {@link DeviceDriver} that hands out the addresses a recording shows (the guided replay of
 * {@code kvsim torch-replay}) and notes where the model's segment decisions differ from it.
 * Snapshot replay queues the recorded {@code segment_alloc} and {@code segment_map} entries,
 * brackets each malloc in {@link #begin} and {@link #end}, and reads the differences from {@link
 * #mismatches}. {@code kvsim.registry.AllocatorRegistry#recordedDriver} builds one.
 */
public interface RecordedDriver extends DeviceDriver {
  /** One queued or requested driver action. */
  record Action(String action, long addressBytes, long sizeBytes) {
    @Override
    public String toString() {
      return action + " " + sizeBytes + " B at 0x" + Long.toHexString(addressBytes);
    }
  }

  /** Queues a recorded {@code segment_alloc} or {@code segment_map}. */
  void queue(String action, long addressBytes, long sizeBytes);

  /**
   * Sets where a new reservation's base comes from when no map is queued: the caller looks ahead in
   * the recording for the first map outside every known segment (-1 for none).
   */
  void setReservationLookahead(LongSupplier lookahead);

  /**
   * Queues a refusal: the recording shows that the device ran out of memory at this point of a
   * malloc (its retry ladder released memory next), so the next driver request fails.
   */
  void queueRefusal();

  /** Starts a decision (one malloc): clears the record of requests. */
  void begin(boolean refuseWhenEmpty);

  /** Returns what differed from the recording in this decision (empty when everything matched). */
  List<String> mismatches();

  /** Ends a decision: recorded actions the model did not take are mismatches and are dropped. */
  List<Action> end();
}

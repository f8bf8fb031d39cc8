package kvsim.alloc.caching;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongPredicate;

/**
 * A driver that hands out the addresses a recording shows (the guided replay of {@code kvsim
 * torch-replay}, README "PyTorch's caching allocator and its memory snapshots"): the
 * recorded {@code segment_alloc} and {@code segment_map} entries are queued as they appear (they
 * precede the {@code alloc} that caused them); when the model asks for a new segment it gets the
 * queued address, provided its size is the recorded one. Each request is noted, so the caller can
 * compare the model's segment decisions with the recording.
 *
 * <ul>
 *   <li>A request with nothing queued, or of another size than queued, is a divergence; it is
 *       served at a fresh synthetic address far above any device address so the replay can go on.
 *   <li>A queued refusal (the recording's retry ladder released memory at that point) makes the
 *       next request fail, so the model runs its own ladder there.
 *   <li>In "refuse when empty" mode (an {@code oom} entry is being replayed) a request with nothing
 *       queued fails, as the device did.
 *   <li>Device capacity is unknown to a recording, so free bytes are reported as 0.
 * </ul>
 */
public final class ReplayDriver implements RecordedDriver {
  private static final long SYNTHETIC_BASE = 0x7000_0000_0000_0000L;

  private final ArrayDeque<Action> queued = new ArrayDeque<>();
  private final List<Action> granted = new ArrayList<>();
  private final List<String> mismatches = new ArrayList<>();
  private long nextSynthetic = SYNTHETIC_BASE;
  private java.util.function.LongSupplier lookahead;
  private boolean refuseWhenEmpty;

  /** Queues a recorded {@code segment_alloc} or {@code segment_map}. */
  @Override
  public void queue(String action, long addressBytes, long sizeBytes) {
    queued.add(new Action(action, addressBytes, sizeBytes));
  }

  /**
   * Sets where a new reservation's base comes from when no map is queued: the caller looks ahead in
   * the recording for the first map outside every known segment (-1 for none).
   */
  @Override
  public void setReservationLookahead(java.util.function.LongSupplier lookahead) {
    this.lookahead = lookahead;
  }

  /**
   * Queues a refusal: the recording shows that the device ran out of memory at this point of a
   * malloc (its retry ladder released memory next), so the next driver request fails.
   */
  @Override
  public void queueRefusal() {
    queued.add(new Action(REFUSAL, -1, 0));
  }

  private static final String REFUSAL = "refusal";

  /** Starts a decision (one malloc): clears the record of requests. */
  @Override
  public void begin(boolean refuseWhenEmpty) {
    this.refuseWhenEmpty = refuseWhenEmpty;
    granted.clear();
    mismatches.clear();
  }

  /** Returns the driver actions the model took in this decision. */
  public List<Action> granted() {
    return List.copyOf(granted);
  }

  /** Returns what differed from the recording in this decision (empty when everything matched). */
  @Override
  public List<String> mismatches() {
    return List.copyOf(mismatches);
  }

  /** Ends a decision: recorded actions the model did not take are mismatches and are dropped. */
  @Override
  public List<Action> end() {
    List<Action> left = new ArrayList<>(queued);
    for (Action a : left) {
      mismatches.add(a.action().equals(REFUSAL)
          ? "the recording shows the device running out of memory where the model needed no more"
          : "the recording shows " + a + " that the model did not need");
    }
    queued.clear();
    refuseWhenEmpty = false;
    return left;
  }

  /** Returns the recorded actions still waiting for a malloc. */
  public int queuedCount() {
    return queued.size();
  }

  private long synthetic(long sizeBytes) {
    long a = nextSynthetic;
    // The segment rounded up to 2 MiB plus a 2 MiB gap, exact: the synthetic range above
    // SYNTHETIC_BASE holds about 1 EiB, and running past 2^63 must fail instead of wrapping around.
    long granule = 2L << 20;
    long rounded = sizeBytes % granule == 0 ? sizeBytes : Math.addExact(sizeBytes, granule - sizeBytes % granule);
    nextSynthetic = Math.addExact(nextSynthetic, Math.addExact(rounded, granule));
    return a;
  }

  @Override
  public long malloc(long sizeBytes, long stream) {
    Action head = queued.peek();
    if (head != null && head.action().equals(REFUSAL)) {
      queued.poll();
      return -1;
    }
    if (head == null) {
      if (refuseWhenEmpty) {
        return -1;
      }
      long a = synthetic(sizeBytes);
      mismatches.add("the model needed a new segment of " + sizeBytes + " B that the recording does not show");
      granted.add(new Action("segment_alloc", a, sizeBytes));
      return a;
    }
    queued.poll();
    if (!head.action().equals("segment_alloc") || head.sizeBytes() != sizeBytes) {
      long a = synthetic(sizeBytes);
      mismatches.add("the model needed a new segment of " + sizeBytes + " B where the recording shows " + head);
      granted.add(new Action("segment_alloc", a, sizeBytes));
      return a;
    }
    granted.add(head);
    return head.addressBytes();
  }

  @Override
  public void free(long addressBytes, long sizeBytes) {}

  @Override
  public long reserve(long sizeBytes, long pageBytes, long stream) {
    // A new reservation is mapped from its base first (try_allocate_expandable_block grows at the
    // lowest address that fits).
    for (Action a : queued) {
      if (a.action().equals("segment_map")) {
        return a.addressBytes();
      }
      if (!a.action().equals(REFUSAL)) {
        break;
      }
    }
    // A reservation made by a malloc that then failed shows its address only at a later map.
    long ahead = lookahead == null ? -1 : lookahead.getAsLong();
    return ahead >= 0 ? ahead : synthetic(sizeBytes);
  }

  @Override
  public void releaseReservation(long addressBytes, long sizeBytes) {}

  @Override
  public boolean map(long addressBytes, long sizeBytes, long stream) {
    Action head = queued.peek();
    if (head != null && head.action().equals(REFUSAL)) {
      queued.poll();
      return false;
    }
    if (head == null) {
      if (refuseWhenEmpty) {
        return false;
      }
      mismatches.add("the model mapped " + sizeBytes + " B at 0x" + Long.toHexString(addressBytes) + ", which the recording does not show");
      granted.add(new Action("segment_map", addressBytes, sizeBytes));
      return true;
    }
    queued.poll();
    Action mine = new Action("segment_map", addressBytes, sizeBytes);
    if (!head.equals(mine)) {
      mismatches.add("the model did " + mine + " where the recording shows " + head);
    }
    granted.add(mine);
    return true;
  }

  @Override
  public void unmap(long addressBytes, long sizeBytes) {}

  @Override
  public long freeBytes() {
    return 0;
  }

  @Override
  public void markReleasable(long addressBytes, boolean releasable) {}

  @Override
  public long largestMallocBytes() {
    return 0;
  }

  @Override
  public long largestMallocBytes(LongPredicate releasable) {
    return 0;
  }
}

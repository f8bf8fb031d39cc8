package kvsim.alloc.caching;

import java.util.Map;
import java.util.TreeMap;

/**
 * The runs of a device range that a {@code cudaMalloc} could take if every releasable segment were
 * freed first, kept up to date as segments change: the <b>blocking</b> segments (those that would
 * stay) in address order, and a multiset of the lengths of the runs between them.
 *
 * <ul>
 *   <li>A run is everything between two consecutive blocking segments (free gaps and releasable
 *       segments alike), plus the run from the range's base to the first blocking segment and the
 *       run from the last one to the range's end; with no blocking segment the one run is the whole
 *       range.
 *   <li>Blocking a segment splits its run in two (either part may be empty); unblocking joins the
 *       two runs beside it. Either is O(log n) in the number of blocking segments.
 *   <li>The largest run is the multiset's greatest key, so {@link #largestRunBytes()} is O(log n).
 * </ul>
 *
 * <p>Note [Releasable runs]: this is the incremental form of walking every segment in address order
 * and summing gaps and releasable segments until a blocking one ({@link
 * RegionDriver#largestMallocBytes(java.util.function.LongPredicate)}). The replay engine asks for
 * the largest free request after every event, and on a full device that walk dominated a replay;
 * the two must agree at every moment, which {@link #check()} and the model's invariant checker
 * verify.
 */
final class ReleasableRuns {
  private final long baseBytes;
  private final long endBytes;
  private final TreeMap<Long, Long> blocking = new TreeMap<>(); // start -> end
  private final TreeMap<Long, Integer> runCounts = new TreeMap<>(); // run length -> how many

  /** Runs over {@code [baseBytes, endBytes)} with no blocking segment: one run of the whole range. */
  ReleasableRuns(long baseBytes, long endBytes) {
    this.baseBytes = baseBytes;
    this.endBytes = endBytes;
    addRun(endBytes - baseBytes);
  }

  /** Returns whether the segment starting at {@code startBytes} is blocking. */
  boolean isBlocking(long startBytes) {
    return blocking.containsKey(startBytes);
  }

  /** Returns how many segments are blocking. */
  int blockingCount() {
    return blocking.size();
  }

  /** Marks the segment {@code [startBytes, endBytes)}, which must not overlap a blocking one, as blocking. */
  void block(long startBytes, long endBytes) {
    long runStart = runStartBefore(startBytes);
    long runEnd = runEndAfter(startBytes);
    if (runStart > startBytes || endBytes > runEnd) {
      throw new IllegalStateException("blocking segment [0x" + Long.toHexString(startBytes) + ", 0x"
          + Long.toHexString(endBytes) + ") overlaps another or lies outside the range");
    }
    removeRun(runEnd - runStart);
    addRun(startBytes - runStart);
    addRun(runEnd - endBytes);
    blocking.put(startBytes, endBytes);
  }

  /** Marks the blocking segment starting at {@code startBytes} as releasable (or gone). */
  void unblock(long startBytes) {
    Long endBytes = blocking.remove(startBytes);
    if (endBytes == null) {
      throw new IllegalStateException("no blocking segment at 0x" + Long.toHexString(startBytes));
    }
    long runStart = runStartBefore(startBytes);
    long runEnd = runEndAfter(startBytes);
    removeRun(startBytes - runStart);
    removeRun(runEnd - endBytes);
    addRun(runEnd - runStart);
  }

  /** Returns the longest run: the largest {@code cudaMalloc} once every releasable segment is freed. */
  long largestRunBytes() {
    return runCounts.lastKey();
  }

  /** Returns the end of the blocking segment below {@code startBytes}, or the range's base. */
  private long runStartBefore(long startBytes) {
    Map.Entry<Long, Long> before = blocking.lowerEntry(startBytes);
    return before == null ? baseBytes : before.getValue();
  }

  /** Returns the start of the blocking segment above {@code startBytes}, or the range's end. */
  private long runEndAfter(long startBytes) {
    Long after = blocking.higherKey(startBytes);
    return after == null ? endBytes : after;
  }

  private void addRun(long lengthBytes) {
    runCounts.merge(lengthBytes, 1, Integer::sum);
  }

  private void removeRun(long lengthBytes) {
    Integer n = runCounts.get(lengthBytes);
    if (n == null) {
      throw new IllegalStateException("no run of " + lengthBytes + " B to remove");
    }
    if (n == 1) {
      runCounts.remove(lengthBytes);
    } else {
      runCounts.put(lengthBytes, n - 1);
    }
  }

  /**
   * Recomputes the runs from the blocking segments and returns what differs from the multiset, or
   * null when it matches.
   */
  String check() {
    TreeMap<Long, Integer> expected = new TreeMap<>();
    long cursor = baseBytes;
    for (Map.Entry<Long, Long> b : blocking.entrySet()) {
      if (b.getKey() < cursor || b.getValue() < b.getKey()) {
        return "blocking segment at 0x" + Long.toHexString(b.getKey()) + " overlaps the one before it";
      }
      expected.merge(b.getKey() - cursor, 1, Integer::sum);
      cursor = b.getValue();
    }
    if (cursor > endBytes) {
      return "the last blocking segment ends past the range";
    }
    expected.merge(endBytes - cursor, 1, Integer::sum);
    return expected.equals(runCounts) ? null : "run lengths are " + runCounts + " but the blocking segments give " + expected;
  }
}

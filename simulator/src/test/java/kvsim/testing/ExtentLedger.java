package kvsim.testing;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import kvsim.alloc.Extents;
import kvsim.devicemodel.Region;

/**
 * An account of live allocations kept apart from any allocator: it records the extents each
 * allocation was given and fails (with {@link AssertionError}) when an extent is empty, lies outside
 * the region or overlaps the extent of another live allocation (or another extent of the same
 * one), when a handle is handed out twice while live, and when an allocation is released with other
 * extents than it got.
 */
public final class ExtentLedger {
  private record Live(Extents extents, long requestedBytes, long allocatedBytes) {}

  private final Region region;
  private final TreeMap<Long, long[]> byOffset = new TreeMap<>(); // offset -> {end, handle}
  private final Map<Long, Live> byHandle = new HashMap<>();
  private long requestedBytes;
  private long allocatedBytes;

  /** Creates an empty ledger for allocations inside {@code region}. */
  public ExtentLedger(Region region) {
    this.region = region;
  }

  /** Records a new live allocation, checking its extents against the region and the live ones. */
  public void add(long handle, Extents extents, long requestedBytes, long allocatedBytes) {
    if (byHandle.containsKey(handle)) {
      throw new AssertionError("handle " + handle + " handed out again while still live");
    }
    if (extents.count() == 0) {
      throw new AssertionError("allocation " + handle + " has no extents");
    }
    for (int i = 0; i < extents.count(); i++) {
      long offset = extents.offsetBytes(i);
      long size = extents.sizeBytes(i);
      if (size <= 0 || !region.contains(offset, size)) {
        throw new AssertionError(
            "allocation " + handle + ": extent [" + offset + ", +" + size + ") is empty or outside "
                + region);
      }
      Map.Entry<Long, long[]> below = byOffset.floorEntry(offset);
      if (below != null && below.getValue()[0] > offset) {
        throw new AssertionError(overlap(handle, offset, size, below));
      }
      Map.Entry<Long, long[]> above = byOffset.ceilingEntry(offset);
      if (above != null && above.getKey() < offset + size) {
        throw new AssertionError(overlap(handle, offset, size, above));
      }
      byOffset.put(offset, new long[] {offset + size, handle});
    }
    byHandle.put(handle, new Live(extents, requestedBytes, allocatedBytes));
    // Exact: a wrapped total could hide an allocation of a size near Long.MAX_VALUE.
    this.requestedBytes = Math.addExact(this.requestedBytes, requestedBytes);
    this.allocatedBytes = Math.addExact(this.allocatedBytes, allocatedBytes);
  }

  private static String overlap(long handle, long offset, long size, Map.Entry<Long, long[]> other) {
    return "allocation " + handle + ": extent [" + offset + ", +" + size + ") overlaps ["
        + other.getKey() + ", " + other.getValue()[0] + ") of allocation " + other.getValue()[1];
  }

  /**
   * Removes a live allocation, failing unless {@code reported} (what the allocator says the
   * allocation holds) equals the extents it was given; returns those extents.
   */
  public Extents release(long handle, Extents reported) {
    Live live = byHandle.get(handle);
    if (live == null) {
      throw new AssertionError("handle " + handle + " is not live in the ledger");
    }
    if (!live.extents().equals(reported)) {
      throw new AssertionError(
          "allocation " + handle + " was given " + live.extents() + " but gives back " + reported);
    }
    for (int i = 0; i < live.extents().count(); i++) {
      byOffset.remove(live.extents().offsetBytes(i));
    }
    byHandle.remove(handle);
    requestedBytes -= live.requestedBytes();
    allocatedBytes -= live.allocatedBytes();
    return live.extents();
  }

  /** Returns whether {@code handle} is live. */
  public boolean isLive(long handle) {
    return byHandle.containsKey(handle);
  }

  /** Returns the extents recorded for a live handle. */
  public Extents extentsOf(long handle) {
    Live live = byHandle.get(handle);
    if (live == null) {
      throw new AssertionError("handle " + handle + " is not live in the ledger");
    }
    return live.extents();
  }

  /** Returns the number of live allocations. */
  public int liveCount() {
    return byHandle.size();
  }

  /** Returns the requested bytes of the live allocations. */
  public long requestedBytes() {
    return requestedBytes;
  }

  /** Returns the allocated bytes the allocator reported for the live allocations. */
  public long allocatedBytes() {
    return allocatedBytes;
  }
}

package kvsim.alloc.firstfit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.devicemodel.Region;

/**
 * The reference first fit: a sorted list of free extents searched from the front, O(n) per
 * operation, written as plainly as possible so that it can be trusted by reading. It follows the
 * rules of {@link FirstFitAllocator}'s class comment; handles are its own (a counter).
 */
final class NaiveFirstFit {
  private final Region region;
  private final long alignmentBytes;
  private final List<long[]> free = new ArrayList<>(); // {offset, size}, sorted by offset
  private final Map<Long, long[]> live = new HashMap<>(); // handle -> {offset, size, requested}
  private long nextHandle;

  NaiveFirstFit(Region region, long alignmentBytes) {
    this.region = region;
    this.alignmentBytes = alignmentBytes;
    if (region.sizeBytes() > 0) {
      free.add(new long[] {region.baseBytes(), region.sizeBytes()});
    }
  }

  /** Serves a request as first fit with low splitting, or refuses it. */
  AllocOutcome allocate(long sizeBytes) {
    long rounded = (sizeBytes + alignmentBytes - 1) / alignmentBytes * alignmentBytes;
    for (int i = 0; i < free.size(); i++) {
      long[] extent = free.get(i);
      if (extent[1] >= rounded) {
        long at = extent[0];
        extent[0] += rounded;
        extent[1] -= rounded;
        if (extent[1] == 0) {
          free.remove(i);
        }
        long handle = nextHandle++;
        live.put(handle, new long[] {at, rounded, sizeBytes});
        return new AllocOutcome.Allocated(handle, rounded, Extents.single(at, rounded));
      }
    }
    long freeBytes = freeBytes();
    OomReason reason = freeBytes >= rounded ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
    return new AllocOutcome.OutOfMemory(reason, sizeBytes, freeBytes, largestFreeBytes());
  }

  /** Returns an allocation's extent to the list, merged with the neighbours it touches. */
  void free(long handle) {
    long[] a = live.remove(handle);
    if (a == null) {
      throw new IllegalArgumentException("not live: " + handle);
    }
    int i = 0;
    while (i < free.size() && free.get(i)[0] < a[0]) {
      i++;
    }
    free.add(i, new long[] {a[0], a[1]});
    if (i + 1 < free.size() && free.get(i)[0] + free.get(i)[1] == free.get(i + 1)[0]) {
      free.get(i)[1] += free.remove(i + 1)[1];
    }
    if (i > 0 && free.get(i - 1)[0] + free.get(i - 1)[1] == free.get(i)[0]) {
      free.get(i - 1)[1] += free.remove(i)[1];
    }
  }

  long freeBytes() {
    long sum = 0;
    for (long[] e : free) {
      sum += e[1];
    }
    return sum;
  }

  long largestFreeBytes() {
    long largest = 0;
    for (long[] e : free) {
      largest = Math.max(largest, e[1]);
    }
    return largest - largest % alignmentBytes;
  }

  long requestedBytes() {
    long sum = 0;
    for (long[] a : live.values()) {
      sum += a[2];
    }
    return sum;
  }

  int freeExtentCount() {
    return free.size();
  }
}

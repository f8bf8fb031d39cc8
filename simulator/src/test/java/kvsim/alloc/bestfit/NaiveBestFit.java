package kvsim.alloc.bestfit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.devicemodel.Region;

/**
 * The reference best fit: a sorted list of free extents scanned from front to back for the
 * smallest that fits, O(n) per operation, written as plainly as possible so that it can be trusted
 * by reading. It follows the rules of {@link BestFitAllocator}'s class comment; handles are its own
 * (a counter).
 */
final class NaiveBestFit {
  private final long alignmentBytes;
  private final List<long[]> free = new ArrayList<>(); // {offset, size}, sorted by offset
  private final Map<Long, long[]> live = new HashMap<>(); // handle -> {offset, size, requested}
  private long nextHandle;

  NaiveBestFit(Region region, long alignmentBytes) {
    this.alignmentBytes = alignmentBytes;
    if (region.sizeBytes() > 0) {
      free.add(new long[] {region.baseBytes(), region.sizeBytes()});
    }
  }

  /** Serves a request from the smallest extent that holds it (the first such in address order), or refuses it. */
  AllocOutcome allocate(long sizeBytes) {
    long rounded = (sizeBytes + alignmentBytes - 1) / alignmentBytes * alignmentBytes;
    int best = -1;
    for (int i = 0; i < free.size(); i++) {
      long size = free.get(i)[1];
      if (size >= rounded && (best < 0 || size < free.get(best)[1])) {
        best = i;
      }
    }
    if (best >= 0) {
      long[] extent = free.get(best);
      long at = extent[0];
      extent[0] += rounded;
      extent[1] -= rounded;
      if (extent[1] == 0) {
        free.remove(best);
      }
      long handle = nextHandle++;
      live.put(handle, new long[] {at, rounded, sizeBytes});
      return new AllocOutcome.Allocated(handle, rounded, Extents.single(at, rounded));
    }
    long freeBytes = freeBytes();
    OomReason reason = freeBytes >= rounded ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
    return new AllocOutcome.OutOfMemory(reason, sizeBytes, freeBytes, largestFreeBytes());
  }

  /** Returns where first fit would place a request of {@code sizeBytes}: the lowest extent that holds it, or -1. */
  long firstFitOffset(long sizeBytes) {
    long rounded = (sizeBytes + alignmentBytes - 1) / alignmentBytes * alignmentBytes;
    for (long[] extent : free) {
      if (extent[1] >= rounded) {
        return extent[0];
      }
    }
    return -1;
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

package kvsim.alloc.buddy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.devicemodel.Region;

/**
 * The reference buddy allocator: one list of free blocks scanned from front to back, O(n) per
 * operation, with the top-level blocks laid out by a plain loop, written as plainly as possible so
 * that it can be trusted by reading. It follows the rules of {@link BuddyAllocator}'s class
 * comment; handles are its own (a counter).
 */
final class NaiveBuddy {
  private final long minBlockBytes;
  private final List<long[]> tops = new ArrayList<>(); // {start, size} of each top-level block
  private final List<long[]> free = new ArrayList<>(); // {start, size}, in no particular order
  private final Map<Long, long[]> live = new HashMap<>(); // handle -> {start, size, requested}
  private long nextHandle;
  private long splits;
  private long merges;

  NaiveBuddy(Region region, long minBlockBytes) {
    this.minBlockBytes = minBlockBytes;
    long start = region.baseBytes();
    long left = region.sizeBytes();
    while (left >= minBlockBytes) {
      long size = minBlockBytes;
      while (size * 2 <= left) {
        size *= 2;
      }
      tops.add(new long[] {start, size});
      free.add(new long[] {start, size});
      start += size;
      left -= size;
    }
  }

  long largestTop() {
    long largest = 0;
    for (long[] t : tops) {
      largest = Math.max(largest, t[1]);
    }
    return largest;
  }

  /** Serves a request with the smallest free block that holds its power of two (lowest address on ties), or refuses it. */
  AllocOutcome allocate(long sizeBytes) {
    if (sizeBytes > largestTop()) {
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, sizeBytes, freeBytes(), largestFreeBytes());
    }
    long rounded = minBlockBytes;
    while (rounded < sizeBytes) {
      rounded *= 2;
    }
    long[] best = null;
    for (long[] b : free) {
      if (b[1] >= rounded && (best == null || b[1] < best[1] || (b[1] == best[1] && b[0] < best[0]))) {
        best = b;
      }
    }
    if (best == null) {
      long freeBytes = freeBytes();
      OomReason reason = freeBytes >= rounded ? OomReason.FRAGMENTATION : OomReason.NO_MEMORY;
      return new AllocOutcome.OutOfMemory(reason, sizeBytes, freeBytes, largestFreeBytes());
    }
    free.remove(best);
    long start = best[0];
    long size = best[1];
    while (size > rounded) {
      size /= 2;
      free.add(new long[] {start + size, size});
      splits++;
    }
    long handle = nextHandle++;
    live.put(handle, new long[] {start, size, sizeBytes});
    return new AllocOutcome.Allocated(handle, size, Extents.single(start, size));
  }

  /** Returns a block, merged with its buddy while the buddy is free and the pair stays inside one top-level block. */
  void free(long handle) {
    long[] a = live.remove(handle);
    if (a == null) {
      throw new IllegalArgumentException("not live: " + handle);
    }
    long start = a[0];
    long size = a[1];
    long[] top = topOf(start);
    while (size < top[1]) {
      long relative = start - top[0];
      long buddyStart = top[0] + (relative ^ size);
      long[] buddy = null;
      for (long[] b : free) {
        if (b[0] == buddyStart && b[1] == size) {
          buddy = b;
        }
      }
      if (buddy == null) {
        break;
      }
      free.remove(buddy);
      start = Math.min(start, buddyStart);
      size *= 2;
      merges++;
    }
    free.add(new long[] {start, size});
  }

  private long[] topOf(long address) {
    for (long[] t : tops) {
      if (address >= t[0] && address < t[0] + t[1]) {
        return t;
      }
    }
    throw new IllegalStateException("address " + address + " is in no top-level block");
  }

  long freeBytes() {
    long sum = 0;
    for (long[] b : free) {
      sum += b[1];
    }
    return sum;
  }

  long largestFreeBytes() {
    long largest = 0;
    for (long[] b : free) {
      largest = Math.max(largest, b[1]);
    }
    return largest;
  }

  long requestedBytes() {
    long sum = 0;
    for (long[] a : live.values()) {
      sum += a[2];
    }
    return sum;
  }

  int freeBlockCount() {
    return free.size();
  }

  long splits() {
    return splits;
  }

  long merges() {
    return merges;
  }
}

package kvsim.alloc.vattention;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.Extents;
import kvsim.alloc.OomReason;
import kvsim.devicemodel.Region;

/**
 * The reference vAttention model, written as plainly as possible so that it can be trusted by
 * reading: the pool is a list used as a stack (the end is the top), an allocation keeps its pages
 * in a list, and the lowest free request slot is found by counting up from 0. It follows the rules
 * of {@link VAttentionAllocator}'s class comment with its default latencies; handles are its own (a
 * counter).
 */
final class NaiveVAttention {
  private record Live(int slot, List<Integer> pages, long requestedBytes) {}

  private final long pageBytes;
  private final int pageCount;
  private final long virtualBaseBytes;
  private final List<Integer> pool = new ArrayList<>();
  private final Map<Long, Live> live = new HashMap<>();
  private final TreeSet<Integer> slotsInUse = new TreeSet<>();
  private long nextHandle;
  private long requestedBytes;
  private long modelledNanos;
  private long pagesMapped;
  private long pagesUnmapped;

  NaiveVAttention(Region region, long pageBytes) {
    this.pageBytes = pageBytes;
    this.pageCount = (int) (region.sizeBytes() / pageBytes);
    for (int page = pageCount - 1; page >= 0; page--) {
      pool.add(page); // page 0 ends on top
    }
    long end = region.endBytes();
    long roundedEnd = (end + pageBytes - 1) / pageBytes * pageBytes;
    this.virtualBaseBytes = Math.max(1L << 40, roundedEnd);
  }

  /** Maps ceil(size / page) pages from the top of the pool behind the lowest free slot's range, or refuses. */
  AllocOutcome allocate(long sizeBytes) {
    long poolBytes = pageCount * pageBytes;
    if (sizeBytes > poolBytes) {
      modelledNanos += 20;
      return new AllocOutcome.OutOfMemory(OomReason.TOO_LARGE, sizeBytes, freeBytes(), freeBytes());
    }
    long pages = (sizeBytes + pageBytes - 1) / pageBytes;
    if (pages > pool.size()) {
      modelledNanos += 20;
      return new AllocOutcome.OutOfMemory(OomReason.NO_MEMORY, sizeBytes, freeBytes(), freeBytes());
    }
    int slot = 0;
    while (slotsInUse.contains(slot)) {
      slot++;
    }
    slotsInUse.add(slot);
    List<Integer> mine = new ArrayList<>();
    for (int i = 0; i < pages; i++) {
      mine.add(pool.remove(pool.size() - 1));
    }
    long handle = nextHandle++;
    live.put(handle, new Live(slot, mine, sizeBytes));
    requestedBytes += sizeBytes;
    pagesMapped += pages;
    modelledNanos += 20 + pages * (10 + 59_000); // map: 59 µs a page
    long start = virtualBaseBytes + slot * poolBytes;
    return new AllocOutcome.Allocated(handle, pages * pageBytes, Extents.single(start, pages * pageBytes));
  }

  /** Unmaps an allocation's pages last page first and frees its slot. */
  void free(long handle) {
    Live l = live.remove(handle);
    for (int i = l.pages().size() - 1; i >= 0; i--) {
      pool.add(l.pages().get(i));
    }
    slotsInUse.remove(l.slot());
    requestedBytes -= l.requestedBytes();
    pagesUnmapped += l.pages().size();
    modelledNanos += 20 + l.pages().size() * (10 + 40_000L); // unmap: 40 µs a page
  }

  /** Returns the pages of a live allocation in mapping order. */
  int[] pagesOf(long handle) {
    return live.get(handle).pages().stream().mapToInt(Integer::intValue).toArray();
  }

  /** Returns the free pages, top of the pool first. */
  int[] freePageOrder() {
    int[] out = new int[pool.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = pool.get(pool.size() - 1 - i);
    }
    return out;
  }

  long freeBytes() {
    return pool.size() * pageBytes;
  }

  long requestedBytes() {
    return requestedBytes;
  }

  long allocatedBytes() {
    long pages = 0;
    for (Live l : live.values()) {
      pages += l.pages().size();
    }
    return pages * pageBytes;
  }

  int liveCount() {
    return live.size();
  }

  long modelledNanos() {
    return modelledNanos;
  }

  long pagesMapped() {
    return pagesMapped;
  }

  long pagesUnmapped() {
    return pagesUnmapped;
  }
}

package kvsim.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.Extents;
import kvsim.core.LongLongMap;
import kvsim.core.Tag;
import kvsim.metrics.MemoryMap;

/**
 * Records the memory map of a replay (the view PyTorch's {@code memory_viz} page draws of a
 * snapshot's trace: address against time, one rectangle per allocation, refusals marked) from the
 * placements the {@link ReplayEngine} reports to its listener: every extent of every allocation of
 * the region under test, from the event that allocated it to the event that freed it. Allocators
 * without one contiguous address (paged, slab) give one rectangle per run of adjacent blocks, at
 * the blocks' addresses; {@code vattention} and {@code stitching} give their virtual ranges.
 *
 * <p>Its size is bounded whatever the run's length (Note [Memory map decimation] on {@link
 * MemoryMap}): memory grows with the live set plus at most twice {@code maxRectangles} kept
 * rectangles and {@link MemoryMap#MAX_BINS} bins.
 *
 * <p>Note [Live table]: a live allocation's start, tag and (when it has one extent, as on every
 * contiguous model) its address and size sit side by side in one slot of a primitive array, found
 * by id through a {@link LongLongMap}; freed slots are reused. A free then touches two cache lines.
 * A map of boxed ids to one record per allocation made it follow four pointers to objects made
 * long before (the map's node, the boxed id, the record, its extents): with tens of thousands of
 * allocations live, a 10 M-event first-fit replay ran 13 % faster without those cache misses.
 */
public final class MemoryMapRecorder implements AllocatorListener {
  /** Rectangles kept per allocator by default: enough for the picture, small enough to draw fast. */
  public static final int DEFAULT_MAX_RECTANGLES = 1000;

  private static final int BINS = MemoryMap.MAX_BINS;

  private final String allocator;
  private final int maxRectangles;
  // The live allocations (Note [Live table]): id -> slot of the arrays below.
  private static final int STRIDE = 4; // start event, tag index (-1: slot free), offset, size
  private LongLongMap slotById = new LongLongMap(1 << 10);
  private long[] live = new long[64 * STRIDE];
  private long[] liveId = new long[64];
  private Extents[] multiple = new Extents[64]; // the extents of an allocation of more than one
  private int[] freeSlots = new int[64]; // slots of freed allocations, reused most recent first
  private int freeCount;
  private int slotsUsed;
  private final Map<Tag, Integer> tagIndex = new HashMap<>();
  private final List<String> tags = new ArrayList<>();
  private Tag lastTag; // tags are interned: most requests carry the tag of the one before
  private int lastTagIndex;
  private long event;
  private long addressMinBytes = Long.MAX_VALUE;
  private long addressMaxBytes = Long.MIN_VALUE;
  private long rectanglesSeen;
  private double minArea;
  // Kept rectangles, column by column.
  private long[] addr = new long[64];
  private long[] size = new long[64];
  private long[] start = new long[64];
  private long[] end = new long[64];
  private int[] tag = new int[64];
  private int kept;
  // Elided bytes as steps integrated per bin (see addStep), and refusals per bin.
  /** Each bin is {@code 1 << binShift} events wide ({@link #binEvents}, Note [Bins by shifting]). */
  private int binShift;
  private long[] partial = new long[BINS + 1];
  private long[] slope = new long[BINS + 1];
  private long[] ooms = new long[BINS];

  /**
   * A recorder for one allocator's run.
   *
   * @param allocator the allocator's registry name
   * @param maxRectangles the most rectangles kept (at least 1)
   */
  public MemoryMapRecorder(String allocator, int maxRectangles) {
    if (maxRectangles < 1) {
      throw new IllegalArgumentException("maxRectangles must be at least 1, got " + maxRectangles);
    }
    this.allocator = allocator;
    this.maxRectangles = maxRectangles;
  }

  @Override
  public void time(long timeNanos) {
    event++;
  }

  @Override
  public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
    Tag t = request.tag();
    if (t != lastTag) {
      lastTagIndex = tagIndex.computeIfAbsent(t, k -> {
        tags.add(k.name());
        return tags.size() - 1;
      });
      lastTag = t;
    }
    int slot = freeCount > 0 ? freeSlots[freeCount - 1] : slotsUsed;
    if (!slotById.putIfAbsent(id, slot)) {
      throw new IllegalArgumentException("allocation " + id + " is already live");
    }
    if (freeCount > 0) {
      freeCount--;
    } else {
      newSlot();
    }
    int b = slot * STRIDE;
    live[b] = event;
    live[b + 1] = lastTagIndex;
    if (extents.count() == 1) {
      live[b + 2] = extents.offsetBytes(0);
      live[b + 3] = extents.sizeBytes(0);
    } else {
      multiple[slot] = extents;
    }
    liveId[slot] = id;
  }

  @Override
  public void freed(long id, long requestedBytes, long stream, Extents extents) {
    int slot = (int) slotById.remove(id, -1);
    if (slot >= 0) {
      closeSlot(slot, event);
      freeSlots[freeCount++] = slot;
    }
  }

  @Override
  public void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {
    int k = bin(event - 1); // may replace the arrays: index only after
    ooms[k]++;
  }

  /** The memory map reads neither the requested size nor the extents at a free: it keeps its own. */
  @Override
  public boolean readsFreeDetails() {
    return false;
  }

  private void newSlot() {
    if (slotsUsed == liveId.length) {
      int n = slotsUsed * 2;
      live = Arrays.copyOf(live, n * STRIDE);
      liveId = Arrays.copyOf(liveId, n);
      multiple = Arrays.copyOf(multiple, n);
      freeSlots = Arrays.copyOf(freeSlots, n);
    }
    slotsUsed++;
  }

  /** Records the allocation in {@code slot} as live until before {@code endEvent}, and frees the slot. */
  private void closeSlot(int slot, long endEvent) {
    int b = slot * STRIDE;
    long startEvent = live[b];
    int tagIndex = (int) live[b + 1];
    live[b + 1] = -1;
    Extents x = multiple[slot];
    if (x == null) {
      close(live[b + 2], live[b + 3], startEvent, endEvent, tagIndex);
    } else {
      multiple[slot] = null;
      for (int i = 0; i < x.count(); i++) {
        close(x.offsetBytes(i), x.sizeBytes(i), startEvent, endEvent, tagIndex);
      }
    }
  }

  /** Returns the map of the run so far; allocations still live end after the last event. */
  public MemoryMap memoryMap() {
    int[] open = new int[slotsUsed];
    int openCount = 0;
    for (int slot = 0; slot < slotsUsed; slot++) {
      if (live[slot * STRIDE + 1] >= 0) {
        open[openCount++] = slot;
      }
    }
    sortByStart(open, openCount);
    for (int i = 0; i < openCount; i++) {
      closeSlot(open[i], event + 1);
    }
    slotById = new LongLongMap(1 << 10);
    slotsUsed = 0;
    freeCount = 0;
    if (kept > maxRectangles) {
      purge();
    }
    List<MemoryMap.Rectangle> rects = new ArrayList<>(kept);
    for (int i = 0; i < kept; i++) {
      rects.add(new MemoryMap.Rectangle(addr[i], size[i], start[i], end[i], tag[i]));
    }
    int used = event == 0 ? 0 : bin(event - 1) + 1; // the bins cover every event, even those that added nothing
    long binEvents = binEvents();
    long[] elided = new long[used];
    long running = 0;
    for (int k = 0; k < used; k++) {
      running += slope[k];
      long width = Math.min(binEvents, event - k * binEvents);
      // partial[k] counts each step in bin k up to the bin's full end; the last bin may be shorter.
      double integral = running * (double) width + partial[k] - (double) (binEvents - width) * slope[k + 1];
      elided[k] = Math.round(integral / width);
    }
    boolean any = addressMinBytes <= addressMaxBytes;
    return new MemoryMap(allocator, event, any ? addressMinBytes : 0, any ? addressMaxBytes : 0, maxRectangles, rectanglesSeen,
        minArea, List.copyOf(tags), rects, binEvents, elided, Arrays.copyOf(ooms, used));
  }

  /**
   * Sorts the first {@code n} slots by their allocation's start event, then id.
   *
   * <p>Note [Open slots sorted as numbers]: the allocations still live at the end are closed in
   * that order, and there may be many (13,536 after the 2 M-event churn trace through first fit,
   * whose sort of boxed slots by a comparator took 2.3 ms of every replay in async-profiler
   * samples). Each start event, times the slot count, plus the slot, is one number; sorted as
   * numbers they give the order by start event, and no two allocations start at one event where
   * one recorder hears each event once. Where two do, or the product could overflow, the slots are
   * sorted by the comparator.
   */
  private void sortByStart(int[] slots, int n) {
    long width = Math.max(1, slotsUsed);
    if (n > 1 && event < Long.MAX_VALUE / width) {
      long[] keys = new long[n];
      for (int i = 0; i < n; i++) {
        keys[i] = live[slots[i] * STRIDE] * width + slots[i];
      }
      Arrays.sort(keys);
      boolean tie = false;
      for (int i = 0; i < n; i++) {
        slots[i] = (int) (keys[i] % width);
        tie |= i > 0 && keys[i] / width == keys[i - 1] / width;
      }
      if (!tie) {
        return;
      }
    }
    Integer[] boxed = new Integer[n];
    for (int i = 0; i < n; i++) {
      boxed[i] = slots[i];
    }
    Arrays.sort(boxed, (a, b) -> live[a * STRIDE] != live[b * STRIDE]
        ? Long.compare(live[a * STRIDE], live[b * STRIDE])
        : Long.compare(liveId[a], liveId[b]));
    for (int i = 0; i < n; i++) {
      slots[i] = boxed[i];
    }
  }

  /** Records an extent of {@code s} bytes at {@code a} that was live from {@code startEvent} to before {@code endEvent}. */
  private void close(long a, long s, long startEvent, long endEvent, int tagIndex) {
    addressMinBytes = Math.min(addressMinBytes, a);
    addressMaxBytes = Math.max(addressMaxBytes, a + s);
    rectanglesSeen++;
    if ((double) s * (endEvent - startEvent) > minArea) {
      keep(a, s, startEvent, endEvent, tagIndex);
    } else {
      elide(s, startEvent, endEvent);
    }
  }

  private void keep(long a, long s, long from, long to, int t) {
    if (kept == addr.length) {
      int n = addr.length * 2;
      addr = Arrays.copyOf(addr, n);
      size = Arrays.copyOf(size, n);
      start = Arrays.copyOf(start, n);
      end = Arrays.copyOf(end, n);
      tag = Arrays.copyOf(tag, n);
    }
    addr[kept] = a;
    size[kept] = s;
    start[kept] = from;
    end[kept] = to;
    tag[kept] = t;
    kept++;
    if (kept > 2 * maxRectangles) {
      purge();
    }
  }

  /**
   * Raises the threshold to the area of the ({@code maxRectangles} + 1)-th largest and elides every
   * rectangle not above it: the largest {@code maxRectangles} stay (fewer where areas tie).
   */
  private void purge() {
    double[] areas = new double[kept];
    for (int i = 0; i < kept; i++) {
      areas[i] = area(i);
    }
    double[] sorted = areas.clone();
    Arrays.sort(sorted);
    minArea = Math.max(minArea, sorted[kept - maxRectangles - 1]);
    int out = 0;
    for (int i = 0; i < kept; i++) {
      if (areas[i] > minArea) {
        addr[out] = addr[i];
        size[out] = size[i];
        start[out] = start[i];
        end[out] = end[i];
        tag[out] = tag[i];
        out++;
      } else {
        elide(size[i], start[i], end[i]);
      }
    }
    kept = out;
  }

  private double area(int i) {
    return (double) size[i] * (end[i] - start[i]);
  }

  /** Adds an elided extent live over events [from, to) to the band: a step up and, unless live at the end, a step down. */
  private void elide(long s, long from, long to) {
    addStep(from - 1, s);
    if (to <= event) {
      addStep(to - 1, -s);
    }
  }

  /**
   * Adds a step of {@code bytes} at slot {@code x} (0-based events): it contributes {@code bytes ×
   * (end of x's bin − x)} to its bin ({@code partial}) and {@code bytes × binEvents} to every later
   * bin ({@code slope}, a difference array), so each bin holds the exact integral of live elided
   * bytes over its events.
   */
  private void addStep(long x, long bytes) {
    int k = bin(x);
    partial[k] += bytes * ((k + 1) * binEvents() - x);
    slope[k + 1] += bytes;
  }

  /** The events a bin spans: a power of two. */
  private long binEvents() {
    return 1L << binShift;
  }

  /**
   * Returns the bin of slot {@code x} (never negative: events count from 1), doubling the bins'
   * width until it fits.
   *
   * <p>Note [Bins by shifting]: a bin's width is a power of two, so a slot's bin is a shift, not a
   * division (two 64-bit divisions, of tens of cycles each, for every refusal and two for every
   * elided allocation's free: 2.5 M times in the 2 M-event churn trace).
   */
  private int bin(long x) {
    while (x >> binShift >= BINS) {
      long[] p = new long[BINS + 1];
      long[] d = new long[BINS + 1];
      long[] o = new long[BINS];
      for (int i = 0; i < BINS / 2; i++) {
        p[i] = partial[2 * i] + partial[2 * i + 1] + binEvents() * slope[2 * i + 1];
        o[i] = ooms[2 * i] + ooms[2 * i + 1];
      }
      for (int i = 1; i <= BINS / 2; i++) {
        d[i] = slope[2 * i - 1] + slope[2 * i];
      }
      partial = p;
      slope = d;
      ooms = o;
      binShift++;
    }
    return (int) (x >> binShift);
  }
}

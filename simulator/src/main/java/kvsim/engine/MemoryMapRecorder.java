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
import kvsim.metrics.MemoryMap;

/**
 * Records the memory map of a replay (the view of PyTorch's {@code memory_viz}, spec §9 of the
 * snapshot format: address against time, one rectangle per allocation, refusals marked) from the
 * placements the {@link ReplayEngine} reports to its listener: every extent of every allocation of
 * the region under test, from the event that allocated it to the event that freed it. Allocators
 * without one contiguous address (paged, slab) give one rectangle per run of adjacent blocks, at the
 * blocks' addresses; {@code vattention} and {@code stitching} give their virtual ranges.
 *
 * <p>Its size is bounded whatever the run's length (Note [Memory map decimation] on {@link
 * MemoryMap}): memory grows with the live set plus at most twice {@code maxRectangles} kept
 * rectangles and {@link MemoryMap#MAX_BINS} bins.
 */
public final class MemoryMapRecorder implements AllocatorListener {
  /** Rectangles kept per allocator by default: enough for the picture, small enough to draw fast. */
  public static final int DEFAULT_MAX_RECTANGLES = 1000;

  private static final int BINS = MemoryMap.MAX_BINS;

  private final String allocator;
  private final int maxRectangles;
  private final Map<Long, Live> live = new HashMap<>();
  private final Map<String, Integer> tagIndex = new HashMap<>();
  private final List<String> tags = new ArrayList<>();
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
  private long binEvents = 1;
  private long[] partial = new long[BINS + 1];
  private long[] slope = new long[BINS + 1];
  private long[] ooms = new long[BINS];

  private record Live(long startEvent, int tagIndex, Extents extents) {}

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
    Integer t = tagIndex.get(request.tag().name());
    if (t == null) {
      t = tags.size();
      tags.add(request.tag().name());
      tagIndex.put(request.tag().name(), t);
    }
    live.put(id, new Live(event, t, extents));
  }

  @Override
  public void freed(long id, long requestedBytes, long stream, Extents extents) {
    Live l = live.remove(id);
    if (l != null) {
      close(l, event);
    }
  }

  @Override
  public void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {
    int k = bin(event - 1); // may replace the arrays: index only after
    ooms[k]++;
  }

  /** Returns the map of the run so far; allocations still live end after the last event. */
  public MemoryMap memoryMap() {
    List<Map.Entry<Long, Live>> open = new ArrayList<>(live.entrySet());
    open.sort((a, b) -> a.getValue().startEvent != b.getValue().startEvent
        ? Long.compare(a.getValue().startEvent, b.getValue().startEvent)
        : Long.compare(a.getKey(), b.getKey()));
    for (Map.Entry<Long, Live> e : open) {
      close(e.getValue(), event + 1);
    }
    live.clear();
    if (kept > maxRectangles) {
      purge();
    }
    List<MemoryMap.Rectangle> rects = new ArrayList<>(kept);
    for (int i = 0; i < kept; i++) {
      rects.add(new MemoryMap.Rectangle(addr[i], size[i], start[i], end[i], tag[i]));
    }
    int used = event == 0 ? 0 : bin(event - 1) + 1; // the bins cover every event, even those that added nothing
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

  /** Records the extents of an allocation that lived from {@code l.startEvent} to before {@code endEvent}. */
  private void close(Live l, long endEvent) {
    Extents x = l.extents;
    for (int i = 0; i < x.count(); i++) {
      long a = x.offsetBytes(i);
      long s = x.sizeBytes(i);
      addressMinBytes = Math.min(addressMinBytes, a);
      addressMaxBytes = Math.max(addressMaxBytes, a + s);
      rectanglesSeen++;
      if ((double) s * (endEvent - l.startEvent) > minArea) {
        keep(a, s, l.startEvent, endEvent, l.tagIndex);
      } else {
        elide(s, l.startEvent, endEvent);
      }
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
    partial[k] += bytes * ((k + 1) * binEvents - x);
    slope[k + 1] += bytes;
  }

  /** Returns the bin of slot {@code x}, doubling the bins' width until it fits. */
  private int bin(long x) {
    while (x / binEvents >= BINS) {
      long[] p = new long[BINS + 1];
      long[] d = new long[BINS + 1];
      long[] o = new long[BINS];
      for (int i = 0; i < BINS / 2; i++) {
        p[i] = partial[2 * i] + partial[2 * i + 1] + binEvents * slope[2 * i + 1];
        o[i] = ooms[2 * i] + ooms[2 * i + 1];
      }
      for (int i = 1; i <= BINS / 2; i++) {
        d[i] = slope[2 * i - 1] + slope[2 * i];
      }
      partial = p;
      slope = d;
      ooms = o;
      binEvents *= 2;
    }
    return (int) (x / binEvents);
  }
}

package kvsim.metrics;

import java.util.List;

/**
 * The memory map of one allocator run, the view of PyTorch's {@code memory_viz} (address against
 * time, one rectangle per allocation): what {@code memory-map.json} holds for one allocator
 * (results/SCHEMA.md). Time is counted in events, 1-based as in {@code timeseries.csv}.
 *
 * <p>Note [Memory map decimation]: a run keeps at most {@code maxRectangles} rectangles, whatever its
 * length. A rectangle is one extent of an allocation, {@code size × (end − start)} byte-events in
 * area; it is kept when its area is above a threshold that starts at 0 and is raised, whenever more
 * than twice {@code maxRectangles} are kept (and at the end), to the area of the ({@code
 * maxRectangles} + 1)-th largest, so the largest rectangles survive (in a contiguous allocator they are disjoint, so the map's total
 * area bounds how many can be large). The others are not dropped silently: they are counted ({@code
 * elidedCount}) and their bytes are added, exactly, to a per-bin mean of live elided bytes ({@code
 * elidedMeanBytes}), the grey band of the map. Refusals are counted per bin ({@code oomCounts}).
 * Bins are {@code binEvents} events wide; there are at most {@link #MAX_BINS}, and their width
 * doubles whenever the run outgrows them.
 *
 * @param allocator registry name
 * @param events events in the run
 * @param addressMinBytes lowest address of any extent recorded (0 when none)
 * @param addressMaxBytes highest end address of any extent recorded (0 when none)
 * @param maxRectangles the most rectangles kept
 * @param rectanglesSeen rectangles recorded in all, kept or elided
 * @param minAreaByteEvents the final threshold: kept rectangles have a larger area
 * @param tags tag names, indexed by {@link Rectangle#tagIndex}
 * @param rectangles the rectangles kept, in the order they ended
 * @param binEvents the width of a bin in events
 * @param elidedMeanBytes per bin, the mean over its events of the bytes of elided rectangles live, rounded to a byte
 * @param oomCounts per bin, the refusals in it
 * @param oomSnapshot the refusal a snapshot was written at ({@code --snapshot-at-oom}), or null
 */
public record MemoryMap(
    String allocator,
    long events,
    long addressMinBytes,
    long addressMaxBytes,
    int maxRectangles,
    long rectanglesSeen,
    double minAreaByteEvents,
    List<String> tags,
    List<Rectangle> rectangles,
    long binEvents,
    long[] elidedMeanBytes,
    long[] oomCounts,
    OomSnapshot oomSnapshot) {

  /** A map with no snapshot at a refusal. */
  public MemoryMap(String allocator, long events, long addressMinBytes, long addressMaxBytes, int maxRectangles, long rectanglesSeen,
      double minAreaByteEvents, List<String> tags, List<Rectangle> rectangles, long binEvents, long[] elidedMeanBytes, long[] oomCounts) {
    this(allocator, events, addressMinBytes, addressMaxBytes, maxRectangles, rectanglesSeen, minAreaByteEvents, tags, rectangles, binEvents,
        elidedMeanBytes, oomCounts, null);
  }

  /**
   * The refusal at which a PyTorch snapshot of the allocator was written ({@code --snapshot-at-oom}).
   *
   * @param event the refused event, 1-based
   * @param timeNanos its simulated time
   * @param sizeBytes the size the snapshot's {@code oom} entry records
   * @param reason why it was refused ({@code no_memory}, {@code fragmentation}, {@code too_large})
   * @param file the snapshot file, relative to the result folder where it can be
   */
  public record OomSnapshot(long event, long timeNanos, long sizeBytes, String reason, String file) {}

  /** Returns this map marked with the refusal a snapshot was written at. */
  public MemoryMap withOomSnapshot(OomSnapshot mark) {
    return new MemoryMap(allocator, events, addressMinBytes, addressMaxBytes, maxRectangles, rectanglesSeen, minAreaByteEvents, tags, rectangles,
        binEvents, elidedMeanBytes, oomCounts, mark);
  }

  /** The most bins of the elided band and the refusal counts. */
  public static final int MAX_BINS = 512;

  /**
   * One extent of one allocation over its lifetime.
   *
   * @param addressBytes start address
   * @param sizeBytes length
   * @param startEvent the event that allocated it (1-based)
   * @param endEvent the event that freed it, or {@code events + 1} when it was live at the end
   * @param tagIndex index into {@link MemoryMap#tags}
   */
  public record Rectangle(long addressBytes, long sizeBytes, long startEvent, long endEvent, int tagIndex) {}

  /** Returns the rectangles elided (recorded but not kept). */
  public long elidedCount() {
    return rectanglesSeen - rectangles.size();
  }

  /** Returns the refusals in all bins. */
  public long oomTotal() {
    long sum = 0;
    for (long c : oomCounts) {
      sum += c;
    }
    return sum;
  }
}

package kvsim.torch;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.Extents;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.core.AtomicFiles;
import kvsim.core.OutputFile;

/**
 * Records a kvsim run on any allocator model as a PyTorch memory snapshot (the format of PyTorch's
 * {@code torch/csrc/cuda/memory_snapshot.cpp} @0006736 and {@code torch/cuda/memory.py} @00b65a0)
 * that {@code memory_viz} opens and {@code kvsim torch-replay} / {@code kvsim import
 * torch-snapshot} read back.
 *
 * <ul>
 *   <li>The engine reports what happens through the {@link AllocatorListener} methods it calls
 *       ({@link #time}, {@link #allocated}, {@link #freed}, {@link #refused}); {@link #attach}
 *       also installs the recorder as the model's listener, so the model's own {@code
 *       segment_alloc}/{@code segment_free}/{@code segment_map}/{@code segment_unmap} reports land
 *       in the same trace, in order.
 *   <li>An allocation becomes an {@code alloc} entry per extent (address, requested size, stream);
 *       a free becomes {@code free_requested} then {@code free_completed} (kvsim has no deferred
 *       frees); a refusal becomes {@code oom} with {@code device_free} = the model's free bytes.
 *       Extent sizes split a multi-extent allocation's requested size in order.
 *   <li>Models that report no segments (arenas: slab, paged, first-fit) have their {@link
 *       Allocator#layout()} segments treated as allocated before the recording began, which is how
 *       {@code memory_viz} reads segments that no {@code segment_alloc} explains.
 *   <li>{@link #write} adds the final {@code segments} (from {@link Allocator#layout()}) and, for the
 *       caching model, {@code allocator_settings} with one key PyTorch does not write, {@code
 *       device_total_bytes} (the device size the model saw, which sizes expandable reservations);
 *       every dict carries an empty {@code frames} list. The first top-level entry, {@code kvsim}
 *       ({@code {"format": "kvsim-torch-snapshot", "version": 1}}), which PyTorch's readers ignore,
 *       marks the file as kvsim's, so a later run may replace it (Note [Output rule] on {@code
 *       core.OutputFile}).
 * </ul>
 */
public final class SnapshotRecorder implements AllocatorListener {
  /** The {@code format} of the top-level {@code kvsim} entry, which PyTorch's readers ignore. */
  public static final String FORMAT = "kvsim-torch-snapshot";

  /** What {@code kvsim replay --torch-snapshot} writes, recognised by the {@code kvsim} entry at its start. */
  public static final OutputFile.Kind OUTPUT_KIND = new OutputFile.Kind("a PyTorch memory snapshot", p -> {
    byte[] head = OutputFile.head(p, 96);
    return new String(head, java.nio.charset.StandardCharsets.ISO_8859_1).contains(FORMAT);
  });

  private static final Map<String, Object> KVSIM_MARK = kvsimMark();

  private static Map<String, Object> kvsimMark() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("format", FORMAT);
    m.put("version", 1L);
    return m;
  }

  private static final String[] ACTIONS = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom"
  };
  private static final byte ALLOC = 0;
  private static final byte FREE_REQUESTED = 1;
  private static final byte FREE_COMPLETED = 2;
  private static final byte SEGMENT_ALLOC = 3;
  private static final byte SEGMENT_FREE = 4;
  private static final byte SEGMENT_MAP = 5;
  private static final byte SEGMENT_UNMAP = 6;
  private static final byte OOM = 7;

  private Allocator allocator;
  // The trace, column by column (a long run has millions of entries).
  private byte[] action = new byte[1024];
  private long[] addr = new long[1024];
  private long[] size = new long[1024];
  private long[] stream = new long[1024];
  private long[] time = new long[1024];
  private int count;
  private long timeMicros;

  /** A recorder not yet bound to a model; {@link #attach} it before the model's first event. */
  public SnapshotRecorder() {}

  /** Starts recording a model before its first event and installs the recorder as its listener. */
  public static SnapshotRecorder recording(Allocator allocator) {
    SnapshotRecorder r = new SnapshotRecorder();
    r.attach(allocator);
    allocator.setListener(r);
    return r;
  }

  /** Tells the recorder which model it records (for the final segments and settings). */
  @Override
  public void attach(Allocator allocator) {
    this.allocator = allocator;
  }

  /** Returns whether a model has been bound (a recorder for an allocator that never ran is not). */
  public boolean bound() {
    return allocator != null;
  }

  /** Returns the number of trace entries so far. */
  public int entries() {
    return count;
  }

  private void entry(byte act, long address, long bytes, long str) {
    if (count == action.length) {
      int n = count * 2;
      action = java.util.Arrays.copyOf(action, n);
      addr = java.util.Arrays.copyOf(addr, n);
      size = java.util.Arrays.copyOf(size, n);
      stream = java.util.Arrays.copyOf(stream, n);
      time = java.util.Arrays.copyOf(time, n);
    }
    action[count] = act;
    addr[count] = address;
    size[count] = bytes;
    stream[count] = str;
    time[count] = timeMicros;
    count++;
  }

  @Override
  public void time(long timeNanos) {
    timeMicros = timeNanos / 1000;
  }

  @Override
  public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
    long left = request.sizeBytes();
    for (int i = 0; i < extents.count(); i++) {
      long bytes = i == extents.count() - 1 ? left : Math.min(left, extents.sizeBytes(i));
      entry(ALLOC, extents.offsetBytes(i), Math.max(bytes, 0), request.stream());
      left -= Math.max(bytes, 0);
    }
  }

  @Override
  public void freed(long id, long requestedBytes, long str, Extents extents) {
    long left = requestedBytes;
    long[] sizes = new long[extents.count()];
    for (int i = 0; i < extents.count(); i++) {
      sizes[i] = Math.max(0, i == extents.count() - 1 ? left : Math.min(left, extents.sizeBytes(i)));
      left -= sizes[i];
    }
    for (int i = 0; i < extents.count(); i++) {
      entry(FREE_REQUESTED, extents.offsetBytes(i), sizes[i], str);
    }
    for (int i = 0; i < extents.count(); i++) {
      entry(FREE_COMPLETED, extents.offsetBytes(i), sizes[i], str);
    }
  }

  @Override
  public void refused(long id, AllocRequest request, AllocOutcome.OutOfMemory outcome) {
    long size = request.sizeBytes();
    // A request of 1 EiB or more is refused before rounding (and may not be roundable at all).
    long bytes = allocator instanceof TorchCachingModel c && size < TorchCachingModel.MAX_REQUEST_BYTES ? c.roundSize(size) : size;
    entry(OOM, outcome.freeBytes(), bytes, request.stream());
  }

  @Override
  public void segmentAlloc(long addressBytes, long sizeBytes, long str) {
    entry(SEGMENT_ALLOC, addressBytes, sizeBytes, str);
  }

  @Override
  public void segmentFree(long addressBytes, long sizeBytes, long str) {
    entry(SEGMENT_FREE, addressBytes, sizeBytes, str);
  }

  @Override
  public void segmentMap(long addressBytes, long sizeBytes, long str) {
    entry(SEGMENT_MAP, addressBytes, sizeBytes, str);
  }

  @Override
  public void segmentUnmap(long addressBytes, long sizeBytes, long str) {
    entry(SEGMENT_UNMAP, addressBytes, sizeBytes, str);
  }

  /** Returns the snapshot dict as of now: {@code segments}, {@code device_traces}, {@code allocator_settings}. */
  public Map<String, Object> snapshot() {
    if (allocator == null) {
      throw new IllegalStateException("the snapshot recorder was never bound to a model");
    }
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("kvsim", KVSIM_MARK); // first, so the file's first bytes say kvsim wrote it
    List<Object> segments = new ArrayList<>();
    for (SegmentLayout s : allocator.layout()) {
      segments.add(segment(s));
    }
    root.put("segments", segments);
    final int n = count;
    List<Object> trace = new java.util.AbstractList<>() {
      @Override
      public Object get(int i) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("action", ACTIONS[action[i]]);
        if (action[i] == OOM) {
          e.put("device_free", addr[i]);
        } else {
          e.put("addr", addr[i]);
        }
        e.put("size", size[i]);
        e.put("stream", stream[i]);
        e.put("time_us", time[i]);
        e.put("frames", List.of());
        return e;
      }

      @Override
      public int size() {
        return n;
      }
    };
    root.put("device_traces", List.of(trace));
    if (allocator instanceof TorchCachingModel c) {
      Map<String, Object> settings = settings(c.conf());
      settings.put("device_total_bytes", c.deviceTotalBytes());
      root.put("allocator_settings", settings);
    }
    return root;
  }
  /**
   * Returns a snapshot dict of {@code layout} with a trace of one {@code oom} entry ({@link
   * OomSnapshotRecorder#ofState}): for a state that was not recorded event by event.
   */
  static Map<String, Object> stateSnapshot(List<SegmentLayout> layout, long sizeBytes, long str, long freeBytes, long timeNanos) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("kvsim", KVSIM_MARK);
    List<Object> segments = new ArrayList<>();
    for (SegmentLayout s : layout) {
      segments.add(segment(s));
    }
    root.put("segments", segments);
    Map<String, Object> e = new LinkedHashMap<>();
    e.put("action", ACTIONS[OOM]);
    e.put("device_free", freeBytes);
    e.put("size", sizeBytes);
    e.put("stream", str);
    e.put("time_us", timeNanos / 1000);
    e.put("frames", List.of());
    root.put("device_traces", List.of(List.of(e)));
    return root;
  }

  private static Map<String, Object> segment(SegmentLayout s) {
    long allocated = 0;
    long requested = 0;
    List<Object> blocks = new ArrayList<>();
    for (SegmentLayout.Block b : s.blocks()) {
      boolean live = b.state() == SegmentLayout.State.ACTIVE_ALLOCATED;
      if (live) {
        allocated += b.sizeBytes();
        requested += b.requestedBytes();
      }
      Map<String, Object> bm = new LinkedHashMap<>();
      bm.put("address", b.addressBytes());
      bm.put("size", b.sizeBytes());
      bm.put("requested_size", b.requestedBytes());
      bm.put("state", b.state().label());
      bm.put("frames", List.of());
      blocks.add(bm);
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("device", 0);
    m.put("address", s.addressBytes());
    m.put("total_size", s.sizeBytes());
    m.put("allocated_size", allocated);
    m.put("active_size", allocated);
    m.put("requested_size", requested);
    m.put("stream", s.stream());
    m.put("segment_type", "small".equals(s.pool()) ? "small" : "large");
    m.put("segment_pool_id", new Object[] {0, 0});
    m.put("is_expandable", s.expandable());
    m.put("frames", List.of());
    m.put("blocks", blocks);
    return m;
  }

  private static Map<String, Object> settings(TorchAllocConf conf) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("PYTORCH_CUDA_ALLOC_CONF", conf.canonical());
    m.put("max_split_size", conf.maxSplitSizeBytes() == TorchAllocConf.UNLIMITED ? -1L : conf.maxSplitSizeBytes());
    m.put("max_non_split_rounding_size", conf.maxNonSplitRoundingBytes());
    m.put("garbage_collection_threshold", conf.garbageCollectionThreshold());
    m.put("expandable_segments", conf.expandableSegments());
    Map<String, Object> div = new LinkedHashMap<>();
    int[] d = conf.roundupPower2Divisions();
    for (int i = 0; i < d.length; i++) {
      div.put(Long.toString(1L << i), d[i]);
    }
    m.put("roundup_power2_divisions", div);
    return m;
  }

  /** Writes the snapshot pickle to a stream. */
  public void write(OutputStream out) throws IOException {
    PickleWriter.write(snapshot(), out);
  }

  /** Writes the snapshot pickle to a file atomically (no partial file on failure). */
  public void write(Path file) throws IOException {
    AtomicFiles.write(file, this::write);
  }
}

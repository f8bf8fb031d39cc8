package kvsim.gpu.plan;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.Allocator;
import kvsim.alloc.AllocatorListener;
import kvsim.alloc.Extents;
import kvsim.core.InputException;
import kvsim.engine.ReplayEngine;
import kvsim.trace.EventSource;
import kvsim.trace.TraceEvent;

/**
 * Turns an L1 trace into a GPU replay {@link Plan}, in pure Java (README, "gpu replay"; issue 28).
 *
 * <p>Note [Raw plans]: one {@code ALLOC} per allocation event and one {@code FREE} per free event,
 * in trace order. The plan is made before the device runs it, so a closed-loop generator is told
 * that every allocation was served; an allocation the device then refuses is counted by the
 * executor, which skips its free (as the simulator counts {@code frees_of_refused_count}). A {@code
 * PROBE} follows every {@code probeEvery}-th event and the last one; then what is still live is
 * freed (event 0), so a plan leaves the device as it found it.
 *
 * <p>Note [Arena plans]: the model replays the trace exactly as {@code kvsim replay} does ({@link
 * ReplayEngine}), and a listener turns what it reports into device operations:
 *
 * <ul>
 *   <li>a model that manages a pre-reserved region (first-fit, best-fit, buddy, slab, multi-slab,
 *       paged) holds one real arena, one {@code ALLOC} at the start, freed at the end; its
 *       sub-allocations cost no device operation. The arena spans the region from its start to the
 *       highest byte the model ever handed out, rounded up to a page, and at most the region
 *       ({@code arenaBytes}): the model's offsets all lie in it, and a replay that used a few GiB of
 *       an 80 GiB preset's region does not ask a real 80 GiB device for all of its memory;
 *   <li>{@code pytorch-caching} obtains segments from the driver ({@code segment_alloc}: an {@code
 *       ALLOC} numbered 1, 2, … in order, {@code segment_free}: its {@code FREE}); with expandable
 *       segments it maps pages ({@code segment_map}: per granularity page a {@code CREATE_PHYSICAL}
 *       and a {@code MAP}; {@code segment_unmap}: per page an {@code UNMAP} and a {@code
 *       RELEASE_PHYSICAL}), one handle per page as PyTorch's expandable segments hold them, so any
 *       page-aligned range can be unmapped;
 *   <li>a virtual model ({@code vattention}, {@code stitching}) maps each allocation's virtual
 *       range when it is served ({@code CREATE_PHYSICAL} of the range, {@code MAP} at the range's
 *       offset) and unmaps it when freed.
 * </ul>
 *
 * Mappings lie in one reservation ({@code RESERVE} first, {@code RELEASE} last) that spans the
 * mapped model addresses, from the lowest page-aligned address mapped; a {@code MAP}'s offset is the
 * model's address less that base, so the plan keeps the model's layout. Copies (copy-on-write,
 * swapping, {@code grow}) are not planned: no registered model reports one to its listener.
 */
public final class Planner {
  /** The granularity of physical pages the plans use unless told otherwise: 2 MiB, CUDA's {@code cuMemCreate} minimum on current GPUs. */
  public static final long DEFAULT_GRANULARITY_BYTES = 2L << 20;

  private Planner() {}

  /** Plans a raw replay of {@code source} (Note [Raw plans]). */
  public static Plan raw(EventSource source, String workload, long probeEvery) throws IOException {
    requirePositive(probeEvery);
    List<PlanOp> ops = new ArrayList<>();
    Set<Long> live = new LinkedHashSet<>();
    long event = 0;
    for (TraceEvent e = source.next(); e != null; e = source.next()) {
      event++;
      switch (e.op()) {
        case ALLOC -> {
          if (!live.add(e.id())) {
            throw new InputException(workload + ": event " + event + where(e) + ": id " + e.id() + " is allocated while live");
          }
          ops.add(PlanOp.of(PlanOp.Kind.ALLOC, event, e.id(), -1, e.sizeBytes()));
          source.acknowledge(e, true);
        }
        case FREE -> {
          if (!live.remove(e.id())) {
            throw new InputException(workload + ": event " + event + where(e) + ": free of id " + e.id() + ", which is not live");
          }
          ops.add(PlanOp.of(PlanOp.Kind.FREE, event, e.id(), -1, 0));
        }
        case ANNOTATE -> {}
      }
      if (event % probeEvery == 0) {
        ops.add(PlanOp.of(PlanOp.Kind.PROBE, event, -1, -1, 0));
      }
    }
    if (event % probeEvery != 0) {
      ops.add(PlanOp.of(PlanOp.Kind.PROBE, event, -1, -1, 0));
    }
    for (long id : live) {
      ops.add(PlanOp.of(PlanOp.Kind.FREE, 0, id, -1, 0));
    }
    return new Plan("raw", null, workload, 0, event, ops);
  }

  /**
   * Plans an arena replay of {@code source} on {@code model} (Note [Arena plans]).
   *
   * @param arenaBytes the size of the model's region, the arena of a region-managing model
   * @param granularityBytes the physical page size; the model's mappings must be multiples of it
   */
  public static Plan arena(Allocator model, EventSource source, String workload, long arenaBytes, long granularityBytes, long probeEvery)
      throws IOException {
    requirePositive(probeEvery);
    requirePositive(granularityBytes);
    Recorder r = new Recorder(model, granularityBytes, probeEvery);
    model.setListener(r);
    ReplayEngine.Result result = ReplayEngine.run(model, source, new ReplayEngine.Options(false, 0, r, null));
    long events = result.metrics().events();
    r.endOfTrace(events);
    return new Plan("arena", model.name(), workload, granularityBytes, events, r.finish(arenaBytes));
  }

  private static String where(TraceEvent e) {
    return e.line() > 0 ? " (line " + e.line() + ")" : "";
  }

  private static void requirePositive(long n) {
    if (n <= 0) {
      throw new IllegalArgumentException("expected a positive count, got " + n);
    }
  }

  /** Collects the model's device-level actions as ops with model addresses, made relative at the end. */
  private static final class Recorder implements AllocatorListener {
    private final boolean virtual;
    private final String model;
    private final long pageBytes;
    private final long probeEvery;
    private final List<PlanOp> ops = new ArrayList<>();
    /** Model address of a segment → its ALLOC id. */
    private final Map<Long, Long> segments = new LinkedHashMap<>();
    /** Model address of a mapped page (or virtual range) → its physical handle id. */
    private final TreeMap<Long, Long> mapped = new TreeMap<>();
    /** Trace id of a live virtual allocation → its model address. */
    private final Map<Long, Long> rangeOf = new LinkedHashMap<>();
    private long event;
    private long nextSegment = 1;
    private long nextHandle = 1;
    private boolean regionModel = true;
    private long lowestMappedBytes = Long.MAX_VALUE;
    private long highestMappedBytes = Long.MIN_VALUE;
    private long highestHandedOutBytes;

    private final long regionBaseBytes;

    Recorder(Allocator model, long pageBytes, long probeEvery) {
      this.regionBaseBytes = model.layout().isEmpty() ? 0 : model.layout().get(0).addressBytes();
      this.virtual = model.virtualSpace().isPresent();
      this.model = model.name();
      this.pageBytes = pageBytes;
      this.probeEvery = probeEvery;
      if (virtual || model.name().equals("pytorch-caching")) {
        regionModel = false;
      }
    }

    @Override
    public void time(long timeNanos) {
      if (event > 0 && event % probeEvery == 0) {
        ops.add(PlanOp.of(PlanOp.Kind.PROBE, event, -1, -1, 0));
      }
      event++;
    }

    void endOfTrace(long events) {
      if (events != event) {
        throw new IllegalStateException("the engine applied " + events + " events but reported " + event);
      }
      ops.add(PlanOp.of(PlanOp.Kind.PROBE, event, -1, -1, 0));
    }

    @Override
    public boolean readsFreeDetails() {
      return virtual;
    }

    @Override
    public void allocated(long id, AllocRequest request, Extents extents, long allocatedBytes) {
      if (!virtual) {
        for (int i = 0; i < extents.count(); i++) {
          highestHandedOutBytes = Math.max(highestHandedOutBytes, extents.offsetBytes(i) + extents.sizeBytes(i));
        }
        return;
      }
      if (extents.count() != 1) {
        throw new IllegalStateException("a virtual model gave " + extents.count() + " extents to id " + id);
      }
      long address = extents.offsetBytes(0);
      long size = extents.sizeBytes(0);
      requireAligned(address, size);
      long handle = nextHandle++;
      ops.add(PlanOp.of(PlanOp.Kind.CREATE_PHYSICAL, event, handle, -1, size));
      ops.add(PlanOp.of(PlanOp.Kind.MAP, event, handle, address, size));
      mapped.put(address, handle);
      rangeOf.put(id, address);
      widen(address, size);
    }

    @Override
    public void freed(long id, long requestedBytes, long stream, Extents extents) {
      if (!virtual) {
        return;
      }
      Long address = rangeOf.remove(id);
      if (address == null) {
        throw new IllegalStateException("free of id " + id + ", which was never mapped");
      }
      long handle = mapped.remove(address);
      ops.add(PlanOp.of(PlanOp.Kind.UNMAP, event, -1, address, extents.sizeBytes(0)));
      ops.add(PlanOp.of(PlanOp.Kind.RELEASE_PHYSICAL, event, handle, -1, 0));
    }

    @Override
    public void segmentAlloc(long addressBytes, long sizeBytes, long stream) {
      long id = nextSegment++;
      if (segments.putIfAbsent(addressBytes, id) != null) {
        throw new IllegalStateException("segment at " + addressBytes + " allocated twice");
      }
      ops.add(PlanOp.of(PlanOp.Kind.ALLOC, event, id, -1, sizeBytes));
    }

    @Override
    public void segmentFree(long addressBytes, long sizeBytes, long stream) {
      Long id = segments.remove(addressBytes);
      if (id == null) {
        throw new IllegalStateException("free of segment " + addressBytes + ", which is not live");
      }
      ops.add(PlanOp.of(PlanOp.Kind.FREE, event, id, -1, 0));
    }

    @Override
    public void segmentMap(long addressBytes, long sizeBytes, long stream) {
      requireAligned(addressBytes, sizeBytes);
      for (long a = addressBytes; a < addressBytes + sizeBytes; a += pageBytes) {
        long handle = nextHandle++;
        ops.add(PlanOp.of(PlanOp.Kind.CREATE_PHYSICAL, event, handle, -1, pageBytes));
        ops.add(PlanOp.of(PlanOp.Kind.MAP, event, handle, a, pageBytes));
        if (mapped.putIfAbsent(a, handle) != null) {
          throw new IllegalStateException("page at " + a + " mapped twice");
        }
      }
      widen(addressBytes, sizeBytes);
    }

    @Override
    public void segmentUnmap(long addressBytes, long sizeBytes, long stream) {
      requireAligned(addressBytes, sizeBytes);
      for (long a = addressBytes; a < addressBytes + sizeBytes; a += pageBytes) {
        Long handle = mapped.remove(a);
        if (handle == null) {
          throw new IllegalStateException("unmap of page " + a + ", which is not mapped");
        }
        ops.add(PlanOp.of(PlanOp.Kind.UNMAP, event, -1, a, pageBytes));
        ops.add(PlanOp.of(PlanOp.Kind.RELEASE_PHYSICAL, event, handle, -1, 0));
      }
    }

    private void requireAligned(long address, long size) {
      if (Math.floorMod(address, pageBytes) != 0 || size <= 0 || size % pageBytes != 0) {
        throw new InputException(
            "arena mode: " + model + " maps " + size + " bytes at " + address + ", not in whole device pages of " + pageBytes
                + " bytes (is its page size below the device's granularity?)");
      }
    }

    private void widen(long address, long size) {
      lowestMappedBytes = Math.min(lowestMappedBytes, address);
      highestMappedBytes = Math.max(highestMappedBytes, address + size);
    }

    /** Returns the ops: setup, the recorded ops with mapping addresses made offsets, teardown. */
    List<PlanOp> finish(long arenaBytes) {
      List<PlanOp> out = new ArrayList<>();
      boolean reserves = lowestMappedBytes != Long.MAX_VALUE;
      long base = reserves ? lowestMappedBytes : 0;
      long span = reserves ? highestMappedBytes - base : 0;
      if (regionModel) {
        long used = Math.max(pageBytes, highestHandedOutBytes - regionBaseBytes);
        long rounded = (used + pageBytes - 1) / pageBytes * pageBytes;
        out.add(PlanOp.of(PlanOp.Kind.ALLOC, 0, 0, -1, Math.min(arenaBytes, rounded)));
      }
      if (reserves) {
        out.add(PlanOp.of(PlanOp.Kind.RESERVE, 0, -1, -1, span));
      }
      for (PlanOp op : ops) {
        boolean mapping = op.kind() == PlanOp.Kind.MAP || op.kind() == PlanOp.Kind.UNMAP;
        out.add(mapping ? new PlanOp(op.kind(), op.event(), op.id(), op.offsetBytes() - base, op.sizeBytes(), -1) : op);
      }
      // What the model still holds at the end is given back, in address order.
      for (Map.Entry<Long, Long> e : mapped.entrySet()) {
        long size = virtual ? sizeOfRange(e.getKey()) : pageBytes;
        out.add(PlanOp.of(PlanOp.Kind.UNMAP, 0, -1, e.getKey() - base, size));
        out.add(PlanOp.of(PlanOp.Kind.RELEASE_PHYSICAL, 0, e.getValue(), -1, 0));
      }
      for (long id : segments.values()) {
        out.add(PlanOp.of(PlanOp.Kind.FREE, 0, id, -1, 0));
      }
      if (reserves) {
        out.add(PlanOp.of(PlanOp.Kind.RELEASE, 0, -1, -1, span));
      }
      if (regionModel) {
        out.add(PlanOp.of(PlanOp.Kind.FREE, 0, 0, -1, 0));
      }
      return out;
    }

    /** The size of a live virtual range, from the op that mapped it. */
    private long sizeOfRange(long address) {
      for (int i = ops.size() - 1; i >= 0; i--) {
        PlanOp op = ops.get(i);
        if (op.kind() == PlanOp.Kind.MAP && op.offsetBytes() == address) {
          return op.sizeBytes();
        }
      }
      throw new IllegalStateException("no mapping at " + address);
    }
  }
}

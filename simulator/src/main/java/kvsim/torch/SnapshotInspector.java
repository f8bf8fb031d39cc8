package kvsim.torch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import kvsim.core.Bytes;
import kvsim.metrics.Fragmentation;

/**
 * The fragmentation picture of a snapshot's segments ({@code kvsim torch-inspect}), per device,
 * per pool and per segment, in the vocabulary of {@code torch.cuda.memory_stats()} and of kvsim's
 * metrics (README, "Metrics").
 *
 * <ul>
 *   <li>reserved: segment bytes ({@code total_size}); allocated: bytes of {@code active_allocated}
 *       blocks (as PyTorch's {@code allocated_size}); active: allocated plus pending frees;
 *       requested: what the live blocks' callers asked for.
 *   <li>free: bytes of {@code inactive} blocks; inactive split: free blocks of classic segments that
 *       do not cover their whole segment (PyTorch's {@code inactive_split}: memory {@code
 *       empty_cache} cannot return).
 *   <li>largest free block, and external fragmentation = 1 − largest free / free (null when nothing
 *       is free).
 * </ul>
 */
public final class SnapshotInspector {
  private SnapshotInspector() {}

  /** Totals over a set of segments. */
  public static final class Totals {
    long segments;
    long reserved;
    long allocated;
    long active;
    long requested;
    long free;
    long inactiveSplit;
    long inactiveSplitBlocks;
    long largestFree;
    long blocks;

    void add(TorchSnapshot.Segment s) {
      segments++;
      reserved += s.totalSize();
      boolean split = s.blocks().size() > 1;
      for (TorchSnapshot.Block b : s.blocks()) {
        blocks++;
        if (b.allocated()) {
          allocated += b.size();
        }
        if (b.live()) {
          active += b.size();
          requested += b.requestedSize();
        } else {
          free += b.size();
          largestFree = Math.max(largestFree, b.size());
          if (split && !s.expandable()) {
            inactiveSplit += b.size();
            inactiveSplitBlocks++;
          }
        }
      }
    }

    /** Returns 1 − largest free / free, or null when nothing is free. */
    public Double externalFragmentation() {
      return Fragmentation.orNull(Fragmentation.external(largestFree, free));
    }

    /** Returns the reserved bytes. */
    public long reserved() {
      return reserved;
    }

    /** Returns the allocated bytes. */
    public long allocated() {
      return allocated;
    }

    /** Returns the free (inactive) bytes. */
    public long free() {
      return free;
    }

    /** Returns the inactive split bytes. */
    public long inactiveSplit() {
      return inactiveSplit;
    }

    /** Returns the largest free block. */
    public long largestFree() {
      return largestFree;
    }

    Map<String, Object> json() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("segments", segments);
      m.put("blocks", blocks);
      m.put("reserved_bytes", reserved);
      m.put("allocated_bytes", allocated);
      m.put("active_bytes", active);
      m.put("requested_bytes", requested);
      m.put("free_bytes", free);
      m.put("inactive_split", inactiveSplitBlocks);
      m.put("inactive_split_bytes", inactiveSplit);
      m.put("largest_free_bytes", largestFree);
      m.put("external_fragmentation", externalFragmentation());
      return m;
    }
  }

  /** Returns the totals of one device's segments, or of all devices with {@code device} = -1. */
  public static Totals totals(TorchSnapshot snapshot, int device, String pool) {
    Totals t = new Totals();
    for (TorchSnapshot.Segment s : snapshot.segments()) {
      if ((device < 0 || s.device() == device) && (pool == null || pool.equals(s.segmentType()))) {
        t.add(s);
      }
    }
    return t;
  }

  private static List<Integer> devices(TorchSnapshot snapshot) {
    TreeSet<Integer> d = new TreeSet<>();
    for (TorchSnapshot.Segment s : snapshot.segments()) {
      d.add(s.device());
    }
    return new ArrayList<>(d);
  }

  /** Returns the whole picture as one JSON-ready map. */
  public static Map<String, Object> toJson(TorchSnapshot snapshot) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("file", snapshot.source());
    root.put("history", snapshot.hasHistory());
    root.put("totals", totals(snapshot, -1, null).json());
    List<Map<String, Object>> devs = new ArrayList<>();
    for (int d : devices(snapshot)) {
      Map<String, Object> dm = new LinkedHashMap<>();
      dm.put("device", d);
      dm.put("totals", totals(snapshot, d, null).json());
      Map<String, Object> pools = new LinkedHashMap<>();
      pools.put("small", totals(snapshot, d, "small").json());
      pools.put("large", totals(snapshot, d, "large").json());
      dm.put("pools", pools);
      List<Map<String, Object>> segs = new ArrayList<>();
      for (TorchSnapshot.Segment s : snapshot.segmentsOf(d)) {
        Totals t = new Totals();
        t.add(s);
        Map<String, Object> sm = new LinkedHashMap<>();
        sm.put("address", s.address());
        sm.put("pool", s.segmentType());
        sm.put("stream", s.stream());
        sm.put("expandable", s.expandable());
        sm.putAll(t.json());
        sm.remove("segments");
        segs.add(sm);
      }
      dm.put("segments", segs);
      devs.add(dm);
    }
    root.put("devices", devs);
    return root;
  }

  /** Returns the picture as text tables. */
  public static String toText(TorchSnapshot snapshot) {
    StringBuilder sb = new StringBuilder();
    Totals all = totals(snapshot, -1, null);
    sb.append("Snapshot ").append(snapshot.source()).append(snapshot.hasHistory() ? " (with allocation history)" : " (state only)").append('\n');
    sb.append(String.format(java.util.Locale.ROOT, "%d segments, reserved %s, allocated %s, free %s, inactive split %s, largest free block %s, external fragmentation %s%n",
        all.segments, Bytes.format(all.reserved), Bytes.format(all.allocated), Bytes.format(all.free), Bytes.format(all.inactiveSplit), Bytes.format(all.largestFree), frac(all.externalFragmentation())));
    String header = String.format(java.util.Locale.ROOT, "%-20s %6s %12s %12s %12s %14s %12s %8s%n",
        "", "blocks", "reserved", "allocated", "free", "inactive_split", "largest_free", "ext_frag");
    for (int d : devices(snapshot)) {
      sb.append('\n').append("device ").append(d).append(" by pool\n").append(header);
      for (String pool : new String[] {"small", "large", null}) {
        Totals t = totals(snapshot, d, pool);
        sb.append(row(pool == null ? "all" : pool + " (" + t.segments + " seg)", t));
      }
      sb.append('\n').append("device ").append(d).append(" by segment\n").append(header);
      for (TorchSnapshot.Segment s : snapshot.segmentsOf(d)) {
        Totals t = new Totals();
        t.add(s);
        sb.append(row("0x" + Long.toHexString(s.address()) + " " + s.segmentType().charAt(0) + (s.expandable() ? "e" : ""), t));
      }
    }
    return sb.toString();
  }

  private static String row(String label, Totals t) {
    return String.format(java.util.Locale.ROOT, "%-20s %6d %12s %12s %12s %14s %12s %8s%n",
        label, t.blocks, Bytes.format(t.reserved), Bytes.format(t.allocated), Bytes.format(t.free), Bytes.format(t.inactiveSplit), Bytes.format(t.largestFree), frac(t.externalFragmentation()));
  }

  private static String frac(Double f) {
    return f == null ? "-" : String.format(java.util.Locale.ROOT, "%.3f", f);
  }
}

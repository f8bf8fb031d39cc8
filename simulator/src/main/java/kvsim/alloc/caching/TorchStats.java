package kvsim.alloc.caching;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The statistics of {@code torch.cuda.memory_stats()}, under PyTorch's own names, as {@code
 * c10/cuda/CUDACachingAllocator.cpp} keeps them (pytorch/pytorch @eb42ad6; {@code
 * num_sync_all_streams} since PR #120050, {@code num_oom_rejections} only in 2026 main).
 *
 * <ul>
 *   <li>Array stats ({@code allocation}, {@code segment}, {@code active}, {@code inactive_split},
 *       {@code allocated_bytes}, {@code reserved_bytes}, {@code active_bytes}, {@code
 *       inactive_split_bytes}, {@code requested_bytes}) exist for {@code all}, {@code small_pool}
 *       and {@code large_pool}, each with {@code current}, {@code peak}, {@code allocated}
 *       (cumulative increments) and {@code freed} (cumulative decrements).
 *   <li>{@code oversize_allocations} and {@code oversize_segments} are single stats with the same
 *       four fields.
 *   <li>Counters: {@code num_alloc_retries}, {@code num_ooms}, {@code num_sync_all_streams},
 *       {@code num_device_alloc}, {@code num_device_free}, {@code num_oom_rejections}; and the value
 *       {@code max_split_size} (-1 when unset, as in snapshots).
 * </ul>
 */
public final class TorchStats {
  /** The array stats, in PyTorch's order. */
  public enum Kind {
    ALLOCATION("allocation"),
    SEGMENT("segment"),
    ACTIVE("active"),
    INACTIVE_SPLIT("inactive_split"),
    ALLOCATED_BYTES("allocated_bytes"),
    RESERVED_BYTES("reserved_bytes"),
    ACTIVE_BYTES("active_bytes"),
    INACTIVE_SPLIT_BYTES("inactive_split_bytes"),
    REQUESTED_BYTES("requested_bytes");

    private final String label;

    Kind(String label) {
      this.label = label;
    }

    /** Returns PyTorch's name of the stat. */
    public String label() {
      return label;
    }
  }

  /** Stat types: index 0 all, 1 small_pool, 2 large_pool. */
  static final String[] TYPES = {"all", "small_pool", "large_pool"};

  private static final int KINDS = Kind.values().length;
  // [kind][type][field] flattened; fields: current, peak, allocated, freed
  private final long[] array = new long[KINDS * 3 * 4];
  private final long[] oversizeAllocations = new long[4];
  private final long[] oversizeSegments = new long[4];

  long numAllocRetries;
  long numOoms;
  long numSyncAllStreams;
  long numDeviceAlloc;
  long numDeviceFree;
  long numOomRejections;
  long maxSplitSize = -1;

  /** Adds {@code amount} to a stat for "all" and the pool's type. */
  void increase(Kind kind, boolean small, long amount) {
    bump(kind.ordinal() * 12, amount);
    bump(kind.ordinal() * 12 + (small ? 4 : 8), amount);
  }

  /** Subtracts {@code amount} from a stat for "all" and the pool's type. */
  void decrease(Kind kind, boolean small, long amount) {
    drop(kind.ordinal() * 12, amount);
    drop(kind.ordinal() * 12 + (small ? 4 : 8), amount);
  }

  /** Adds a signed change (PyTorch's net_change bookkeeping of inactive_split). */
  void change(Kind kind, boolean small, long delta) {
    if (delta > 0) {
      increase(kind, small, delta);
    } else if (delta < 0) {
      decrease(kind, small, -delta);
    }
  }

  private void bump(int base, long amount) {
    long[] a = array;
    long c = a[base] + amount;
    a[base] = c;
    if (c > a[base + 1]) {
      a[base + 1] = c;
    }
    a[base + 2] = cumulative(a[base + 2], amount);
  }

  private void drop(int base, long amount) {
    array[base] -= amount;
    array[base + 3] = cumulative(array[base + 3], amount);
  }

  /**
   * Adds to a cumulative field ({@code allocated}, {@code freed}), saturating at {@code
   * Long.MAX_VALUE}: a current value is bounded by the device, but the bytes ever allocated grow with
   * the trace and pass 2^63 after about 10^8 allocations of a whole 80 GiB device. PyTorch's int64
   * would wrap to a negative total there; saturation keeps the stat monotone.
   */
  private static long cumulative(long total, long amount) {
    long sum = total + amount;
    // Both are non-negative, so the sum overflowed exactly when it came out negative.
    return sum < 0 ? Long.MAX_VALUE : sum;
  }

  void oversizeAllocation(boolean increase) {
    step(oversizeAllocations, increase);
  }

  void oversizeSegment(boolean increase) {
    step(oversizeSegments, increase);
  }

  private static void step(long[] s, boolean increase) {
    if (increase) {
      s[0]++;
      s[1] = Math.max(s[1], s[0]);
      s[2]++;
    } else {
      s[0]--;
      s[3]++;
    }
  }

  /** Returns the current value of an array stat; {@code type} is all, small_pool or large_pool. */
  public long current(Kind kind, String type) {
    return array[kind.ordinal() * 12 + typeIndex(type) * 4];
  }

  /** Returns the peak of an array stat. */
  public long peak(Kind kind, String type) {
    return array[kind.ordinal() * 12 + typeIndex(type) * 4 + 1];
  }

  long currentAll(Kind kind) {
    return array[kind.ordinal() * 12];
  }

  long currentPool(Kind kind, boolean small) {
    return array[kind.ordinal() * 12 + (small ? 4 : 8)];
  }

  private static int typeIndex(String type) {
    for (int i = 0; i < TYPES.length; i++) {
      if (TYPES[i].equals(type)) {
        return i;
      }
    }
    throw new IllegalArgumentException("unknown stat type " + type + " (all, small_pool, large_pool)");
  }

  /** Sets every peak to the current value ({@code reset_peak_memory_stats}). */
  public void resetPeaks() {
    for (int i = 0; i < array.length; i += 4) {
      array[i + 1] = array[i];
    }
    oversizeAllocations[1] = oversizeAllocations[0];
    oversizeSegments[1] = oversizeSegments[0];
  }

  /** Returns every stat as {@code memory_stats()} names it ({@code allocated_bytes.all.current}, …). */
  public Map<String, Long> asMap() {
    Map<String, Long> out = new LinkedHashMap<>();
    String[] fields = {"current", "peak", "allocated", "freed"};
    for (Kind k : Kind.values()) {
      for (int t = 0; t < 3; t++) {
        for (int f = 0; f < 4; f++) {
          out.put(k.label() + "." + TYPES[t] + "." + fields[f], array[k.ordinal() * 12 + t * 4 + f]);
        }
      }
    }
    for (int f = 0; f < 4; f++) {
      out.put("oversize_allocations." + fields[f], oversizeAllocations[f]);
    }
    for (int f = 0; f < 4; f++) {
      out.put("oversize_segments." + fields[f], oversizeSegments[f]);
    }
    out.put("num_alloc_retries", numAllocRetries);
    out.put("num_ooms", numOoms);
    out.put("num_sync_all_streams", numSyncAllStreams);
    out.put("num_device_alloc", numDeviceAlloc);
    out.put("num_device_free", numDeviceFree);
    out.put("num_oom_rejections", numOomRejections);
    out.put("max_split_size", maxSplitSize);
    return out;
  }

  /** Returns whether any current value is negative (a bookkeeping bug). */
  String firstNegative() {
    for (Kind k : Kind.values()) {
      for (int t = 0; t < 3; t++) {
        if (array[k.ordinal() * 12 + t * 4] < 0) {
          return k.label() + "." + TYPES[t] + ".current = " + array[k.ordinal() * 12 + t * 4];
        }
      }
    }
    if (oversizeAllocations[0] < 0 || oversizeSegments[0] < 0) {
      return "oversize stats";
    }
    return null;
  }

  long oversizeAllocationsCurrent() {
    return oversizeAllocations[0];
  }

  long oversizeSegmentsCurrent() {
    return oversizeSegments[0];
  }
}

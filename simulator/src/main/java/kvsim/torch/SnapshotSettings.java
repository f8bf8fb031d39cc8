package kvsim.torch;

import java.util.Map;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.core.InputException;

/**
 * Turns a snapshot's {@code allocator_settings} dict (written by PyTorch's {@code
 * torch/csrc/cuda/memory_snapshot.cpp}, pytorch/pytorch @0006736) into the model's options:
 * {@code max_split_size} (-1 = unlimited), {@code max_non_split_rounding_size} when present, {@code
 * garbage_collection_threshold}, {@code expandable_segments} and {@code roundup_power2_divisions}
 * (a dict keyed by the MiB lower bound of each interval, {@code "1"} to {@code "32768"}). Files
 * without the dict (mid-2024 and older) get PyTorch's defaults.
 */
public final class SnapshotSettings {
  private SnapshotSettings() {}

  /** Returns the options a recording ran with. */
  public static TorchAllocConf conf(TorchSnapshot snapshot) {
    Map<String, Object> s = snapshot.allocatorSettings();
    TorchAllocConf.Builder b = TorchAllocConf.builder();
    if (s.isEmpty()) {
      return b.text("(defaults: the file records no allocator_settings)").build();
    }
    long maxSplit = number(snapshot, s, "max_split_size", -1);
    b.maxSplitSizeBytes(maxSplit < 0 ? TorchAllocConf.UNLIMITED : maxSplit);
    long nonSplit = number(snapshot, s, "max_non_split_rounding_size", -1);
    if (nonSplit > 0) {
      b.maxNonSplitRoundingBytes(nonSplit);
    }
    Object gc = s.get("garbage_collection_threshold");
    if (gc instanceof Number n) {
      b.garbageCollectionThreshold(n.doubleValue());
    }
    b.expandableSegments(Boolean.TRUE.equals(s.get("expandable_segments")));
    Object div = s.get("roundup_power2_divisions");
    if (div instanceof Map<?, ?> m) {
      int[] d = new int[TorchAllocConf.ROUNDUP_INTERVALS];
      for (Map.Entry<?, ?> e : m.entrySet()) {
        long key;
        try {
          key = Long.parseLong(String.valueOf(e.getKey()));
        } catch (NumberFormatException ex) {
          throw new InputException(snapshot.source() + ": allocator_settings.roundup_power2_divisions: key '" + e.getKey() + "' is not a number");
        }
        if (key <= 0 || Long.bitCount(key) != 1 || !(e.getValue() instanceof Number v)) {
          throw new InputException(snapshot.source() + ": allocator_settings.roundup_power2_divisions: bad entry " + e.getKey() + ": " + e.getValue());
        }
        int index = Math.min(63 - Long.numberOfLeadingZeros(key), TorchAllocConf.ROUNDUP_INTERVALS - 1);
        d[index] = v.intValue();
      }
      b.roundupPower2Divisions(d);
    } else if (div instanceof Number n) {
      int[] d = new int[TorchAllocConf.ROUNDUP_INTERVALS];
      java.util.Arrays.fill(d, n.intValue());
      b.roundupPower2Divisions(d);
    }
    Object text = s.get("PYTORCH_CUDA_ALLOC_CONF");
    b.text(text instanceof String t ? t : "");
    return b.build();
  }

  /**
   * Returns the device size a kvsim export recorded ({@code device_total_bytes}, not written by
   * PyTorch), or {@code fallback}.
   */
  public static long deviceTotalBytes(TorchSnapshot snapshot, long fallback) {
    long v = number(snapshot, snapshot.allocatorSettings(), "device_total_bytes", -1);
    // The caching model computes reservations of 1.125 × the device in a long.
    if (v > TorchCachingModel.MAX_REQUEST_BYTES) {
      throw new InputException(snapshot.source() + ": allocator_settings.device_total_bytes: " + v + " B is more than the 1 EiB the model supports");
    }
    return v > 0 ? v : fallback;
  }

  private static long number(TorchSnapshot snapshot, Map<String, Object> s, String key, long missing) {
    Object v = s.get(key);
    if (v == null) {
      return missing;
    }
    if (v instanceof Number n) {
      return n.longValue();
    }
    throw new InputException(snapshot.source() + ": allocator_settings." + key + ": expected a number, got " + v);
  }
}

package kvsim.gpu.calibrate;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.ProfileFit;

/**
 * Fits kvsim's costs on a GPU calibration's raw samples ({@link Samples}): pure arithmetic, no
 * GPU, so that it is tested on recorded sample files. Which sample gives which calibration field,
 * and why, is Note [How a GPU calibration is fitted]; a field whose samples are missing, or whose
 * fitted share of the preset's peak falls outside (0, 1], is left out with a note saying so (never
 * clamped).
 *
 * <p>Note [How a GPU calibration is fitted]:
 *
 * <ul>
 *   <li>{@code latency.pytorch-caching.device_alloc_ns} / {@code device_free_ns}: the median, over
 *       the measured sizes from 2 MiB to 1 GiB, of each size's median {@code cuMemAlloc} /
 *       {@code cuMemFree} time. PyTorch's caching allocator asks the driver for segments of 2 MiB
 *       (small pool) and of 20 MiB or the request rounded to 2 MiB (large pool), so smaller sizes
 *       are never its device calls, and sizes past 1 GiB are rare enough that their slower calls
 *       should not set the typical one.</li>
 *   <li>{@code latency.vattention} and {@code latency.stitching}, {@code device_alloc_ns} /
 *       {@code device_free_ns}: the per-page cost of creating and mapping (unmapping and releasing)
 *       one granularity page, the median over the measured page counts of each count's median time
 *       divided by its pages. Both models charge that field per page or chunk mapped (vAttention's
 *       pages and GMLake's 2 MiB chunks are the device's 2 MiB granularity on current GPUs).</li>
 *   <li>{@code copies.hbm_efficiency}: the device-to-device copy of the largest measured size (at
 *       least 64 MiB, so that launch costs vanish): a copy reads and writes every byte, so its
 *       traffic is twice its size ({@link kvsim.devicemodel.CopyBandwidths} halves the HBM peak for
 *       the same reason), divided by the preset's HBM peak.</li>
 *   <li>{@code copies.host_link_efficiency}: the mean of the host-to-device and device-to-host
 *       bandwidths at the largest measured size (at least 64 MiB), against the preset's host link;
 *       kvsim has one host link figure for both directions (swap out and swap in).</li>
 *   <li>{@code forward.compute_efficiency}: the median, over the GEMM shapes, of the achieved
 *       floating-point rate (2 · tokens · inner · outer per product) at every measured token count
 *       of at least {@link ProfileFit#PREFILL_TOKENS}, where products are compute-bound, against the
 *       preset's dense peak; the same rows {@code kvsim calibrate} fits a profile's compute on.</li>
 *   <li>{@code forward.memory_efficiency}: the median, over the GEMM shapes whose fp16 weight is at
 *       least 32 MiB, of the weight bytes read per second at one token (a decode step's product,
 *       bound by reading the weight: {@link ProfileFit}'s memory rows), against the HBM peak.
 *       Without GEMM samples it is not fitted: a copy's bandwidth is {@code copies}' business.</li>
 * </ul>
 */
public final class CalibrationFit {
  /** The smallest copy whose bandwidth a fit uses. */
  static final long MIN_BANDWIDTH_COPY_BYTES = 64 * Bytes.MiB;
  /** The smallest weight a memory-bound GEMM must read to count. */
  static final long MIN_GEMV_WEIGHT_BYTES = 32 * Bytes.MiB;

  private CalibrationFit() {}

  /**
   * What a fit gives: the calibration file's fields, and what was left out and why.
   *
   * @param latency per allocator, its fitted latency fields in nanoseconds
   * @param copies fitted {@code copies} shares
   * @param forward fitted {@code forward} shares
   * @param device the device preset the shares are against, or null where none was known
   * @param notes one line per field not fitted, or fitted from other samples than usual
   */
  public record Result(Map<String, Map<String, Long>> latency, Map<String, Double> copies, Map<String, Double> forward, DeviceSpec device,
      List<String> notes) {}

  /**
   * Returns the kvsim device preset a device's name stands for ("NVIDIA H100 80GB HBM3" → {@code
   * h100-80}), or null when no preset matches.
   */
  public static DeviceSpec presetFor(String deviceName, long totalBytes) {
    String n = deviceName == null ? "" : deviceName.toUpperCase(Locale.ROOT);
    String preset = null;
    if (n.contains("H200")) {
      preset = "h200-141";
    } else if (n.contains("H100")) {
      preset = "h100-80";
    } else if (n.contains("A100")) {
      preset = totalBytes > 48 * Bytes.GiB ? "a100-80" : "a100-40";
    } else if (n.matches(".*\\bA40\\b.*")) {
      preset = "a40";
    }
    return preset == null ? null : DeviceSpec.presets().get(preset);
  }

  /** Fits the samples against {@code device} (null: latencies only, with a note). */
  public static Result fit(Samples samples, DeviceSpec device) {
    List<String> notes = new ArrayList<>();
    Map<String, Map<String, Long>> latency = new LinkedHashMap<>();
    Map<String, Long> caching = new LinkedHashMap<>();
    putMedianOfMedians(samples.of("alloc"), "alloc", "device_alloc_ns", caching, notes);
    putMedianOfMedians(samples.of("free"), "free", "device_free_ns", caching, notes);
    if (!caching.isEmpty()) {
      latency.put("pytorch-caching", caching);
    }
    Map<String, Long> paged = new LinkedHashMap<>();
    putPerPage(samples.of("map"), "map", "device_alloc_ns", paged, notes);
    putPerPage(samples.of("unmap"), "unmap", "device_free_ns", paged, notes);
    if (!paged.isEmpty()) {
      latency.put("vattention", paged);
      latency.put("stitching", paged);
    }
    Map<String, Double> copies = new LinkedHashMap<>();
    Map<String, Double> forward = new LinkedHashMap<>();
    if (device == null) {
      notes.add("no device preset for '" + samples.device() + "' (give --device): copies and forward efficiencies not fitted");
      return new Result(latency, copies, forward, null, notes);
    }
    Samples.Series d2d = largest(samples.of("copy_d2d"));
    if (d2d == null) {
      notes.add("copies.hbm_efficiency not fitted: no device-to-device copy of at least " + Bytes.format(MIN_BANDWIDTH_COPY_BYTES));
    } else {
      double bytesPerSecond = 2.0 * d2d.get("size_bytes") / d2d.medianNanos() * 1e9;
      share(copies, "copies", "hbm_efficiency", bytesPerSecond / device.hbmBytesPerSecond(), device, notes);
    }
    Samples.Series h2d = largest(samples.of("copy_h2d"));
    Samples.Series d2h = largest(samples.of("copy_d2h"));
    if (h2d == null || d2h == null) {
      notes.add("copies.host_link_efficiency not fitted: no host copies of at least " + Bytes.format(MIN_BANDWIDTH_COPY_BYTES) + " both ways");
    } else {
      double in = h2d.get("size_bytes") / h2d.medianNanos() * 1e9;
      double out = d2h.get("size_bytes") / d2h.medianNanos() * 1e9;
      share(copies, "copies", "host_link_efficiency", (in + out) / 2 / device.hostLinkBytesPerSecond(), device, notes);
    }
    List<Samples.Series> gemm = samples.of("gemm");
    if (gemm.isEmpty()) {
      String why = samples.skipped().get("gemm");
      notes.add("forward efficiencies not fitted: no GEMM samples" + (why == null ? "" : " (" + why + ")"));
    } else {
      Map<List<Long>, List<Double>> computeByShape = new LinkedHashMap<>();
      List<Double> memory = new ArrayList<>();
      for (Samples.Series s : gemm) {
        long tokens = s.get("tokens");
        long inner = s.get("inner");
        long outer = s.get("outer");
        double seconds = s.medianNanos() / 1e9;
        if (tokens >= ProfileFit.PREFILL_TOKENS) {
          computeByShape.computeIfAbsent(List.of(inner, outer), k -> new ArrayList<>()).add(2.0 * tokens * inner * outer / seconds);
        }
        if (tokens == 1 && 2 * inner * outer >= MIN_GEMV_WEIGHT_BYTES) {
          memory.add(2.0 * inner * outer / seconds);
        }
      }
      if (computeByShape.isEmpty()) {
        notes.add("forward.compute_efficiency not fitted: no GEMM of at least " + ProfileFit.PREFILL_TOKENS + " tokens");
      } else {
        double[] perShape = computeByShape.values().stream().mapToDouble(v -> Stats.median(v.stream().mapToDouble(Double::doubleValue).toArray())).toArray();
        share(forward, "forward", "compute_efficiency", Stats.median(perShape) / device.peakFlops(), device, notes);
      }
      if (memory.isEmpty()) {
        notes.add("forward.memory_efficiency not fitted: no one-token GEMM with a weight of at least " + Bytes.format(MIN_GEMV_WEIGHT_BYTES));
      } else {
        share(forward, "forward", "memory_efficiency", Stats.median(memory.stream().mapToDouble(Double::doubleValue).toArray()) / device.hbmBytesPerSecond(),
            device, notes);
      }
    }
    if (!forward.containsKey("memory_efficiency") && gemm.isEmpty() && d2d != null) {
      notes.add("forward.memory_efficiency fitted on the device-to-device copy, not on one-token GEMMs (there are none)");
      share(forward, "forward", "memory_efficiency", 2.0 * d2d.get("size_bytes") / d2d.medianNanos() * 1e9 / device.hbmBytesPerSecond(), device, notes);
    }
    return new Result(latency, copies, forward, device, notes);
  }

  private static void putMedianOfMedians(List<Samples.Series> series, String kind, String field, Map<String, Long> into, List<String> notes) {
    double[] medians = series.stream()
        .filter(s -> s.get("size_bytes") >= 2 * Bytes.MiB && s.get("size_bytes") <= Bytes.GiB)
        .mapToDouble(Samples.Series::medianNanos).toArray();
    if (medians.length == 0) {
      notes.add("latency.pytorch-caching." + field + " not fitted: no " + kind + " samples from 2 MiB to 1 GiB");
      return;
    }
    into.put(field, Math.round(Stats.median(medians)));
  }

  private static void putPerPage(List<Samples.Series> series, String kind, String field, Map<String, Long> into, List<String> notes) {
    double[] perPage = series.stream().mapToDouble(s -> s.medianNanos() / s.get("pages")).toArray();
    if (perPage.length == 0) {
      notes.add("latency.vattention and latency.stitching " + field + " not fitted: no " + kind + " samples");
      return;
    }
    into.put(field, Math.round(Stats.median(perPage)));
  }

  /** The series of the largest size, when it is at least {@link #MIN_BANDWIDTH_COPY_BYTES}. */
  private static Samples.Series largest(List<Samples.Series> series) {
    Samples.Series best = null;
    for (Samples.Series s : series) {
      if (best == null || s.get("size_bytes") > best.get("size_bytes")) {
        best = s;
      }
    }
    return best == null || best.get("size_bytes") < MIN_BANDWIDTH_COPY_BYTES ? null : best;
  }

  private static void share(Map<String, Double> into, String section, String field, double share, DeviceSpec device, List<String> notes) {
    double rounded = Math.round(share * 1e4) / 1e4;
    if (rounded > 0 && rounded <= 1) {
      into.put(field, rounded);
    } else {
      notes.add(String.format(Locale.ROOT, "%s.%s not fitted: the measurement is %.3f of %s's peak, outside (0, 1]: the preset's peak is wrong for"
          + " this device (or give another --device)", section, field, share, device.name()));
    }
  }
}

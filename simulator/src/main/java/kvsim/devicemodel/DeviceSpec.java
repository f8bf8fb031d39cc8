package kvsim.devicemodel;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import kvsim.core.Bytes;

/**
 * A simulated GPU: HBM capacity, HBM bandwidth, host-link bandwidth and dense bf16 compute peak.
 * Presets follow the vendors' data sheets (SXM parts); capacity is the nominal size in binary units,
 * as kvsim's design fixes the default device at 80 GiB = 85,899,345,920 bytes. The host link is the
 * effective PCIe bandwidth a copy engine reaches: about 24 GB/s on Gen4 x16 (the A100s and the A40),
 * and on Gen5 x16 what {@code kvsim gpu calibrate} measured for 1 GiB copies between pinned host
 * memory and the device, the mean of the two directions, rounded up to a tenth of a GB/s so that
 * the measurement is a share of at most 1 of it: 53.43 GB/s on an NVIDIA H100 80GB HBM3 ({@code
 * results/calibration/h100-80-measured.json}), so 53.5, and 55.36 GB/s on an NVIDIA H200 ({@code
 * results/calibration/h200-141-measured.json}), so 55.4, both 2026-11-27. (Before, both presets
 * said 26 GB/s, half of what those devices moved.)
 * The A40 (a PCIe card with 48 GB of GDDR6) is NVIDIA's A40 data sheet: 696 GB/s, 149.7 TFLOPS of
 * dense BF16 tensor compute (299.4 with sparsity), PCIe Gen4 x16; kvsim has it because published
 * per-operation profiles measured it ({@link CostModels}).
 *
 * @param name preset name, or {@code custom} for a bare size
 * @param capacityBytes HBM bytes the allocators may manage
 * @param hbmBytesPerSecond HBM bandwidth
 * @param hostLinkBytesPerSecond effective host-device copy bandwidth
 * @param peakFlops dense bf16 peak, floating-point operations per second
 */
public record DeviceSpec(
    String name,
    long capacityBytes,
    double hbmBytesPerSecond,
    double hostLinkBytesPerSecond,
    double peakFlops) {

  public DeviceSpec {
    if (capacityBytes <= 0) {
      throw new IllegalArgumentException("device capacity must be positive, got " + capacityBytes);
    }
  }

  /** Name of the default device preset. */
  public static final String DEFAULT_NAME = "h100-80";

  private static final Map<String, DeviceSpec> PRESETS = new LinkedHashMap<>();

  static {
    add(new DeviceSpec("a100-40", 40 * Bytes.GiB, 1.555e12, 24e9, 312e12));
    add(new DeviceSpec("a100-80", 80 * Bytes.GiB, 2.039e12, 24e9, 312e12));
    add(new DeviceSpec("h100-80", 80 * Bytes.GiB, 3.35e12, 53.5e9, 989e12));
    add(new DeviceSpec("h200-141", 141 * Bytes.GiB, 4.8e12, 55.4e9, 989e12));
    add(new DeviceSpec("a40", 48 * Bytes.GiB, 696e9, 24e9, 149.7e12));
  }

  private static void add(DeviceSpec spec) {
    PRESETS.put(spec.name(), spec);
  }

  /** The default device: an H100 with 80 GiB. */
  public static DeviceSpec defaultDevice() {
    return PRESETS.get(DEFAULT_NAME);
  }

  /** Returns the text that {@link #parse} turns back into this device: the preset name, or the capacity in bytes. */
  public String text() {
    return this.equals(PRESETS.get(name)) ? name : Long.toString(capacityBytes);
  }

  /** Returns the presets in a stable order. */
  public static Map<String, DeviceSpec> presets() {
    return java.util.Collections.unmodifiableMap(PRESETS);
  }

  /**
   * Parses {@code --device}: a preset name ({@code h100-80}, {@code A100-40}) or a size ({@code
   * 80GiB}, {@code 40GB}); a bare size keeps the H100's bandwidths and compute.
   */
  public static DeviceSpec parse(String text) {
    String key = text.trim().toLowerCase(Locale.ROOT);
    DeviceSpec preset = PRESETS.get(key);
    if (preset != null) {
      return preset;
    }
    long bytes;
    try {
      bytes = Bytes.parse(text.trim().startsWith("-") ? text.trim().substring(1) : text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "unknown device '" + text + "': use a size such as 80GiB or one of " + PRESETS.keySet());
    }
    if (text.trim().startsWith("-")) {
      bytes = -bytes;
    }
    if (bytes <= 0) {
      throw new IllegalArgumentException("device size must be positive: '" + text + "'");
    }
    DeviceSpec base = defaultDevice();
    return new DeviceSpec("custom", bytes, base.hbmBytesPerSecond(), base.hostLinkBytesPerSecond(), base.peakFlops());
  }
}

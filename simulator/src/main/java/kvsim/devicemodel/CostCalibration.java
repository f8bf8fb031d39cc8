package kvsim.devicemodel;

import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.ModelPreset;

/**
 * The device-cost part of a calibration file (README, "Calibration files"): the efficiencies that
 * replace the defaults of the forward-time model ({@link Roofline}) and of the copy-cost model
 * ({@link CopyBandwidths}). Each is a share in (0, 1]; null keeps the default, so a file that gives
 * none of them times every run as no file does.
 *
 * @param computeEfficiency {@code forward.compute_efficiency}: share of peak FLOP/s a forward pass achieves
 * @param memoryEfficiency {@code forward.memory_efficiency}: share of peak HBM bandwidth a forward pass achieves
 * @param hbmCopyEfficiency {@code copies.hbm_efficiency}: share of peak HBM bandwidth an HBM copy achieves
 * @param hostLinkEfficiency {@code copies.host_link_efficiency}: share of the effective host-link bandwidth a swap achieves
 */
public record CostCalibration(Double computeEfficiency, Double memoryEfficiency, Double hbmCopyEfficiency, Double hostLinkEfficiency) {
  /** Nothing measured: every cost keeps its default. */
  public static final CostCalibration NONE = new CostCalibration(null, null, null, null);

  /** The names of the {@code forward} section's fields. */
  public static final java.util.List<String> FORWARD_FIELDS = java.util.List.of("compute_efficiency", "memory_efficiency");
  /** The names of the {@code copies} section's fields. */
  public static final java.util.List<String> COPIES_FIELDS = java.util.List.of("hbm_efficiency", "host_link_efficiency");

  public CostCalibration {
    for (Double share : new Double[] {computeEfficiency, memoryEfficiency, hbmCopyEfficiency, hostLinkEfficiency}) {
      if (share != null && !(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("an efficiency must be in (0, 1], got " + share);
      }
    }
  }

  /** Returns whether nothing is measured. */
  public boolean isNone() {
    return computeEfficiency == null && memoryEfficiency == null && hbmCopyEfficiency == null && hostLinkEfficiency == null;
  }

  /** Returns the forward-time model of {@code model} on {@code device}: the roofline with the measured efficiencies over its defaults. */
  public ForwardTimeModel forwardTime(ModelPreset model, DeviceSpec device) {
    return new Roofline(model, device,
        computeEfficiency == null ? Roofline.DEFAULT_COMPUTE_EFFICIENCY : computeEfficiency,
        memoryEfficiency == null ? Roofline.DEFAULT_MEMORY_EFFICIENCY : memoryEfficiency);
  }

  /** Returns the copy-cost model on {@code device}: its bandwidths with the measured efficiencies over the defaults. */
  public CopyCostModel copyCost(DeviceSpec device) {
    return CopyBandwidths.of(device,
        hbmCopyEfficiency == null ? CopyBandwidths.DEFAULT_HBM_EFFICIENCY : hbmCopyEfficiency,
        hostLinkEfficiency == null ? CopyBandwidths.DEFAULT_HOST_LINK_EFFICIENCY : hostLinkEfficiency);
  }

  /** Returns the {@code forward} section as the file gave it (field to value), empty when it gave none. */
  public Map<String, Double> forwardSection() {
    Map<String, Double> m = new LinkedHashMap<>();
    if (computeEfficiency != null) {
      m.put("compute_efficiency", computeEfficiency);
    }
    if (memoryEfficiency != null) {
      m.put("memory_efficiency", memoryEfficiency);
    }
    return m;
  }

  /** Returns the {@code copies} section as the file gave it (field to value), empty when it gave none. */
  public Map<String, Double> copiesSection() {
    Map<String, Double> m = new LinkedHashMap<>();
    if (hbmCopyEfficiency != null) {
      m.put("hbm_efficiency", hbmCopyEfficiency);
    }
    if (hostLinkEfficiency != null) {
      m.put("host_link_efficiency", hostLinkEfficiency);
    }
    return m;
  }
}

package kvsim.devicemodel;

import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.ModelPreset;

/**
 * The device-cost part of a calibration file (README, "Calibration files"): what replaces the
 * defaults of the forward-time model and of the copy-cost model ({@link CopyBandwidths}).
 * Efficiencies are shares in (0, 1]; null keeps the default, so a file that gives none of them
 * times every run as no file does.
 *
 * <p>A {@code forward} section, where a file gives one, chooses the run's predictor (Note [Which
 * predictor times a run] on {@link CostModels}): with a {@code profile} table (version 3) the
 * {@link ProfileForwardTime} over it, its efficiencies fitted on the table unless given, its
 * terms the measured defaults ({@link EngineTerms#MEASURED}) unless given; without one the
 * roofline with the given efficiencies over the roofline's defaults, plus whichever terms it gives
 * (none by default, as version 2 files always meant).
 *
 * @param computeEfficiency {@code forward.compute_efficiency}: share of peak FLOP/s a forward pass achieves
 * @param memoryEfficiency {@code forward.memory_efficiency}: share of peak HBM bandwidth a forward pass achieves
 * @param hbmCopyEfficiency {@code copies.hbm_efficiency}: share of peak HBM bandwidth an HBM copy achieves
 * @param hostLinkEfficiency {@code copies.host_link_efficiency}: share of the effective host-link bandwidth a swap achieves
 * @param perSequenceLayerNanos {@code forward.per_sequence_layer_ns} (version 3), or null
 * @param engineOverheadNanos {@code forward.engine_overhead_ns} (version 3), or null
 * @param profile {@code forward.profile} (version 3): a measured per-layer table, or null
 */
public record CostCalibration(Double computeEfficiency, Double memoryEfficiency, Double hbmCopyEfficiency, Double hostLinkEfficiency,
    Double perSequenceLayerNanos, Long engineOverheadNanos, ProfileTable profile) {
  /** Nothing measured: every cost keeps its default. */
  public static final CostCalibration NONE = new CostCalibration(null, null, null, null);

  /** A calibration of efficiencies only (version 2). */
  public CostCalibration(Double computeEfficiency, Double memoryEfficiency, Double hbmCopyEfficiency, Double hostLinkEfficiency) {
    this(computeEfficiency, memoryEfficiency, hbmCopyEfficiency, hostLinkEfficiency, null, null, null);
  }

  /** The names of the {@code forward} section's efficiency fields. */
  public static final java.util.List<String> FORWARD_FIELDS = java.util.List.of("compute_efficiency", "memory_efficiency");
  /** The names of the {@code forward} section's fields that version 3 adds. */
  public static final java.util.List<String> FORWARD_FIELDS_3 = java.util.List.of("per_sequence_layer_ns", "engine_overhead_ns", "profile");
  /** The names of the {@code copies} section's fields. */
  public static final java.util.List<String> COPIES_FIELDS = java.util.List.of("hbm_efficiency", "host_link_efficiency");

  public CostCalibration {
    for (Double share : new Double[] {computeEfficiency, memoryEfficiency, hbmCopyEfficiency, hostLinkEfficiency}) {
      if (share != null && !(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("an efficiency must be in (0, 1], got " + share);
      }
    }
    if (perSequenceLayerNanos != null || engineOverheadNanos != null) {
      new EngineTerms(perSequenceLayerNanos == null ? 0 : perSequenceLayerNanos, engineOverheadNanos == null ? 0 : engineOverheadNanos);
    }
  }

  /** Returns whether the file gives a {@code forward} section, which then chooses the predictor. */
  public boolean hasForward() {
    return computeEfficiency != null || memoryEfficiency != null || perSequenceLayerNanos != null || engineOverheadNanos != null || profile != null;
  }

  /**
   * Returns the predictor this calibration's forward section gives for {@code model} on {@code
   * device} (see the class comment); {@code name} names the file in errors and the summary.
   */
  public ForwardTimeModel forwardTime(ModelPreset model, DeviceSpec device, String name) {
    if (profile == null) {
      Roofline r = (Roofline) forwardTime(model, device);
      if (perSequenceLayerNanos == null && engineOverheadNanos == null) {
        return r;
      }
      return new MeasuredRoofline(r, new EngineTerms(perSequenceLayerNanos == null ? 0 : perSequenceLayerNanos, engineOverheadNanos == null ? 0 : engineOverheadNanos),
          "calibration " + name);
    }
    if (!profile.model().equals(model.name())) {
      throw new kvsim.core.InputException(name + ": forward.profile is a profile of " + profile.model() + ", not of the run's model " + model.name());
    }
    ProfileFit.Efficiencies fitted = computeEfficiency != null && memoryEfficiency != null ? null : ProfileFit.efficiencies(profile, device);
    ProfileFit.Efficiencies e = new ProfileFit.Efficiencies(computeEfficiency != null ? computeEfficiency : fitted.compute(),
        memoryEfficiency != null ? memoryEfficiency : fitted.memory());
    EngineTerms terms = new EngineTerms(perSequenceLayerNanos != null ? perSequenceLayerNanos : EngineTerms.DEFAULT_PER_SEQUENCE_LAYER_NANOS,
        engineOverheadNanos != null ? engineOverheadNanos : EngineTerms.DEFAULT_ENGINE_OVERHEAD_NANOS);
    return new ProfileForwardTime(profile, model, device, e, terms, "calibration " + name + ": " + profile.model() + " on " + profile.device() + " (" + profile.source() + ")");
  }

  /** Returns whether nothing is measured. */
  public boolean isNone() {
    return computeEfficiency == null && memoryEfficiency == null && hbmCopyEfficiency == null && hostLinkEfficiency == null && !hasForward();
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

  /** Returns the version 3 fields of the {@code forward} section as a summary echoes them (the profile by its model, device and size), empty when it gave none. */
  public Map<String, Object> forwardSection3() {
    Map<String, Object> m = new LinkedHashMap<>();
    if (perSequenceLayerNanos != null) {
      m.put("per_sequence_layer_ns", perSequenceLayerNanos);
    }
    if (engineOverheadNanos != null) {
      m.put("engine_overhead_ns", engineOverheadNanos);
    }
    if (profile != null) {
      m.put("profile", profile.model() + " on " + profile.device() + ", " + profile.tokens().length + " token counts (" + profile.source() + ")");
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

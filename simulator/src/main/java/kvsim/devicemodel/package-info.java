/**
 * The <b>simulated</b> device: GPU presets with their HBM capacity ({@link
 * kvsim.devicemodel.DeviceSpec}), the address ranges of a simulated address space ({@link
 * kvsim.devicemodel.Region}) and how a run splits one device among weights, KV cache and
 * activations ({@link kvsim.devicemodel.MemoryPlan}); and the cost models of what runs on it: the
 * forward pass ({@link kvsim.devicemodel.ForwardTimeModel}, by default {@link
 * kvsim.devicemodel.Roofline}), copies ({@link kvsim.devicemodel.CopyCostModel}, by default {@link
 * kvsim.devicemodel.CopyBandwidths}) and a calibration file's efficiencies over them ({@link
 * kvsim.devicemodel.CostCalibration}). Nothing here touches a real GPU; code that
 * replays traces on real CUDA memory lives elsewhere and depends on this package, not the reverse.
 */
package kvsim.devicemodel;

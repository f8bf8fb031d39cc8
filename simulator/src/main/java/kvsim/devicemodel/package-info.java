/**
 * The <b>simulated</b> device: GPU presets with their HBM capacity ({@link
 * kvsim.devicemodel.DeviceSpec}), the address ranges of a simulated address space ({@link
 * kvsim.devicemodel.Region}) and how a run splits one device among weights, KV cache and
 * activations ({@link kvsim.devicemodel.MemoryPlan}). Nothing here touches a real GPU; code that
 * replays traces on real CUDA memory lives elsewhere and depends on this package, not the reverse.
 */
package kvsim.devicemodel;

package kvsim.gpu.device;

/**
 * What a GPU says of itself: the facts a calibration file and a GPU result folder record beside
 * their measurements.
 *
 * @param name the device's name, e.g. "NVIDIA H100 80GB HBM3" ({@code cuDeviceGetName})
 * @param driverVersion the driver's CUDA version as the driver reports it, e.g. "13.0" ({@code cuDriverGetVersion})
 * @param cudaVersion the CUDA version kvsim's bindings were built for, e.g. "12.6"
 * @param totalBytes the device's memory ({@code cuDeviceTotalMem})
 * @param vmmGranularityBytes the minimum granularity of physical allocations ({@code
 *     cuMemGetAllocationGranularity}), 0 where the device has no virtual memory management
 * @param computeCapability e.g. "9.0"
 */
public record DeviceInfo(String name, String driverVersion, String cudaVersion, long totalBytes, long vmmGranularityBytes, String computeCapability) {}

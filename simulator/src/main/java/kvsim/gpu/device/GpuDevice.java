package kvsim.gpu.device;

/**
 * The operations a GPU replay and a GPU calibration perform on real device memory (README, "GPU
 * validation"): plain allocations, the virtual-memory pieces that paged and expandable allocators
 * use (reserve an address range, create physical pages, map and unmap them), copies, the free-memory
 * query and the device's description. Addresses, handles and sizes are in bytes as {@code long}s.
 *
 * <p>One implementation drives a real GPU through CUDA's driver API ({@code cuMemAlloc},
 * {@code cuMemCreate}, {@code cuMemMap}, …); tests use an in-memory stand-in that records the calls.
 * Only the GPU commands reach this package: nothing else in kvsim needs a GPU or its libraries.
 *
 * <p>Every call is synchronous from the caller's view (the device has finished it when it returns),
 * so a caller times a call with {@link System#nanoTime()} around it.
 */
public interface GpuDevice extends AutoCloseable {
  /** Returns the device's description. */
  DeviceInfo info();

  /** Returns the free device memory now, in bytes ({@code cuMemGetInfo}). */
  long freeBytes();

  /**
   * Allocates {@code sizeBytes} of device memory ({@code cuMemAlloc}) and returns its address.
   *
   * @throws DeviceOutOfMemoryException when the device cannot satisfy it
   */
  long allocate(long sizeBytes) throws DeviceOutOfMemoryException;

  /** Frees an allocation made by {@link #allocate} ({@code cuMemFree}). */
  void free(long address);

  /** Reserves a virtual address range of {@code sizeBytes} (a multiple of the granularity; {@code cuMemAddressReserve}) and returns its start. */
  long reserve(long sizeBytes);

  /** Releases a range reserved by {@link #reserve} ({@code cuMemAddressFree}); nothing may be mapped in it. */
  void release(long address, long sizeBytes);

  /**
   * Creates {@code sizeBytes} of physical device memory (a multiple of the granularity; {@code
   * cuMemCreate}) and returns its handle.
   *
   * @throws DeviceOutOfMemoryException when the device cannot satisfy it
   */
  long createPhysical(long sizeBytes) throws DeviceOutOfMemoryException;

  /** Releases physical memory made by {@link #createPhysical} ({@code cuMemRelease}); it must be unmapped first. */
  void releasePhysical(long handle);

  /** Maps the physical memory {@code handle} at {@code address} for {@code sizeBytes} and makes it readable and writable ({@code cuMemMap}, {@code cuMemSetAccess}). */
  void map(long address, long sizeBytes, long handle);

  /** Unmaps {@code sizeBytes} at {@code address} ({@code cuMemUnmap}). */
  void unmap(long address, long sizeBytes);

  /** Copies {@code sizeBytes} from device address {@code source} to device address {@code target} ({@code cuMemcpyDtoD}). */
  void copyDeviceToDevice(long target, long source, long sizeBytes);

  /** Copies {@code sizeBytes} from a pinned host buffer to device address {@code target} ({@code cuMemcpyHtoD}). */
  void copyHostToDevice(long target, long sizeBytes);

  /** Copies {@code sizeBytes} from device address {@code source} to a pinned host buffer ({@code cuMemcpyDtoH}). */
  void copyDeviceToHost(long source, long sizeBytes);

  /** Waits until the device has finished all work ({@code cuCtxSynchronize}). */
  void synchronize();

  /** Frees what the device still holds of this session (allocations, mappings, host buffers) and its context. */
  @Override
  void close();
}

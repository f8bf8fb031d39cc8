package kvsim.gpu.device;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemAllocationGranularity_flags;
import jcuda.driver.CUmemAllocationProp;
import jcuda.driver.CUmemAllocationType;
import jcuda.driver.CUmemGenericAllocationHandle;
import jcuda.driver.CUmemLocation;
import jcuda.driver.CUmemLocationType;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * A real GPU driven through CUDA's driver API by JCuda ({@code jcuda.driver.JCudaDriver}): one
 * context on one device; plain allocations ({@code cuMemAlloc}), the virtual-memory management
 * calls ({@code cuMemAddressReserve}, {@code cuMemCreate} with pinned device-located memory,
 * {@code cuMemMap} + {@code cuMemSetAccess}), copies through a pinned host buffer ({@code
 * cuMemAllocHost}) that grows to the largest host copy asked for. Opened by {@link CudaDevices#open}.
 * {@code cuMemCreate} and {@code cuMemSetAccess} go to the driver through {@link DriverVmm}, since
 * JCuda 12.6 passes their structures wrongly (Note [Structures JCuda 12.6 passes wrongly] there).
 *
 * <p>JCuda's exceptions are on: every failing call throws a {@link CudaException} named after its
 * {@code CUresult}; {@code CUDA_ERROR_OUT_OF_MEMORY} on an allocation becomes a {@link
 * DeviceOutOfMemoryException} (a result), anything else stays an unchecked failure
 * ({@link CudaDevices#isOutOfMemory}).
 *
 * <p>Note [Device addresses as longs]: JCuda hides a {@link CUdeviceptr}'s address (its field is
 * private, its getter protected), yet a replay computes offsets inside an arena; so {@link Ptr}
 * reads the address through the protected getter, and an address goes back to the driver as the
 * pointer object the driver returned where it starts an allocation or a reserved range, inside one
 * as that object with the byte offset to the address ({@code withByteOffset}), and else as a null
 * pointer with that byte offset, which JCuda passes on as their sum (its {@code getPointer}).
 * (An earlier H200 run's CUDA_ERROR_INVALID_VALUE was first blamed on null pointers with offsets;
 * it came from cuMemCreate's structure, Note [Structures JCuda 12.6 passes wrongly] in {@link
 * DriverVmm}.) Handles of physical memory are kept in a map keyed by their native value for the
 * same reason.
 */
final class CudaDevice implements GpuDevice {
  /** A device pointer whose address kvsim can read (Note [Device addresses as longs]). */
  static final class Ptr extends CUdeviceptr {
    long address() {
      return getNativePointer() + getByteOffset();
    }
  }

  /** A physical-memory handle whose native value kvsim can read, and set from {@code cuMemCreate}'s result (Note [Structures JCuda 12.6 passes wrongly] in {@link DriverVmm}). */
  static final class Handle extends CUmemGenericAllocationHandle {
    long value() {
      return getNativePointer();
    }

    /** JCuda's private field of a handle's value, looked up once (a page's create is timed). */
    private static final java.lang.reflect.Field NATIVE_POINTER = nativePointerField();

    private static java.lang.reflect.Field nativePointerField() {
      try {
        java.lang.reflect.Field f = jcuda.NativePointerObject.class.getDeclaredField("nativePointer");
        f.setAccessible(true);
        return f;
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("JCuda's handle class has changed: " + e, e);
      }
    }

    static Handle of(long value) {
      Handle h = new Handle();
      try {
        NATIVE_POINTER.setLong(h, value);
      } catch (IllegalAccessException e) {
        throw new IllegalStateException("JCuda's handle class has changed: " + e, e);
      }
      return h;
    }
  }

  private final CUdevice device;
  private final CUcontext context;
  private final DeviceInfo info;
  private final int ordinal;
  private final TreeMap<Long, Ptr> allocations = new TreeMap<>();
  private final Map<Long, Handle> handles = new LinkedHashMap<>();
  private final Map<Long, Long> reservations = new LinkedHashMap<>();
  private final TreeMap<Long, Ptr> reservationStarts = new TreeMap<>();
  private final Map<Long, Long> mappings = new LinkedHashMap<>();
  private Pointer host;
  private long hostBytes;
  private boolean closed;
  private DriverVmm.Binding vmm;

  CudaDevice(int ordinal, CUdevice device, CUcontext context) {
    this.ordinal = ordinal;
    this.device = device;
    this.context = context;
    this.info = describe();
  }

  private DeviceInfo describe() {
    byte[] name = new byte[256];
    JCudaDriver.cuDeviceGetName(name, name.length, device);
    int end = 0;
    while (end < name.length && name[end] != 0) {
      end++;
    }
    long[] total = new long[1];
    JCudaDriver.cuDeviceTotalMem(total, device);
    int[] driver = new int[1];
    JCudaDriver.cuDriverGetVersion(driver);
    int[] major = new int[1];
    int[] minor = new int[1];
    JCudaDriver.cuDeviceGetAttribute(major, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    JCudaDriver.cuDeviceGetAttribute(minor, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    long granularity;
    try {
      long[] g = new long[1];
      JCudaDriver.cuMemGetAllocationGranularity(g, prop(), CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      granularity = g[0];
    } catch (CudaException e) {
      granularity = 0; // the device has no virtual memory management (DeviceInfo)
    }
    return new DeviceInfo(new String(name, 0, end, java.nio.charset.StandardCharsets.US_ASCII).trim(), CudaDevices.version(driver[0]),
        CudaDevices.bindingsVersion(), total[0], granularity, major[0] + "." + minor[0]);
  }

  private CUmemAllocationProp prop() {
    CUmemAllocationProp p = new CUmemAllocationProp();
    p.type = CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location = new CUmemLocation(CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE, ordinal);
    return p;
  }

  /** The pointer for {@code address}: the driver's own object where it starts an allocation or a reserved range, else one at that byte offset. */
  private CUdeviceptr at(long address) {
    Ptr p = allocations.get(address);
    if (p == null) {
      p = reservationStarts.get(address);
    }
    if (p != null) {
      return p;
    }
    // Inside an allocation or a reserved range: the driver's own pointer of its start with the byte
    // offset to the address (JCuda's documented way to point inside device memory).
    Map.Entry<Long, Ptr> range = reservationStarts.floorEntry(address);
    if (range != null && address - range.getKey() < reservations.get(range.getKey())) {
      return range.getValue().withByteOffset(address - range.getKey());
    }
    Map.Entry<Long, Ptr> allocation = allocations.floorEntry(address);
    if (allocation != null) {
      return allocation.getValue().withByteOffset(address - allocation.getKey());
    }
    return new CUdeviceptr().withByteOffset(address);
  }

  @Override
  public DeviceInfo info() {
    return info;
  }

  @Override
  public long freeBytes() {
    long[] free = new long[1];
    long[] total = new long[1];
    JCudaDriver.cuMemGetInfo(free, total);
    return free[0];
  }

  @Override
  public long allocate(long sizeBytes) throws DeviceOutOfMemoryException {
    Ptr p = new Ptr();
    try {
      JCudaDriver.cuMemAlloc(p, sizeBytes);
    } catch (CudaException e) {
      if (CudaDevices.isOutOfMemory(e)) {
        throw new DeviceOutOfMemoryException(sizeBytes);
      }
      throw e;
    }
    allocations.put(p.address(), p);
    return p.address();
  }

  @Override
  public void free(long address) {
    Ptr p = allocations.remove(address);
    if (p == null) {
      throw new IllegalArgumentException("no allocation at 0x" + Long.toHexString(address));
    }
    JCudaDriver.cuMemFree(p);
  }

  @Override
  public long reserve(long sizeBytes) {
    Ptr p = new Ptr();
    JCudaDriver.cuMemAddressReserve(p, sizeBytes, 0, new CUdeviceptr(), 0);
    reservations.put(p.address(), sizeBytes);
    reservationStarts.put(p.address(), p);
    return p.address();
  }

  @Override
  public void release(long address, long sizeBytes) {
    JCudaDriver.cuMemAddressFree(at(address), sizeBytes);
    reservations.remove(address);
    reservationStarts.remove(address);
  }

  @Override
  public long createPhysical(long sizeBytes) throws DeviceOutOfMemoryException {
    long[] created = new long[1];
    int result = vmm().memCreate(created, sizeBytes, ordinal);
    if (result == CUresult.CUDA_ERROR_OUT_OF_MEMORY) {
      throw new DeviceOutOfMemoryException(sizeBytes);
    }
    check(result);
    Handle h = Handle.of(created[0]);
    handles.put(h.value(), h);
    return h.value();
  }

  @Override
  public void releasePhysical(long handle) {
    Handle h = handles.remove(handle);
    if (h == null) {
      throw new IllegalArgumentException("no physical memory with handle 0x" + Long.toHexString(handle));
    }
    JCudaDriver.cuMemRelease(h);
  }

  @Override
  public void map(long address, long sizeBytes, long handle) {
    Handle h = handles.get(handle);
    if (h == null) {
      throw new IllegalArgumentException("no physical memory with handle 0x" + Long.toHexString(handle));
    }
    JCudaDriver.cuMemMap(at(address), sizeBytes, 0, h, 0);
    mappings.put(address, sizeBytes);
    check(vmm().memSetAccess(address, sizeBytes, ordinal));
  }

  /** The driver's own cuMemCreate and cuMemSetAccess, bound on first use (Note [Structures JCuda 12.6 passes wrongly] in {@link DriverVmm}). */
  private DriverVmm vmm() {
    if (vmm == null) {
      vmm = DriverVmm.open();
    }
    return vmm.calls().orElseThrow(() -> new GpuUnavailableException(vmm.reason()));
  }

  /** A failing {@code CUresult} as JCuda reports one: a {@link CudaException} named after it. */
  private static void check(int result) {
    if (result != CUresult.CUDA_SUCCESS) {
      throw new CudaException(CUresult.stringFor(result));
    }
  }

  @Override
  public void unmap(long address, long sizeBytes) {
    JCudaDriver.cuMemUnmap(at(address), sizeBytes);
    mappings.remove(address);
  }

  @Override
  public void copyDeviceToDevice(long target, long source, long sizeBytes) {
    JCudaDriver.cuMemcpyDtoD(at(target), at(source), sizeBytes);
  }

  @Override
  public void copyHostToDevice(long target, long sizeBytes) {
    JCudaDriver.cuMemcpyHtoD(at(target), hostBuffer(sizeBytes), sizeBytes);
  }

  @Override
  public void copyDeviceToHost(long source, long sizeBytes) {
    JCudaDriver.cuMemcpyDtoH(hostBuffer(sizeBytes), at(source), sizeBytes);
  }

  /** The pinned host buffer, grown (outside any timed call's interesting part: callers warm up first) to hold {@code sizeBytes}. */
  private Pointer hostBuffer(long sizeBytes) {
    if (sizeBytes > hostBytes) {
      if (host != null) {
        JCudaDriver.cuMemFreeHost(host);
        host = null;
        hostBytes = 0;
      }
      Pointer p = new Pointer();
      JCudaDriver.cuMemAllocHost(p, sizeBytes);
      host = p;
      hostBytes = sizeBytes;
    }
    return host;
  }

  @Override
  public void synchronize() {
    JCudaDriver.cuCtxSynchronize();
  }

  /** Runs the context's work on this thread (a context is current per thread). */
  void makeCurrent() {
    JCudaDriver.cuCtxSetCurrent(context);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    // Destroying the context frees everything it holds; the explicit frees first keep a failure visible.
    try {
      for (Map.Entry<Long, Long> m : mappings.entrySet()) {
        JCudaDriver.cuMemUnmap(at(m.getKey()), m.getValue());
      }
      for (Handle h : handles.values()) {
        JCudaDriver.cuMemRelease(h);
      }
      for (Map.Entry<Long, Long> r : reservations.entrySet()) {
        JCudaDriver.cuMemAddressFree(at(r.getKey()), r.getValue());
      }
      for (Ptr p : allocations.values()) {
        JCudaDriver.cuMemFree(p);
      }
      if (host != null) {
        JCudaDriver.cuMemFreeHost(host);
      }
    } finally {
      mappings.clear();
      handles.clear();
      reservations.clear();
      reservationStarts.clear();
      allocations.clear();
      host = null;
      JCudaDriver.cuCtxDestroy(context);
    }
  }
}

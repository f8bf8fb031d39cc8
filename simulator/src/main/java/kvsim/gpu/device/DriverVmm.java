package kvsim.gpu.device;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * The two virtual-memory calls whose structures kvsim builds itself, {@code cuMemCreate} and
 * {@code cuMemSetAccess}, made on the CUDA driver ({@code libcuda.so.1}) through Java's foreign
 * function API instead of JCuda. The structures' layouts are CUDA's {@code cuda.h}
 * ({@code CUmemAllocationProp}, 32 bytes; {@code CUmemAccessDesc}, 12 bytes; x86-64).
 *
 * <p>Note [Structures JCuda 12.6 passes wrongly]: JCuda 12.6.0 (jcuda/jcuda, {@code
 * JCudaDriverJNI/src/JCudaDriver.cpp} at 5ecd90c) converts both structures wrongly.
 * {@code getCUmemAllocationProp} reads {@code allocFlags}' three fields with their own field ids
 * off the {@code CUmemAllocationProp} object instead of its {@code allocFlags} object, and leaves
 * {@code reserved} uninitialised; with HotSpot's field layout, {@code usage} then reads the low
 * half of {@code type} (1, {@code CU_MEM_CREATE_USAGE_TILE_POOL}). {@code getCUmemAccessDescs}
 * reads {@code location.type} and {@code location.id} off the {@code CUmemAccessDesc} object
 * instead of its {@code location}: the access flags and a compressed reference. On an H200 (driver
 * 580.159.04) {@code cuMemCreate} failed with {@code CUDA_ERROR_INVALID_VALUE} on every call, so no
 * page could be mapped. {@code cuMemGetAllocationGranularity} goes through the same conversion and
 * returned the right granularity there; {@code cuMemMap}, {@code cuMemUnmap} and {@code
 * cuMemRelease} take no structure and stay on JCuda.
 *
 * <p>Note [Foreign calls by reflection]: the product compiles for Java 17, where the foreign
 * function API is not final ({@code java.lang.foreign} is final from Java 22), so this class
 * reaches it by reflection once, when it binds, and then calls typed method handles ({@code
 * invokeExact} on {@code Object}-typed segments, no boxing). The bundle's runtime is Java 25. On an
 * older Java {@link #open} says why it cannot bind, and page mapping is unavailable with that reason.
 * The two structure buffers live for the process (the global arena) and are rewritten before each
 * call, so a call allocates nothing; a device is driven from one thread.
 */
final class DriverVmm {
  /** {@code sizeof(CUmemAllocationProp)} on x86-64. */
  static final int ALLOCATION_PROP_BYTES = 32;
  /** {@code sizeof(CUmemAccessDesc)}. */
  static final int ACCESS_DESC_BYTES = 12;
  private static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
  private static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;
  private static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;

  private final MethodHandle createCall; // (Object handleOut, long size, Object prop, long flags) int
  private final MethodHandle setAccessCall; // (long ptr, long size, Object desc, long count) int
  private final Object handleSegment;
  private final ByteBuffer handle;
  private final Object propSegment;
  private final ByteBuffer prop;
  private final Object descSegment;
  private final ByteBuffer desc;

  private DriverVmm(MethodHandle createCall, MethodHandle setAccessCall, Object[] segments, ByteBuffer[] views) {
    this.createCall = createCall;
    this.setAccessCall = setAccessCall;
    this.handleSegment = segments[0];
    this.handle = views[0];
    this.propSegment = segments[1];
    this.prop = views[1];
    this.descSegment = segments[2];
    this.desc = views[2];
  }

  /** What binding gave: the calls, or the one-line reason they cannot be made here. */
  record Binding(Optional<DriverVmm> calls, String reason) {}

  /** Binds the two calls in {@code libcuda.so.1} (Note [Foreign calls by reflection]). */
  static Binding open() {
    int feature = Runtime.version().feature();
    if (feature < 22) {
      return new Binding(Optional.empty(), "page mapping needs Java 22 or newer (this is Java " + feature
          + "): JCuda 12.6 passes cuMemCreate and cuMemSetAccess malformed structures, so kvsim calls them itself through the foreign function API");
    }
    try {
      Foreign f = new Foreign();
      Object lookup = f.libraryLookup("libcuda.so.1");
      MethodHandle create = f.downcall(lookup, "cuMemCreate", f.jInt, f.address, f.jLong, f.address, f.jLong)
          .asType(MethodType.methodType(int.class, Object.class, long.class, Object.class, long.class));
      MethodHandle setAccess = f.downcall(lookup, "cuMemSetAccess", f.jInt, f.jLong, f.jLong, f.address, f.jLong)
          .asType(MethodType.methodType(int.class, long.class, long.class, Object.class, long.class));
      Object[] segments = {f.allocate(8), f.allocate(ALLOCATION_PROP_BYTES), f.allocate(ACCESS_DESC_BYTES)};
      ByteBuffer[] views = new ByteBuffer[3];
      for (int i = 0; i < 3; i++) {
        views[i] = f.byteBuffer(segments[i]);
      }
      return new Binding(Optional.of(new DriverVmm(create, setAccess, segments, views)), null);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return new Binding(Optional.empty(), "the CUDA driver's cuMemCreate and cuMemSetAccess could not be bound: " + Foreign.causeOf(e));
    }
  }

  /** {@code cuMemCreate(&handle, sizeBytes, &prop, 0)} for pinned memory on device {@code ordinal}; returns the {@code CUresult} and the handle in {@code handleOut[0]}. */
  int memCreate(long[] handleOut, long sizeBytes, int ordinal) {
    writeAllocationProp(prop, ordinal);
    handle.putLong(0, 0L);
    int result;
    try {
      result = (int) createCall.invokeExact(handleSegment, sizeBytes, propSegment, 0L);
    } catch (Throwable t) {
      throw new IllegalStateException("cuMemCreate could not be called", t);
    }
    handleOut[0] = handle.getLong(0);
    return result;
  }

  /** {@code cuMemSetAccess(address, sizeBytes, &desc, 1)}, read-write for device {@code ordinal}; returns the {@code CUresult}. */
  int memSetAccess(long address, long sizeBytes, int ordinal) {
    writeAccessDesc(desc, ordinal);
    try {
      return (int) setAccessCall.invokeExact(address, sizeBytes, descSegment, 1L);
    } catch (Throwable t) {
      throw new IllegalStateException("cuMemSetAccess could not be called", t);
    }
  }

  /** {@code CUmemAllocationProp}: pinned, no shareable handle, on device {@code ordinal}, every flag and reserved byte zero. */
  static void writeAllocationProp(ByteBuffer b, int ordinal) {
    for (int i = 0; i < ALLOCATION_PROP_BYTES; i += 8) {
      b.putLong(i, 0L);
    }
    b.putInt(0, CU_MEM_ALLOCATION_TYPE_PINNED); // type
    // 4: requestedHandleTypes, CU_MEM_HANDLE_TYPE_NONE
    b.putInt(8, CU_MEM_LOCATION_TYPE_DEVICE); // location.type
    b.putInt(12, ordinal); // location.id
    // 16: win32HandleMetaData, null; 24: allocFlags {compressionType, gpuDirectRDMACapable, usage, reserved[4]}, zero
  }

  /** {@code CUmemAccessDesc}: read-write access for device {@code ordinal}. */
  static void writeAccessDesc(ByteBuffer b, int ordinal) {
    b.putInt(0, CU_MEM_LOCATION_TYPE_DEVICE); // location.type
    b.putInt(4, ordinal); // location.id
    b.putInt(8, CU_MEM_ACCESS_FLAGS_PROT_READWRITE); // flags
  }
}

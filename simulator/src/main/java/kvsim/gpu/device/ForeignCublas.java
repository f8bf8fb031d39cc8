package kvsim.gpu.device;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.lang.reflect.InvocationTargetException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * cuBLAS's fp16 GEMM ({@code cublasGemmEx}) called through Java's foreign function API on
 * whichever cuBLAS the host has, 13 or 12, instead of through JCuda's binding, which links
 * {@code libcublas.so.12} by name. The calls and constants are cuBLAS's {@code cublas_api.h}
 * ({@code cublasCreate_v2}, {@code cublasGetVersion_v2}, {@code cublasGemmEx}, {@code
 * cublasDestroy_v2}; {@code CUBLAS_OP_N} 0, {@code CUDA_R_16F} 2, {@code CUBLAS_COMPUTE_32F} 68,
 * {@code CUBLAS_GEMM_DEFAULT} -1), whose signatures are the same in CUDA 12 and 13.
 *
 * <p>Note [cuBLAS through the foreign function API]: a lent H200 host had the driver and CUDA
 * 13's {@code libcublas.so.13} but no {@code libcublas.so.12}, so JCuda 12.6's cuBLAS binding
 * could not load and no GEMM was measured. cuBLAS keeps its C interface across major versions, so
 * kvsim binds the four calls itself (Note [Foreign calls by reflection] in {@link DriverVmm}),
 * looking for {@code libcublas.so.13}, then {@code libcublas.so.12}, first where the dynamic
 * linker looks and then in CUDA's usual folders ({@code $CUDA_HOME/lib64}, {@code
 * /usr/local/cuda/lib64}, {@code /usr/local/cuda/targets/x86_64-linux/lib}). cuBLAS runs on
 * the CUDA context current on the calling thread, the one {@link CudaDevices#open} made. Handle,
 * device pointers and the host scalars {@code alpha} and {@code beta} go across as 64-bit
 * integers (pointers on x86-64), so a call is one {@code invokeExact} on primitives.
 */
final class ForeignCublas {
  static final int CUBLAS_OP_N = 0;
  static final int CUDA_R_16F = 2;
  static final int CUBLAS_COMPUTE_32F = 68;
  static final int CUBLAS_GEMM_DEFAULT = -1;
  /** The library names tried, newest first. */
  static final List<String> NAMES = List.of("libcublas.so.13", "libcublas.so.12");

  private final String library;
  private final long handle;
  private final long alphaAddress;
  private final long betaAddress;
  private final MethodHandle gemmCall;
  private final MethodHandle destroyCall;
  private final int version;

  private ForeignCublas(String library, long handle, long alphaAddress, long betaAddress, MethodHandle gemmCall, MethodHandle destroyCall, int version) {
    this.library = library;
    this.handle = handle;
    this.alphaAddress = alphaAddress;
    this.betaAddress = betaAddress;
    this.gemmCall = gemmCall;
    this.destroyCall = destroyCall;
    this.version = version;
  }

  /** What binding gave: a cuBLAS handle on the current context, or the one-line reason there is none. */
  record Binding(Optional<ForeignCublas> calls, String reason) {}

  /** Where cuBLAS is looked for, in order: each name as the dynamic linker finds it, then in CUDA's usual folders. */
  static List<String> candidates(String cudaHome) {
    List<String> folders = new ArrayList<>();
    if (cudaHome != null && !cudaHome.isBlank()) {
      folders.add(cudaHome + "/lib64");
    }
    folders.add("/usr/local/cuda/lib64");
    folders.add("/usr/local/cuda/targets/x86_64-linux/lib");
    List<String> out = new ArrayList<>(NAMES);
    for (String name : NAMES) {
      for (String folder : folders) {
        out.add(folder + "/" + name);
      }
    }
    return out;
  }

  /** Finds cuBLAS, binds its calls and creates a handle on the calling thread's current context. */
  static Binding open() {
    int feature = Runtime.version().feature();
    if (feature < 22) {
      return new Binding(Optional.empty(), "cuBLAS through the foreign function API needs Java 22 or newer (this is Java " + feature + ")");
    }
    Foreign f;
    try {
      f = new Foreign();
    } catch (ReflectiveOperationException e) {
      return new Binding(Optional.empty(), "the foreign function API could not be reached: " + e);
    }
    Object lookup = null;
    String library = null;
    for (String candidate : candidates(System.getenv("CUDA_HOME"))) {
      try {
        lookup = f.libraryLookup(candidate);
        library = candidate;
        break;
      } catch (InvocationTargetException e) {
        // not there: try the next one
      } catch (ReflectiveOperationException e) {
        return new Binding(Optional.empty(), "cuBLAS could not be looked up: " + e);
      }
    }
    if (lookup == null) {
      return new Binding(Optional.empty(), "cuBLAS is not installed: neither " + String.join(" nor ", NAMES)
          + " is on the library path or under $CUDA_HOME/lib64 or /usr/local/cuda");
    }
    try {
      MethodHandle create = f.downcall(lookup, "cublasCreate_v2", f.jInt, f.address)
          .asType(MethodType.methodType(int.class, Object.class));
      MethodHandle getVersion = f.downcall(lookup, "cublasGetVersion_v2", f.jInt, f.jLong, f.address)
          .asType(MethodType.methodType(int.class, long.class, Object.class));
      MethodHandle destroy = f.downcall(lookup, "cublasDestroy_v2", f.jInt, f.jLong);
      MethodHandle gemm = f.downcall(lookup, "cublasGemmEx", f.jInt,
          f.jLong, f.jInt, f.jInt, f.jInt, f.jInt, f.jInt, // handle, transa, transb, m, n, k
          f.jLong, f.jLong, f.jInt, f.jInt, // alpha, A, Atype, lda
          f.jLong, f.jInt, f.jInt, // B, Btype, ldb
          f.jLong, f.jLong, f.jInt, f.jInt, // beta, C, Ctype, ldc
          f.jInt, f.jInt); // computeType, algo
      // Everything that can fail is done before the handle exists, so a failure leaks no handle.
      Object out = f.allocate(8);
      ByteBuffer outView = f.byteBuffer(out);
      Object scalars = f.allocate(8);
      ByteBuffer scalarView = f.byteBuffer(scalars);
      scalarView.putFloat(0, 1f); // alpha
      scalarView.putFloat(4, 0f); // beta
      long alpha = f.addressOf(scalars);
      int status = (int) create.invokeExact(out);
      if (status != 0) {
        return new Binding(Optional.empty(), library + ": cublasCreate failed with status " + status);
      }
      long handle = outView.getLong(0);
      outView.putLong(0, 0L);
      status = (int) getVersion.invokeExact(handle, out);
      int version = status == 0 ? outView.getInt(0) : 0;
      return new Binding(Optional.of(new ForeignCublas(library, handle, alpha, alpha + 4, gemm, destroy, version)), null);
    } catch (Throwable t) {
      return new Binding(Optional.empty(), library + ": cuBLAS could not be bound: " + Foreign.causeOf(t));
    }
  }

  /** Where cuBLAS was found (a name or a path). */
  String library() {
    return library;
  }

  /** cuBLAS's version as it reports it ({@code cublasGetVersion}: e.g. 130001 for 13.0.1), or 0 when it did not say. */
  int version() {
    return version;
  }

  /** Column-major {@code C (rows × columns) = A (rows × inner) · B (inner × columns)} in fp16 with fp32 accumulation; returns cuBLAS's status (0 is success). */
  int gemm(long a, long b, long c, int rows, int inner, int columns) {
    try {
      return (int) gemmCall.invokeExact(handle, CUBLAS_OP_N, CUBLAS_OP_N, rows, columns, inner,
          alphaAddress, a, CUDA_R_16F, rows,
          b, CUDA_R_16F, inner,
          betaAddress, c, CUDA_R_16F, rows,
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } catch (Throwable t) {
      throw new IllegalStateException("cublasGemmEx could not be called", t);
    }
  }

  /** Destroys the handle; returns cuBLAS's status. */
  int destroy() {
    try {
      return (int) destroyCall.invokeExact(handle);
    } catch (Throwable t) {
      throw new IllegalStateException("cublasDestroy could not be called", t);
    }
  }
}

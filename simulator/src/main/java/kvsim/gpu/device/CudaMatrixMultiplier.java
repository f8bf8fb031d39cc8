package kvsim.gpu.device;

import jcuda.Pointer;
import jcuda.cudaDataType;
import jcuda.driver.JCudaDriver;
import jcuda.jcublas.JCublas2;
import jcuda.jcublas.cublasComputeType;
import jcuda.jcublas.cublasGemmAlgo;
import jcuda.jcublas.cublasHandle;
import jcuda.jcublas.cublasOperation;

/**
 * fp16 matrix products on a real GPU through cuBLAS ({@code cublasGemmEx} with fp16 inputs and
 * output, fp32 accumulation, the default algorithm: what a serving engine's linear layers run),
 * on a device opened by {@link CudaDevices#open}. Its operands live in three device buffers sized
 * once for the largest product and filled with a small constant. On Java 22 and newer cuBLAS is
 * called through the foreign function API on whichever of {@code libcublas.so.13} and {@code
 * libcublas.so.12} the host has ({@link ForeignCublas}, Note [cuBLAS through the foreign function
 * API]); on an older Java through JCuda's binding, which needs {@code libcublas.so.12}. Where
 * neither works, {@link #open} says why in one line ({@link GpuUnavailableException}) and a
 * calibration goes on without its GEMM part.
 */
final class CudaMatrixMultiplier implements MatrixMultiplier {
  private final cublasHandle handle; // JCuda's binding, or null
  private final ForeignCublas foreign; // the foreign function API's, or null
  private final CudaDevice.Ptr a;
  private final CudaDevice.Ptr b;
  private final CudaDevice.Ptr c;
  private final long maxRows;
  private final long maxInner;
  private final long maxColumns;
  private final Pointer one = Pointer.to(new float[] {1f});
  private final Pointer zero = Pointer.to(new float[] {0f});

  private CudaMatrixMultiplier(cublasHandle handle, ForeignCublas foreign, CudaDevice.Ptr a, CudaDevice.Ptr b, CudaDevice.Ptr c, long maxRows, long maxInner,
      long maxColumns) {
    this.handle = handle;
    this.foreign = foreign;
    this.a = a;
    this.b = b;
    this.c = c;
    this.maxRows = maxRows;
    this.maxInner = maxInner;
    this.maxColumns = maxColumns;
  }

  /** Why cuBLAS would not load, kept for later calls (the JVM names the first failure only once). */
  private static volatile String linkageReason;

  /**
   * Opens cuBLAS on the calling thread's current context with operands for products up to rows ×
   * inner by inner × columns: through the foreign function API on Java 22 and newer, else
   * through JCuda's binding.
   */
  static CudaMatrixMultiplier open(long maxRows, long maxInner, long maxColumns) {
    if (linkageReason != null) {
      throw new GpuUnavailableException(linkageReason);
    }
    cublasHandle h = null;
    ForeignCublas foreign = null;
    if (Runtime.version().feature() >= 22) {
      ForeignCublas.Binding binding = ForeignCublas.open();
      if (binding.calls().isEmpty()) {
        linkageReason = binding.reason();
        throw new GpuUnavailableException(linkageReason);
      }
      foreign = binding.calls().get();
    } else {
      h = new cublasHandle();
      try {
        JCublas2.setExceptionsEnabled(true);
        JCublas2.cublasCreate(h);
      } catch (LinkageError e) {
        linkageReason = reasonForLinkage(e);
        throw new GpuUnavailableException(linkageReason, e);
      }
    }
    CudaDevice.Ptr a = new CudaDevice.Ptr();
    CudaDevice.Ptr b = new CudaDevice.Ptr();
    CudaDevice.Ptr c = new CudaDevice.Ptr();
    JCudaDriver.cuMemAlloc(a, 2 * maxRows * maxInner);
    JCudaDriver.cuMemAlloc(b, 2 * maxInner * maxColumns);
    JCudaDriver.cuMemAlloc(c, 2 * maxRows * maxColumns);
    short small = (short) 0x2E66; // about 0.1 in fp16: finite products whatever the inner size
    JCudaDriver.cuMemsetD16(a, small, maxRows * maxInner);
    JCudaDriver.cuMemsetD16(b, small, maxInner * maxColumns);
    JCudaDriver.cuCtxSynchronize();
    return new CudaMatrixMultiplier(h, foreign, a, b, c, maxRows, maxInner, maxColumns);
  }

  /** Which cuBLAS runs the products, in words: the library and its version, or JCuda's binding. */
  @Override
  public String describe() {
    if (foreign == null) {
      return "cuBLAS 12 through JCuda " + jcuda.JCudaVersion.get();
    }
    int v = foreign.version();
    String version = v == 0 ? "" : " " + v / 10000 + "." + (v / 100) % 100 + "." + v % 100;
    return "cuBLAS" + version + " (" + foreign.library() + ")";
  }

  /** The one-line reason for a cuBLAS binding that would not load. */
  static String reasonForLinkage(Throwable e) {
    StringBuilder all = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append('\n');
    }
    if (all.toString().contains("libcublas")) {
      return "cuBLAS 12 is not installed: JCuda's cuBLAS binding needs libcublas.so.12 (CUDA 12's cuBLAS) on the library path";
    }
    String first = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return "JCuda's cuBLAS library could not load: " + first.strip().split("\\R", 2)[0];
  }

  @Override
  public void multiply(int rows, int inner, int columns) {
    if (rows > maxRows || inner > maxInner || columns > maxColumns || rows <= 0 || inner <= 0 || columns <= 0) {
      throw new IllegalArgumentException("a product of " + rows + "×" + inner + " by " + inner + "×" + columns + " does not fit the operands");
    }
    // Column-major: C (rows × columns) = A (rows × inner) · B (inner × columns).
    if (foreign != null) {
      int status = foreign.gemm(a.address(), b.address(), c.address(), rows, inner, columns);
      if (status != 0) {
        throw new IllegalStateException("cublasGemmEx failed with status " + status + " on " + rows + "×" + inner + "×" + columns);
      }
      JCudaDriver.cuCtxSynchronize();
      return;
    }
    JCublas2.cublasGemmEx(handle, cublasOperation.CUBLAS_OP_N, cublasOperation.CUBLAS_OP_N, rows, columns, inner, one, a, cudaDataType.CUDA_R_16F,
        rows, b, cudaDataType.CUDA_R_16F, inner, zero, c, cudaDataType.CUDA_R_16F, rows, cublasComputeType.CUBLAS_COMPUTE_32F,
        cublasGemmAlgo.CUBLAS_GEMM_DEFAULT);
    JCudaDriver.cuCtxSynchronize();
  }

  @Override
  public void close() {
    try {
      if (foreign != null) {
        foreign.destroy();
      } else {
        JCublas2.cublasDestroy(handle);
      }
    } finally {
      JCudaDriver.cuMemFree(a);
      JCudaDriver.cuMemFree(b);
      JCudaDriver.cuMemFree(c);
    }
  }
}

package kvsim.gpu.device;

import jcuda.Pointer;
import jcuda.cudaDataType;
import jcuda.driver.CUdeviceptr;
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
 * once for the largest product and filled with a small constant. JCuda's cuBLAS binding needs the
 * CUDA toolkit's {@code libcublas.so.12}, which a host with the driver alone (or CUDA 13's {@code
 * libcublas.so.13} only) lacks: {@link #open}
 * then says so in one line ({@link GpuUnavailableException}) and a calibration goes on without
 * its GEMM part.
 */
final class CudaMatrixMultiplier implements MatrixMultiplier {
  private final cublasHandle handle;
  private final CUdeviceptr a;
  private final CUdeviceptr b;
  private final CUdeviceptr c;
  private final long maxRows;
  private final long maxInner;
  private final long maxColumns;
  private final Pointer one = Pointer.to(new float[] {1f});
  private final Pointer zero = Pointer.to(new float[] {0f});

  private CudaMatrixMultiplier(cublasHandle handle, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, long maxRows, long maxInner, long maxColumns) {
    this.handle = handle;
    this.a = a;
    this.b = b;
    this.c = c;
    this.maxRows = maxRows;
    this.maxInner = maxInner;
    this.maxColumns = maxColumns;
  }

  /** Why cuBLAS would not load, kept for later calls (the JVM names the first failure only once). */
  private static volatile String linkageReason;

  /** Opens cuBLAS on the calling thread's current context with operands for products up to rows × inner by inner × columns. */
  static CudaMatrixMultiplier open(long maxRows, long maxInner, long maxColumns) {
    if (linkageReason != null) {
      throw new GpuUnavailableException(linkageReason);
    }
    cublasHandle h = new cublasHandle();
    try {
      JCublas2.setExceptionsEnabled(true);
      JCublas2.cublasCreate(h);
    } catch (LinkageError e) {
      linkageReason = reasonForLinkage(e);
      throw new GpuUnavailableException(linkageReason, e);
    }
    CUdeviceptr a = new CUdeviceptr();
    CUdeviceptr b = new CUdeviceptr();
    CUdeviceptr c = new CUdeviceptr();
    JCudaDriver.cuMemAlloc(a, 2 * maxRows * maxInner);
    JCudaDriver.cuMemAlloc(b, 2 * maxInner * maxColumns);
    JCudaDriver.cuMemAlloc(c, 2 * maxRows * maxColumns);
    short small = (short) 0x2E66; // about 0.1 in fp16: finite products whatever the inner size
    JCudaDriver.cuMemsetD16(a, small, maxRows * maxInner);
    JCudaDriver.cuMemsetD16(b, small, maxInner * maxColumns);
    JCudaDriver.cuCtxSynchronize();
    return new CudaMatrixMultiplier(h, a, b, c, maxRows, maxInner, maxColumns);
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
    JCublas2.cublasGemmEx(handle, cublasOperation.CUBLAS_OP_N, cublasOperation.CUBLAS_OP_N, rows, columns, inner, one, a, cudaDataType.CUDA_R_16F,
        rows, b, cudaDataType.CUDA_R_16F, inner, zero, c, cudaDataType.CUDA_R_16F, rows, cublasComputeType.CUBLAS_COMPUTE_32F,
        cublasGemmAlgo.CUBLAS_GEMM_DEFAULT);
    JCudaDriver.cuCtxSynchronize();
  }

  @Override
  public void close() {
    try {
      JCublas2.cublasDestroy(handle);
    } finally {
      JCudaDriver.cuMemFree(a);
      JCudaDriver.cuMemFree(b);
      JCudaDriver.cuMemFree(c);
    }
  }
}

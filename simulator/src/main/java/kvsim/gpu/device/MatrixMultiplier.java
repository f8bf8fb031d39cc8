package kvsim.gpu.device;

/**
 * Runs fp16 matrix products on a device, each finished when the call returns, so that a caller
 * times one with {@link System#nanoTime()} around it: the GEMM part of a GPU calibration (the
 * shapes of a serving engine's linear layers). One implementation runs cuBLAS ({@link
 * CudaDevices#openMatrixMultiplier}); tests use stand-ins.
 */
public interface MatrixMultiplier extends AutoCloseable {
  /** Multiplies a {@code rows × inner} matrix by an {@code inner × columns} one: {@code 2 · rows · inner · columns} floating-point operations. */
  void multiply(int rows, int inner, int columns);

  /** What runs the products, in words (a progress line names it), e.g. "cuBLAS 13.0.1 (libcublas.so.13)". */
  default String describe() {
    return getClass().getSimpleName();
  }

  @Override
  void close();
}

package kvsim.gpu.device;

import jcuda.CudaException;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.JCudaDriver;

/**
 * Opens a real GPU ({@link CudaDevice}) or says in one line why none can be used ({@link
 * GpuUnavailableException}; the GPU commands exit 3 with it). JCuda loads its native library, which
 * links the driver's {@code libcuda.so.1}, when its driver class is first used: here and nowhere
 * else in kvsim (Note [Why a GPU is missing]).
 *
 * <p>Note [Why a GPU is missing]: the three ways this fails on a machine without a usable GPU each
 * get their own line, since the fix differs: the driver library is not installed (JCuda's native
 * library cannot resolve {@code libcuda.so.1}: install the NVIDIA driver), the driver finds no
 * device ({@code CUDA_ERROR_NO_DEVICE}, or an initialisation error such as {@code
 * CUDA_ERROR_NO_DEVICE}'s kin from a container without the device files), or JCuda's own native
 * library cannot load at all (a platform JCuda ships no natives for, a missing natives jar).
 */
public final class CudaDevices {
  /**
   * The reason JCuda's native library would not load, kept: the JVM reports a class whose
   * initialisation failed only the first time, and later as a bare "Could not initialize class".
   */
  private static volatile String linkageReason;

  private CudaDevices() {}

  /**
   * Opens device {@code ordinal}: initialises the driver, creates a context on it (current on the
   * calling thread) and reads its description.
   *
   * @throws GpuUnavailableException when no GPU can be used here, with a one-line reason
   */
  public static GpuDevice open(int ordinal) {
    if (ordinal < 0) {
      throw new IllegalArgumentException("a device ordinal is >= 0, got " + ordinal);
    }
    if (linkageReason != null) {
      throw new GpuUnavailableException(linkageReason);
    }
    try {
      JCudaDriver.setExceptionsEnabled(true);
      JCudaDriver.cuInit(0);
      int[] count = new int[1];
      JCudaDriver.cuDeviceGetCount(count);
      if (count[0] == 0) {
        throw new GpuUnavailableException("no GPU here: the driver reports no CUDA device (CUDA_ERROR_NO_DEVICE)");
      }
      if (ordinal >= count[0]) {
        throw new GpuUnavailableException("no GPU " + ordinal + " here: the driver reports " + count[0] + " CUDA device" + (count[0] == 1 ? "" : "s")
            + " (ordinals 0 to " + (count[0] - 1) + ")");
      }
      CUdevice device = new CUdevice();
      JCudaDriver.cuDeviceGet(device, ordinal);
      CUcontext context = new CUcontext();
      JCudaDriver.cuCtxCreate(context, 0, device);
      try {
        return new CudaDevice(ordinal, device, context);
      } catch (RuntimeException e) {
        JCudaDriver.cuCtxDestroy(context);
        throw e;
      }
    } catch (LinkageError e) {
      linkageReason = reasonForLinkage(e);
      throw new GpuUnavailableException(linkageReason, e);
    } catch (CudaException e) {
      throw new GpuUnavailableException(reasonForDriver(e.getMessage()), e);
    }
  }

  /**
   * Opens cuBLAS on the device {@link #open} made current on this thread, with operands for
   * products up to {@code maxRows × maxInner} by {@code maxInner × maxColumns}.
   *
   * @throws GpuUnavailableException when cuBLAS cannot be used here, with a one-line reason
   */
  public static MatrixMultiplier openMatrixMultiplier(long maxRows, long maxInner, long maxColumns) {
    return CudaMatrixMultiplier.open(maxRows, maxInner, maxColumns);
  }

  /** The one-line reason for a native library that would not load (Note [Why a GPU is missing]). */
  static String reasonForLinkage(Throwable e) {
    String all = messages(e);
    if (all.contains("libcuda.so")) {
      return "no GPU here: libcuda.so.1 (the NVIDIA driver) is not installed";
    }
    String first = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return "JCuda's native library could not load: " + oneLine(first);
  }

  /** The one-line reason for a driver call that failed while opening a device (Note [Why a GPU is missing]). */
  static String reasonForDriver(String cudaError) {
    String code = cudaError == null ? "an unknown CUDA error" : oneLine(cudaError);
    if (code.contains("CUDA_ERROR_NO_DEVICE")) {
      return "no GPU here: the driver reports no CUDA device (CUDA_ERROR_NO_DEVICE)";
    }
    if (code.contains("CUDA_ERROR_INSUFFICIENT_DRIVER") || code.contains("CUDA_ERROR_COMPAT_NOT_SUPPORTED")) {
      return "the NVIDIA driver is older than CUDA " + bindingsVersion() + " needs (" + code + ")";
    }
    return "the GPU could not be opened: " + code;
  }

  /** Whether a driver call failed for want of device memory. */
  static boolean isOutOfMemory(CudaException e) {
    return e.getMessage() != null && e.getMessage().contains("CUDA_ERROR_OUT_OF_MEMORY");
  }

  /** A CUDA version number as the driver encodes it (1000 × major + 10 × minor) in words: 12060 → "12.6". */
  static String version(int encoded) {
    return encoded / 1000 + "." + (encoded % 1000) / 10;
  }

  /** The CUDA version JCuda was built for, major.minor ({@code jcuda.JCudaVersion}: "12.6.0" → "12.6"). */
  static String bindingsVersion() {
    String v = jcuda.JCudaVersion.get();
    String[] parts = v.split("\\.");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : v;
  }

  private static String messages(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      b.append(t.getMessage()).append('\n');
      for (Throwable s : t.getSuppressed()) {
        b.append(s.getMessage()).append('\n');
      }
    }
    return b.toString();
  }

  private static String oneLine(String s) {
    String line = s.strip().split("\\R", 2)[0];
    return line.length() > 300 ? line.substring(0, 300) + "…" : line;
  }
}

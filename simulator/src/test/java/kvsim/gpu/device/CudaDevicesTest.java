package kvsim.gpu.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import jcuda.CudaException;
import org.junit.jupiter.api.Test;

/**
 * {@link CudaDevices}: on a machine without the NVIDIA driver, opening a GPU fails with one line
 * that names what is missing, every time; the mapping of JCuda's failures to reasons and of
 * {@code CUDA_ERROR_OUT_OF_MEMORY} to a result, which needs no GPU.
 */
class CudaDevicesTest {
  /** Whether this machine has the driver library (then the no-GPU case cannot be checked here). */
  private static boolean hasDriver() {
    for (String dir : new String[] {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/local/nvidia/lib64", "/lib", "/usr/lib"}) {
      if (Files.exists(Path.of(dir, "libcuda.so.1"))) {
        return true;
      }
    }
    return false;
  }

  @Test
  void withoutTheDriverOpeningSaysSoInOneLineEveryTime() {
    assumeTrue(!hasDriver(), "this machine has libcuda.so.1");
    GpuUnavailableException first = assertThrows(GpuUnavailableException.class, () -> CudaDevices.open(0));
    assertEquals("no GPU here: libcuda.so.1 (the NVIDIA driver) is not installed", first.getMessage());
    // The JVM reports a failed class initialisation in full only once; the second answer is the same line.
    GpuUnavailableException second = assertThrows(GpuUnavailableException.class, () -> CudaDevices.open(1));
    assertEquals(first.getMessage(), second.getMessage());
    GpuUnavailableException gemm = assertThrows(GpuUnavailableException.class, () -> CudaDevices.openMatrixMultiplier(16, 16, 16));
    assertFalse(gemm.getMessage().contains("\n"), gemm.getMessage());
    assertTrue(gemm.getMessage().contains("cuBLAS"), gemm.getMessage());
  }

  @Test
  void aNegativeOrdinalIsAMistakeOfTheCaller() {
    assertThrows(IllegalArgumentException.class, () -> CudaDevices.open(-1));
  }

  @Test
  void linkageFailuresNameTheMissingLibrary() {
    UnsatisfiedLinkError driver = new UnsatisfiedLinkError("Error while loading native library \"JCudaDriver-12.6.0-linux-x86_64\"\n"
        + "Stack trace from the attempt to load the library as a resource:\n"
        + "java.lang.UnsatisfiedLinkError: /tmp/libJCudaDriver-12.6.0-linux-x86_64.so: libcuda.so.1: cannot open shared object file");
    assertEquals("no GPU here: libcuda.so.1 (the NVIDIA driver) is not installed", CudaDevices.reasonForLinkage(driver));
    NoClassDefFoundError later = new NoClassDefFoundError("Could not initialize class jcuda.driver.JCudaDriver");
    later.initCause(new ExceptionInInitializerError("Exception java.lang.UnsatisfiedLinkError: libcuda.so.1: cannot open shared object file"));
    assertEquals("no GPU here: libcuda.so.1 (the NVIDIA driver) is not installed", CudaDevices.reasonForLinkage(later));
    UnsatisfiedLinkError natives = new UnsatisfiedLinkError("Error while loading native library \"JCudaDriver-12.6.0-linux-aarch64\"\nOperating system name: Linux");
    assertEquals("JCuda's native library could not load: Error while loading native library \"JCudaDriver-12.6.0-linux-aarch64\"",
        CudaDevices.reasonForLinkage(natives));
    assertEquals("cuBLAS 12 is not installed: JCuda's cuBLAS binding needs libcublas.so.12 (CUDA 12's cuBLAS) on the library path",
        CudaMatrixMultiplier.reasonForLinkage(new UnsatisfiedLinkError("libJCublas2-12.6.0-linux-x86_64.so: libcublas.so.12: cannot open shared object file")));
  }

  @Test
  void driverFailuresWhileOpeningGetTheirOwnLines() {
    assertEquals("no GPU here: the driver reports no CUDA device (CUDA_ERROR_NO_DEVICE)", CudaDevices.reasonForDriver("CUDA_ERROR_NO_DEVICE"));
    assertTrue(CudaDevices.reasonForDriver("CUDA_ERROR_INSUFFICIENT_DRIVER").startsWith("the NVIDIA driver is older than CUDA 12.6 needs"),
        CudaDevices.reasonForDriver("CUDA_ERROR_INSUFFICIENT_DRIVER"));
    assertEquals("the GPU could not be opened: CUDA_ERROR_INVALID_DEVICE", CudaDevices.reasonForDriver("CUDA_ERROR_INVALID_DEVICE\nmore"));
  }

  @Test
  void outOfMemoryIsRecognisedAndNothingElseIs() {
    assertTrue(CudaDevices.isOutOfMemory(new CudaException("CUDA_ERROR_OUT_OF_MEMORY")));
    assertFalse(CudaDevices.isOutOfMemory(new CudaException("CUDA_ERROR_INVALID_VALUE")));
    assertFalse(CudaDevices.isOutOfMemory(new CudaException(null)));
  }

  @Test
  void versionsReadAsMajorDotMinor() {
    assertEquals("12.6", CudaDevices.version(12060));
    assertEquals("13.0", CudaDevices.version(13000));
    assertEquals("12.6", CudaDevices.bindingsVersion());
  }
}

package kvsim.gpu.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link CudaDevice} on a real GPU: every call of {@link GpuDevice} once, out of memory as a
 * result, and close with things still live. Skipped (with the reason) where no GPU can be used,
 * as on a build machine without the NVIDIA driver.
 */
class CudaDeviceOnGpuTest {
  private static GpuDevice openOrSkip() {
    try {
      return CudaDevices.open(0);
    } catch (GpuUnavailableException e) {
      assumeTrue(false, e.getMessage());
      throw e;
    }
  }

  @Test
  void cublasMultipliesOnTheOpenedDevice() {
    GpuDevice d = openOrSkip();
    try (d) {
      MatrixMultiplier m;
      try {
        m = CudaDevices.openMatrixMultiplier(256, 512, 64);
      } catch (GpuUnavailableException e) {
        assumeTrue(false, e.getMessage());
        throw e;
      }
      try (m) {
        m.multiply(256, 512, 64);
        m.multiply(1, 1, 1);
        assertTrue(m.describe().startsWith("cuBLAS"), m.describe());
        assertThrows(IllegalArgumentException.class, () -> m.multiply(257, 512, 64));
      }
    }
  }

  @Test
  void everyCallWorksOnce() throws DeviceOutOfMemoryException {
    GpuDevice d = openOrSkip();
    try {
      DeviceInfo info = d.info();
      assertTrue(info.totalBytes() > 0 && !info.name().isEmpty(), info.toString());
      long free = d.freeBytes();
      assertTrue(free > 0 && free <= info.totalBytes());
      long a = d.allocate(1 << 20);
      long b = d.allocate(1 << 20);
      assertNotEquals(0, a);
      d.copyHostToDevice(a, 1 << 20);
      d.copyDeviceToDevice(b, a, 1 << 20);
      d.copyDeviceToHost(b + 4096, 4096);
      d.synchronize();
      d.free(a);
      d.free(b);
      assertThrows(DeviceOutOfMemoryException.class, () -> d.allocate(1L << 44));
      long g = info.vmmGranularityBytes();
      assumeTrue(g > 0, "no virtual memory management");
      long va = d.reserve(4 * g);
      long h1 = d.createPhysical(g);
      long h2 = d.createPhysical(g);
      d.map(va, g, h1);
      d.map(va + g, g, h2);
      d.copyHostToDevice(va, 2 * g);
      d.copyDeviceToDevice(va + g, va, g);
      d.synchronize();
      d.unmap(va + g, g);
      d.releasePhysical(h2);
      assertThrows(DeviceOutOfMemoryException.class, () -> d.createPhysical((1L << 44) / g * g));
      // Left live for close: one mapping, its handle, the reservation and an allocation.
      d.allocate(g);
      assertEquals(info, d.info());
    } finally {
      d.close();
      d.close();
    }
  }
}

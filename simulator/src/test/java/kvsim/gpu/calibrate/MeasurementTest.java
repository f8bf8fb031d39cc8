package kvsim.gpu.calibrate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.Bytes;
import kvsim.gpu.device.DeviceInfo;
import kvsim.gpu.device.DeviceOutOfMemoryException;
import kvsim.gpu.device.GpuDevice;
import kvsim.gpu.device.GpuUnavailableException;
import kvsim.gpu.device.MatrixMultiplier;
import org.junit.jupiter.api.Test;

/**
 * {@link Measurement} on an in-memory stand-in for a GPU: what it measures, what it skips and
 * says why, and that it leaves nothing allocated, mapped or reserved.
 */
class MeasurementTest {
  /** A 12 GiB device with 2 MiB pages that keeps the books of what is live and checks each call against them. */
  static final class FakeDevice implements GpuDevice {
    final long totalBytes = 12 * Bytes.GiB;
    long usedBytes;
    long next = 1L << 40;
    final Map<Long, Long> allocations = new HashMap<>();
    final Map<Long, Long> physical = new HashMap<>();
    final Map<Long, Long> reserved = new HashMap<>();
    final Set<Long> mapped = new HashSet<>();
    final List<String> copies = new ArrayList<>();

    @Override
    public DeviceInfo info() {
      return new DeviceInfo("Fake H100", "13.0", "12.6", totalBytes, 2 * Bytes.MiB, "9.0");
    }

    @Override
    public long freeBytes() {
      return totalBytes - usedBytes;
    }

    @Override
    public long allocate(long sizeBytes) throws DeviceOutOfMemoryException {
      if (sizeBytes > freeBytes()) {
        throw new DeviceOutOfMemoryException(sizeBytes);
      }
      usedBytes += sizeBytes;
      long a = next;
      next += sizeBytes + 4096;
      allocations.put(a, sizeBytes);
      return a;
    }

    @Override
    public void free(long address) {
      Long size = allocations.remove(address);
      if (size == null) {
        throw new IllegalArgumentException("free of nothing at " + address);
      }
      usedBytes -= size;
    }

    @Override
    public long reserve(long sizeBytes) {
      long a = next;
      next += sizeBytes;
      reserved.put(a, sizeBytes);
      return a;
    }

    @Override
    public void release(long address, long sizeBytes) {
      if (!Long.valueOf(sizeBytes).equals(reserved.remove(address))) {
        throw new IllegalArgumentException("release of a range not reserved");
      }
      for (long m : mapped) {
        if (m >= address && m < address + sizeBytes) {
          throw new IllegalStateException("release with a page still mapped");
        }
      }
    }

    @Override
    public long createPhysical(long sizeBytes) throws DeviceOutOfMemoryException {
      if (sizeBytes % info().vmmGranularityBytes() != 0) {
        throw new IllegalArgumentException("not a multiple of the granularity");
      }
      if (sizeBytes > freeBytes()) {
        throw new DeviceOutOfMemoryException(sizeBytes);
      }
      usedBytes += sizeBytes;
      long h = next++;
      physical.put(h, sizeBytes);
      return h;
    }

    @Override
    public void releasePhysical(long handle) {
      usedBytes -= physical.remove(handle);
    }

    @Override
    public void map(long address, long sizeBytes, long handle) {
      if (!physical.containsKey(handle) || !mapped.add(address)) {
        throw new IllegalStateException("bad map");
      }
    }

    @Override
    public void unmap(long address, long sizeBytes) {
      if (!mapped.remove(address)) {
        throw new IllegalStateException("unmap of nothing");
      }
    }

    @Override
    public void copyDeviceToDevice(long target, long source, long sizeBytes) {
      copies.add("d2d " + sizeBytes);
    }

    @Override
    public void copyHostToDevice(long target, long sizeBytes) {
      copies.add("h2d " + sizeBytes);
    }

    @Override
    public void copyDeviceToHost(long source, long sizeBytes) {
      copies.add("d2h " + sizeBytes);
    }

    @Override
    public void synchronize() {}

    @Override
    public void close() {}
  }

  @Test
  void theQuickPlanMeasuresEveryKindAndLeavesNothingBehind() {
    FakeDevice d = new FakeDevice();
    List<String> products = new ArrayList<>();
    List<long[]> bounds = new ArrayList<>();
    List<String> progress = new ArrayList<>();
    Measurement m = new Measurement(d, b -> {
      bounds.add(b);
      return new MatrixMultiplier() {
        @Override
        public void multiply(int rows, int inner, int columns) {
          products.add(rows + "x" + inner + "x" + columns);
        }

        @Override
        public void close() {
          products.add("closed");
        }
      };
    }, progress::add);
    Measurement.Plan plan = Measurement.Plan.quick();
    Samples s = m.run(plan, "2026-11-26");
    // 512 B to 8 GiB by ×16: 512 B … 512 MiB fit in half of 12 GiB; 8 GiB does not and is said to be skipped.
    assertEquals(List.of(512L, 8192L, 131072L, 2097152L, 33554432L, 536870912L), s.of("alloc").stream().map(x -> x.get("size_bytes")).toList());
    assertEquals(s.of("alloc").size(), s.of("free").size());
    assertTrue(progress.get(0).contains("[8.00 GiB] skipped"), progress.toString());
    assertEquals(List.of(1L, 8L, 64L), s.of("map").stream().map(x -> x.get("pages")).toList());
    assertEquals(List.of(4096L, 65536L, 1048576L, 16777216L, 268435456L), s.of("copy_d2d").stream().map(x -> x.get("size_bytes")).toList());
    assertEquals(s.of("copy_d2d").size(), s.of("copy_h2d").size());
    assertEquals(s.of("copy_d2d").size(), s.of("copy_d2h").size());
    for (Samples.Series x : s.series()) {
      int reps = x.kind().equals("gemm") ? plan.gemmReps() : x.kind().startsWith("copy") ? plan.copyReps() : x.kind().endsWith("map") ? plan.pageReps()
          : plan.allocReps();
      assertEquals(reps, x.nanos().length, x.toString());
    }
    // llama-2-7b's three weight shapes at five token counts, each run once untimed first.
    assertEquals(15, s.of("gemm").size());
    assertEquals(15 * (1 + plan.gemmReps()) + 1, products.size());
    assertEquals("11008x4096x1", products.get(1 * (1 + plan.gemmReps()) * 5));
    assertEquals("closed", products.get(products.size() - 1));
    assertEquals(List.of(4096L, 11008L, 11008L), List.of(bounds.get(0)[0], bounds.get(0)[1], bounds.get(0)[2]));
    // Nothing is left on the device.
    assertEquals(0, d.usedBytes);
    assertTrue(d.allocations.isEmpty() && d.physical.isEmpty() && d.reserved.isEmpty() && d.mapped.isEmpty());
    assertEquals("Fake H100", s.device());
    assertEquals(2 * Bytes.MiB, s.granularityBytes());
  }

  @Test
  void withoutCublasTheGemmPartIsSkippedWithItsReason() {
    FakeDevice d = new FakeDevice();
    Measurement m = new Measurement(d, b -> {
      throw new GpuUnavailableException("cuBLAS 12 is not installed");
    }, line -> {});
    Samples s = m.run(Measurement.Plan.quick(), "2026-11-26");
    assertTrue(s.of("gemm").isEmpty());
    assertEquals(Map.of("gemm", "cuBLAS 12 is not installed"), s.skipped());
    assertTrue(!s.of("alloc").isEmpty());
  }

  @Test
  void theFullPlanSpansTheIssuesRanges() {
    Measurement.Plan p = Measurement.Plan.full();
    assertEquals(512L, p.allocSizesBytes().get(0));
    assertEquals(8 * Bytes.GiB, p.allocSizesBytes().get(p.allocSizesBytes().size() - 1));
    assertEquals(4096, p.gemmTokens().get(p.gemmTokens().size() - 1));
    assertTrue(p.gemmShapes().stream().anyMatch(x -> x[0] == 4096 && x[1] == 11008), "llama-2-7b's MLP");
    assertTrue(p.gemmShapes().stream().anyMatch(x -> x[0] == 8192 && x[1] == 28672), "llama-3-70b's MLP");
    assertEquals(p.gemmShapes().size(), p.gemmShapes().stream().map(x -> x[0] + "x" + x[1]).distinct().count(), "each shape once");
  }
}

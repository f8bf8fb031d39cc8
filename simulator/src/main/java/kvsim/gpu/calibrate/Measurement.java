package kvsim.gpu.calibrate;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.gpu.device.DeviceInfo;
import kvsim.gpu.device.DeviceOutOfMemoryException;
import kvsim.gpu.device.GpuDevice;
import kvsim.gpu.device.GpuUnavailableException;
import kvsim.gpu.device.MatrixMultiplier;

/**
 * Takes a GPU calibration's raw samples on a device ({@link Samples}): what each kind times is on
 * {@link Samples.Series}; the sizes, counts, shapes and repetitions are a {@link Plan}. Every
 * shape is run once untimed first (the driver's and cuBLAS's first-call work is not a cost a
 * serving engine pays per call), then timed with {@link System#nanoTime()} around each call; the
 * device's calls are synchronous ({@link GpuDevice}).
 */
public final class Measurement {
  /**
   * What to measure.
   *
   * @param allocSizesBytes allocation sizes (a size that does not fit in half the free memory is skipped)
   * @param allocReps repetitions per allocation size
   * @param pageCounts page counts of the create+map and unmap+release series
   * @param pageReps repetitions per page count
   * @param copySizesBytes copy sizes (each direction)
   * @param copyReps repetitions per copy size
   * @param gemmShapes (inner, outer) weight shapes
   * @param gemmTokens token counts per shape
   * @param gemmReps repetitions per GEMM
   */
  public record Plan(List<Long> allocSizesBytes, int allocReps, List<Integer> pageCounts, int pageReps, List<Long> copySizesBytes, int copyReps,
      List<long[]> gemmShapes, List<Integer> gemmTokens, int gemmReps) {

    /** The default: log-spaced allocations from 512 B to 8 GiB (×4), pages 1 to 256, copies 4 KiB to 1 GiB, every model preset's linear shapes at 1 to 4096 tokens. */
    public static Plan full() {
      return new Plan(geometric(512, 8 * Bytes.GiB, 4), 50, List.of(1, 2, 4, 8, 16, 32, 64, 128, 256), 20, geometric(4 * Bytes.KiB, Bytes.GiB, 4), 20,
          presetShapes(ModelPreset.presets().values()), List.of(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096), 20);
    }

    /** A run of a few seconds: fewer sizes (×16 apart), counts, shapes (llama-2-7b's) and repetitions. */
    public static Plan quick() {
      return new Plan(geometric(512, 8 * Bytes.GiB, 16), 5, List.of(1, 8, 64), 5, geometric(4 * Bytes.KiB, Bytes.GiB, 16), 5,
          presetShapes(List.of(ModelPreset.presets().get("llama-2-7b"))), List.of(1, 16, 256, 1024, 4096), 3);
    }

    /** The linear layers' (inner, outer) weight shapes of some model presets: attention's projections, the MLP's up and down, in order, once each. */
    static List<long[]> presetShapes(java.util.Collection<ModelPreset> models) {
      LinkedHashSet<List<Long>> shapes = new LinkedHashSet<>();
      for (ModelPreset m : models) {
        shapes.add(List.of((long) m.hiddenSize(), (long) m.hiddenSize()));
        shapes.add(List.of((long) m.hiddenSize(), (long) m.intermediateSize()));
        shapes.add(List.of((long) m.intermediateSize(), (long) m.hiddenSize()));
      }
      return shapes.stream().map(s -> new long[] {s.get(0), s.get(1)}).toList();
    }

    static List<Long> geometric(long from, long to, long factor) {
      List<Long> out = new ArrayList<>();
      for (long s = from; s <= to; s *= factor) {
        out.add(s);
      }
      return out;
    }
  }

  private final GpuDevice device;
  private final java.util.function.Function<long[], MatrixMultiplier> gemmOpener;
  private final Consumer<String> progress;

  /**
   * @param device the device measured
   * @param gemm opens the matrix multiplier for the bounds {@link #gemmBounds} gives; may throw {@link GpuUnavailableException}, then GEMM is skipped with its reason
   * @param progress receives one line per finished part
   */
  public Measurement(GpuDevice device, java.util.function.Function<long[], MatrixMultiplier> gemm, Consumer<String> progress) {
    this.device = device;
    this.gemmOpener = gemm;
    this.progress = progress;
  }

  /** The largest rows, inner and columns a plan's products need: {@code {tokens, inner, outer}} maxima. */
  public static long[] gemmBounds(Plan plan) {
    long tokens = plan.gemmTokens().stream().mapToLong(Integer::longValue).max().orElse(1);
    long inner = plan.gemmShapes().stream().mapToLong(s -> s[0]).max().orElse(1);
    long outer = plan.gemmShapes().stream().mapToLong(s -> s[1]).max().orElse(1);
    return new long[] {tokens, inner, outer};
  }

  /** Measures the plan; {@code date} is the day recorded. */
  public Samples run(Plan plan, String date) {
    DeviceInfo info = device.info();
    List<Samples.Series> series = new ArrayList<>();
    Map<String, String> skipped = new LinkedHashMap<>();
    allocations(plan, series, skipped);
    pages(plan, info.vmmGranularityBytes(), series, skipped);
    copies(plan, series, skipped);
    gemms(plan, series, skipped);
    return new Samples(info.name(), info.driverVersion(), info.cudaVersion(), date, info.vmmGranularityBytes(), info.totalBytes(), series, skipped);
  }

  private void allocations(Plan plan, List<Samples.Series> series, Map<String, String> skipped) {
    List<Long> skippedSizes = new ArrayList<>();
    for (long size : plan.allocSizesBytes()) {
      if (size > device.freeBytes() / 2) {
        skippedSizes.add(size);
        continue;
      }
      long[] alloc = new long[plan.allocReps()];
      long[] free = new long[plan.allocReps()];
      try {
        device.free(device.allocate(size));
        for (int r = 0; r < plan.allocReps(); r++) {
          long t0 = System.nanoTime();
          long a = device.allocate(size);
          long t1 = System.nanoTime();
          device.free(a);
          long t2 = System.nanoTime();
          alloc[r] = t1 - t0;
          free[r] = t2 - t1;
        }
      } catch (DeviceOutOfMemoryException e) {
        skippedSizes.add(size);
        continue;
      }
      series.add(new Samples.Series("alloc", Map.of("size_bytes", size), alloc));
      series.add(new Samples.Series("free", Map.of("size_bytes", size), free));
    }
    if (!skippedSizes.isEmpty()) {
      progress.accept("allocations: sizes " + skippedSizes.stream().map(Bytes::format).toList() + " skipped: they do not fit in half the free memory");
    }
    progress.accept("allocations: " + series.stream().filter(s -> s.kind().equals("alloc")).count() + " sizes");
  }

  private void pages(Plan plan, long granularityBytes, List<Samples.Series> series, Map<String, String> skipped) {
    if (granularityBytes <= 0) {
      skipped.put("map", "the device has no virtual memory management");
      skipped.put("unmap", "the device has no virtual memory management");
      progress.accept("pages: skipped (no virtual memory management)");
      return;
    }
    try {
      pageSeries(plan, granularityBytes, series);
    } catch (GpuUnavailableException e) {
      // Page mapping cannot be done here (DriverVmm: an older Java); the other measurements go on.
      skipped.put("map", e.getMessage());
      skipped.put("unmap", e.getMessage());
      progress.accept("pages: skipped (" + e.getMessage() + ")");
      return;
    }
    progress.accept("pages: " + series.stream().filter(s -> s.kind().equals("map")).count() + " page counts of " + Bytes.format(granularityBytes));
  }

  private void pageSeries(Plan plan, long granularityBytes, List<Samples.Series> series) {
    for (int pages : plan.pageCounts()) {
      long bytes = pages * granularityBytes;
      if (bytes > device.freeBytes() / 2) {
        continue;
      }
      long address = device.reserve(bytes);
      long[] map = new long[plan.pageReps()];
      long[] unmap = new long[plan.pageReps()];
      long[] handles = new long[pages];
      try {
        for (int r = -1; r < plan.pageReps(); r++) {
          long t0 = System.nanoTime();
          for (int p = 0; p < pages; p++) {
            handles[p] = device.createPhysical(granularityBytes);
            device.map(address + p * granularityBytes, granularityBytes, handles[p]);
          }
          long t1 = System.nanoTime();
          for (int p = 0; p < pages; p++) {
            device.unmap(address + p * granularityBytes, granularityBytes);
            device.releasePhysical(handles[p]);
          }
          long t2 = System.nanoTime();
          if (r >= 0) {
            map[r] = t1 - t0;
            unmap[r] = t2 - t1;
          }
        }
      } catch (DeviceOutOfMemoryException e) {
        throw new IllegalStateException("the device ran out of memory mapping " + pages + " pages although " + device.freeBytes() + " bytes are free", e);
      } finally {
        device.release(address, bytes);
      }
      series.add(new Samples.Series("map", Map.of("pages", (long) pages, "page_bytes", granularityBytes), map));
      series.add(new Samples.Series("unmap", Map.of("pages", (long) pages, "page_bytes", granularityBytes), unmap));
    }
  }

  private void copies(Plan plan, List<Samples.Series> series, Map<String, String> skipped) {
    long max = plan.copySizesBytes().stream().mapToLong(Long::longValue).max().orElse(0);
    while (max > 0 && 2 * max > device.freeBytes() / 2) {
      max /= 2;
    }
    if (max == 0) {
      return;
    }
    long a;
    long b;
    try {
      a = device.allocate(max);
      b = device.allocate(max);
    } catch (DeviceOutOfMemoryException e) {
      throw new IllegalStateException("the device could not hold two copy buffers of " + Bytes.format(max), e);
    }
    try {
      for (long size : plan.copySizesBytes()) {
        if (size > max) {
          continue;
        }
        series.add(copySeries("copy_d2d", size, plan.copyReps(), () -> device.copyDeviceToDevice(b, a, size)));
        series.add(copySeries("copy_h2d", size, plan.copyReps(), () -> device.copyHostToDevice(a, size)));
        series.add(copySeries("copy_d2h", size, plan.copyReps(), () -> device.copyDeviceToHost(a, size)));
      }
    } finally {
      device.free(a);
      device.free(b);
    }
    progress.accept("copies: " + series.stream().filter(s -> s.kind().equals("copy_d2d")).count() + " sizes, three directions");
  }

  private Samples.Series copySeries(String kind, long size, int reps, Runnable copy) {
    copy.run();
    device.synchronize();
    long[] nanos = new long[reps];
    for (int r = 0; r < reps; r++) {
      long t0 = System.nanoTime();
      copy.run();
      device.synchronize();
      nanos[r] = System.nanoTime() - t0;
    }
    return new Samples.Series(kind, Map.of("size_bytes", size), nanos);
  }

  private void gemms(Plan plan, List<Samples.Series> series, Map<String, String> skipped) {
    if (plan.gemmShapes().isEmpty()) {
      return;
    }
    MatrixMultiplier m;
    try {
      m = gemmOpener.apply(gemmBounds(plan));
    } catch (GpuUnavailableException e) {
      skipped.put("gemm", e.getMessage());
      progress.accept("gemm: skipped: " + e.getMessage());
      return;
    }
    String what = m.describe();
    try (m) {
      for (long[] shape : plan.gemmShapes()) {
        for (int tokens : plan.gemmTokens()) {
          int inner = (int) shape[0];
          int outer = (int) shape[1];
          // rows = outer features, columns = tokens: the weight times the activations (README, "GPU validation").
          m.multiply(outer, inner, tokens);
          long[] nanos = new long[plan.gemmReps()];
          for (int r = 0; r < plan.gemmReps(); r++) {
            long t0 = System.nanoTime();
            m.multiply(outer, inner, tokens);
            nanos[r] = System.nanoTime() - t0;
          }
          series.add(new Samples.Series("gemm", Map.of("tokens", (long) tokens, "inner", (long) inner, "outer", (long) outer), nanos));
        }
      }
    }
    progress.accept("gemm: " + plan.gemmShapes().size() + " shapes × " + plan.gemmTokens().size() + " token counts on " + what);
  }
}

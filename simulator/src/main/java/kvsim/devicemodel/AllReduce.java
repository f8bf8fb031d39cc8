package kvsim.devicemodel;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import kvsim.core.InputException;

/**
 * The time of one all-reduce among the GPUs of a node, by GPU count and bytes (README, "Several
 * GPUs"): from kvsim's built-in tables of measured all-reduce times on an 8×A100 and an 8×H100 DGX
 * node (Note [Built-in all-reduce tables]) where the device's GPU was measured, and from a ring
 * all-reduce over NVLink otherwise (Note [Roofline all-reduce]).
 *
 * <p>Note [Built-in all-reduce tables]: Vidur (microsoft/vidur commit 7d47513, {@code
 * data/profiling/network/{a100_dgx,h100_dgx}/all_reduce.csv}, MIT licence, Copyright (c) Microsoft
 * Corporation) measured NCCL all-reduces of fp16 tensors with PyTorch on one DGX node. Its {@code
 * size} column is in bytes: the profiler ({@code vidur/profiling/collectives/collectives_wrapper.py}
 * at commit e26eb8f, {@code "size": self._size * 2,  # bytes}) records the element count of its fp16
 * buffer ({@code collectives_impl.py}, {@code torch.empty(size=(size,), dtype=torch.float16)})
 * times two; the largest size, 67,108,864, is its default {@code max_collective_size} of 4096 × 8192
 * elements, times two. Times are milliseconds, the median over the NCCL kernels of a run. kvsim keeps
 * the rows of one node ({@code num_workers == devices_per_node}: 2, 4 and 8 GPUs; the A100 file also
 * holds two- to four-node rows, unused) and reduces each GPU count's 993 sizes (2 KiB to 64 MiB in
 * steps of 8 KiB) by {@link #reduce}: at 2,048 bytes the median time of every row below 32 KiB (the
 * small sizes are latency and their single rows are noisy: 10 to 46 µs between neighbours on the
 * A100 pair), then at every half octave from 32 KiB to 64 MiB (32 KiB, 48 KiB, 64 KiB, …) the median
 * of the rows within an octave around it (size / √2 to size × √2), in whole nanoseconds. A time
 * between two points is interpolated linearly in log size and log time; below 2 KiB it is the
 * smallest size's time, above 64 MiB the largest's scaled by the bytes (bandwidth-bound). The
 * tables are {@code src/main/resources/kvsim/devicemodel/profiles/all-reduce-<node>.csv}, which
 * {@link #reduce} writes from the CSV byte for byte; {@code AllReduceTest} checks them against the
 * shared CSV where it is present. The A100 node's table serves both A100 presets (a DGX A100 holds
 * 40 GB or 80 GB A100 SXM parts with the same NVLink 3), the H100 node's {@code h100-80}.
 *
 * <p>Note [Roofline all-reduce]: where no node was measured (the A40, the H200, a device given by
 * its size, or a GPU count other than 2, 4 and 8), a ring all-reduce: 2 (N − 1) / N × bytes at one
 * GPU's link bandwidth per direction, plus a latency. The links: NVLink 3 on the A100, 600 GB/s in
 * both directions, 300 GB/s each way (NVIDIA A100 data sheet); NVLink 4 on the H100 and H200, 900
 * GB/s, 450 each way (H100 and H200 data sheets; a bare size keeps the H100's figures, as it keeps
 * its bandwidths); the A40's NVLink bridge joins two cards, 112.5 GB/s in both directions, 56.25
 * each way (A40 data sheet), and more than two A40s reduce over PCIe, the preset's host-link
 * bandwidth. The latency is the measured A100 node's time at 2 KiB for the same GPU count (for 3,
 * 5, 6 or 7 GPUs, the next measured count above). The measured tables reach less than these peaks:
 * on the A100 node 64 MiB among 8 GPUs take 0.62 ms in the table (0.675 ms in the single 64 MiB
 * row) where the ring at 300 GB/s takes 0.39 ms plus 28.5 µs of latency, so the roofline is
 * optimistic.
 */
public final class AllReduce {
  /** The built-in tables' nodes, by the GPU their measurements serve. */
  private static final Map<String, String> NODES = Map.of("a100", "a100_dgx", "h100", "h100_dgx");
  /** The smallest and largest measured sizes, bytes. */
  static final long SMALLEST_BYTES = 2048;
  static final long FLOOR_BELOW_BYTES = 32768;
  static final long LARGEST_BYTES = 67_108_864;

  private AllReduce() {}

  /**
   * A reduced table of one node: per GPU count, the sizes and the times.
   *
   * @param node the node's name in the source ({@code a100_dgx})
   * @param times per GPU count, size in bytes to nanoseconds, ascending
   */
  public record Table(String node, Map<Integer, TreeMap<Long, Long>> times) {
    /** Returns the interpolated time of an all-reduce of {@code bytes} among {@code gpus} GPUs, or -1 where the count was not measured. */
    public double nanos(int gpus, double bytes) {
      TreeMap<Long, Long> t = times.get(gpus);
      if (t == null) {
        return -1;
      }
      if (bytes <= t.firstKey()) {
        return t.firstEntry().getValue();
      }
      if (bytes >= t.lastKey()) {
        return t.lastEntry().getValue() * (bytes / t.lastKey());
      }
      Map.Entry<Long, Long> lo = t.floorEntry((long) Math.floor(bytes));
      Map.Entry<Long, Long> hi = t.higherEntry(lo.getKey());
      double f = Math.log(bytes / lo.getKey()) / Math.log((double) hi.getKey() / lo.getKey());
      return Math.exp(Math.log(lo.getValue()) + f * (Math.log(hi.getValue()) - Math.log(lo.getValue())));
    }
  }

  private static final class BuiltIn {
    static final Map<String, Table> TABLES = load();

    private static Map<String, Table> load() {
      Map<String, Table> m = new LinkedHashMap<>();
      for (String node : List.of("a100_dgx", "h100_dgx")) {
        String path = "profiles/all-reduce-" + node + ".csv";
        try (InputStream in = AllReduce.class.getResourceAsStream(path)) {
          if (in == null) {
            throw new IllegalStateException("built-in all-reduce table " + path + " is missing from the jar");
          }
          m.put(node, read(new String(in.readAllBytes(), StandardCharsets.UTF_8), node));
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
      return m;
    }
  }

  /** Returns the built-in table of {@code node} ({@code a100_dgx}, {@code h100_dgx}). */
  public static Table builtIn(String node) {
    return BuiltIn.TABLES.get(node);
  }

  /** Returns the built-in table that times all-reduces on {@code gpu}, or null where its GPU has none (Note [Built-in all-reduce tables]). */
  static Table tableOf(DeviceSpec gpu) {
    String g = CostModels.gpu(gpu);
    if (g == null || !gpu.equals(DeviceSpec.presets().get(gpu.name())) || !NODES.containsKey(g)) {
      return null;
    }
    return BuiltIn.TABLES.get(NODES.get(g));
  }

  /** Returns the time of one all-reduce of {@code bytes} among {@code gpus} GPUs of {@code gpu}'s kind, in (fractional) nanoseconds; 0 for one GPU. */
  public static double nanos(DeviceSpec gpu, int gpus, double bytes) {
    if (gpus <= 1) {
      return 0;
    }
    Table t = tableOf(gpu);
    double measured = t == null ? -1 : t.nanos(gpus, bytes);
    return measured >= 0 ? measured : ringNanos(gpu, gpus, bytes);
  }

  /** Returns the ring all-reduce's time (Note [Roofline all-reduce]), in nanoseconds. */
  public static double ringNanos(DeviceSpec gpu, int gpus, double bytes) {
    return 2.0 * (gpus - 1) / gpus * bytes / linkBytesPerSecond(gpu, gpus) * 1e9 + latencyNanos(gpus);
  }

  /** Returns one GPU's link bandwidth each way among {@code gpus} GPUs (Note [Roofline all-reduce]). */
  public static double linkBytesPerSecond(DeviceSpec gpu, int gpus) {
    String g = CostModels.gpu(gpu);
    if ("a100".equals(g)) {
      return 300e9;
    }
    if ("a40".equals(g)) {
      return gpus == 2 ? 56.25e9 : gpu.hostLinkBytesPerSecond();
    }
    return 450e9;
  }

  /** Returns the ring's latency: the measured A100 node's 2 KiB time at the next measured count (Note [Roofline all-reduce]). */
  static double latencyNanos(int gpus) {
    Table a100 = BuiltIn.TABLES.get("a100_dgx");
    for (int n : List.of(2, 4, 8)) {
      if (n >= gpus) {
        return a100.nanos(n, SMALLEST_BYTES);
      }
    }
    return a100.nanos(8, SMALLEST_BYTES);
  }

  /** Returns how a summary names what times the all-reduces of {@code gpus} GPUs of {@code gpu}'s kind. */
  public static String describe(DeviceSpec gpu, int gpus) {
    Table t = tableOf(gpu);
    if (t != null && t.times().containsKey(gpus)) {
      return "measured: built-in " + t.node() + " all-reduce table (Vidur profile, microsoft/vidur 7d47513 data/profiling/network/" + t.node() + "/all_reduce.csv)";
    }
    return String.format(Locale.ROOT, "ring roofline: 2(N-1)/N x bytes at %.2f GB/s each way + %.1f us", linkBytesPerSecond(gpu, gpus) / 1e9, latencyNanos(gpus) / 1e3);
  }

  /** Reads a built-in table's text ({@code gpus,size_bytes,median_ns} rows after {@code #} comments). */
  static Table read(String text, String node) {
    Map<Integer, TreeMap<Long, Long>> m = new TreeMap<>();
    boolean header = false;
    for (String line : text.split("\n")) {
      if (line.startsWith("#") || line.isBlank()) {
        continue;
      }
      if (!header) {
        header = true;
        continue;
      }
      String[] f = line.split(",");
      m.computeIfAbsent(Integer.parseInt(f[0]), k -> new TreeMap<>()).put(Long.parseLong(f[1]), Long.parseLong(f[2]));
    }
    return new Table(node, m);
  }

  /**
   * Reduces a Vidur {@code all_reduce.csv} of node {@code node} to the built-in table's text (Note
   * [Built-in all-reduce tables]); a file that lacks a column or holds a field that is not a number
   * is an InputException naming the file and line.
   */
  public static String reduce(Path csv, String node) throws IOException {
    Map<Integer, List<double[]>> rows = new TreeMap<>();
    int other = 0;
    try (BufferedReader in = Files.newBufferedReader(csv, StandardCharsets.UTF_8)) {
      String head = in.readLine();
      if (head == null) {
        throw new InputException(csv + ": empty all-reduce profile");
      }
      List<String> cols = Arrays.asList(head.split(",", -1));
      int time = column(cols, "time_stats.all_reduce.median", csv);
      int workers = column(cols, "num_workers", csv);
      int perNode = column(cols, "devices_per_node", csv);
      int size = column(cols, "size", csv);
      String line;
      long number = 1;
      while ((line = in.readLine()) != null) {
        number++;
        if (line.isBlank()) {
          continue;
        }
        String[] f = line.split(",", -1);
        try {
          int n = Integer.parseInt(f[workers]);
          if (n != Integer.parseInt(f[perNode])) {
            other++;
            continue;
          }
          rows.computeIfAbsent(n, k -> new ArrayList<>()).add(new double[] {Long.parseLong(f[size]), Double.parseDouble(f[time])});
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
          throw new InputException(csv + ":" + number + ": a field of num_workers, devices_per_node, size or time_stats.all_reduce.median is missing or not a number");
        }
      }
    }
    StringBuilder b = new StringBuilder();
    b.append("# kvsim built-in all-reduce table (kvsim's own reduction of a published measurement; README, \"Several GPUs\").\n");
    b.append("# Measured by the Vidur project: microsoft/vidur commit 7d47513, data/profiling/network/").append(node).append("/all_reduce.csv,\n");
    b.append("# MIT licence, Copyright (c) Microsoft Corporation. Reduction (Note [Built-in all-reduce tables] in AllReduce.java): rows of one\n");
    b.append("# node (num_workers == devices_per_node); size is bytes; at 2048 B the median of the rows below 32 KiB, then every half\n");
    b.append("# octave from 32 KiB to 64 MiB the median of the rows within an octave around it; milliseconds to whole nanoseconds.\n");
    b.append("# Rows of several nodes (not used): ").append(other).append(".\n");
    b.append("# node: ").append(node).append('\n');
    b.append("gpus,size_bytes,median_ns\n");
    for (Map.Entry<Integer, List<double[]>> e : rows.entrySet()) {
      List<double[]> r = e.getValue();
      b.append(e.getKey()).append(',').append(SMALLEST_BYTES).append(',').append(medianNanos(r, 0, FLOOR_BELOW_BYTES)).append('\n');
      for (long g : gridBytes()) {
        b.append(e.getKey()).append(',').append(g).append(',').append(medianNanos(r, g / Math.sqrt(2), g * Math.sqrt(2) + 1e-9)).append('\n');
      }
    }
    return b.toString();
  }

  /** The half-octave points from 32 KiB to 64 MiB. */
  static List<Long> gridBytes() {
    List<Long> g = new ArrayList<>();
    for (long p = FLOOR_BELOW_BYTES; p <= LARGEST_BYTES; p *= 2) {
      g.add(p);
      if (p * 3 / 2 < LARGEST_BYTES) {
        g.add(p * 3 / 2);
      }
    }
    return g;
  }

  private static long medianNanos(List<double[]> rows, double fromBytes, double belowBytes) {
    double[] t = rows.stream().filter(r -> r[0] >= fromBytes && r[0] < belowBytes).mapToDouble(r -> r[1]).sorted().toArray();
    if (t.length == 0) {
      throw new InputException("all-reduce profile: no rows between " + (long) fromBytes + " and " + (long) belowBytes + " bytes");
    }
    double median = t.length % 2 == 1 ? t[t.length / 2] : (t[t.length / 2 - 1] + t[t.length / 2]) / 2;
    return Math.round(median * 1e6);
  }

  private static int column(List<String> cols, String name, Path csv) {
    int i = cols.indexOf(name);
    if (i < 0) {
      throw new InputException(csv + ":1: no column " + name);
    }
    return i;
  }
}

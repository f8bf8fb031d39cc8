package kvsim.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.gpu.device.CudaDevices;
import kvsim.gpu.device.DeviceInfo;
import kvsim.gpu.device.GpuDevice;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code kvsim gpu info [--gpu N] [--json]}: what a GPU says of itself ({@link DeviceInfo}) and its free memory now (README, "GPU validation"). */
@Command(
    name = "info",
    mixinStandardHelpOptions = true,
    description = "Print the GPU's name, driver and CUDA versions, memory, VMM granularity and compute capability (exit status 3 where no GPU can be used).")
final class GpuInfoCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(names = "--gpu", paramLabel = "N", defaultValue = "0", description = "The device's ordinal (default: ${DEFAULT-VALUE}).")
  int ordinal;

  @Option(names = "--json", description = "Print one JSON object instead of text.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    if (ordinal < 0) {
      throw new InputException("--gpu: a device ordinal is 0 or more, got " + ordinal);
    }
    PrintWriter out = spec.commandLine().getOut();
    try (GpuDevice device = CudaDevices.open(ordinal)) {
      DeviceInfo i = device.info();
      long free = device.freeBytes();
      if (json) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("gpu", ordinal);
        m.put("device", i.name());
        m.put("driver", i.driverVersion());
        m.put("cuda", i.cudaVersion());
        m.put("compute_capability", i.computeCapability());
        m.put("total_bytes", i.totalBytes());
        m.put("free_bytes", free);
        m.put("vmm_granularity_bytes", i.vmmGranularityBytes());
        out.println(new ObjectMapper().writeValueAsString(m));
      } else {
        out.printf("device: %s (GPU %d, compute capability %s)%n", i.name(), ordinal, i.computeCapability());
        out.printf("driver: supports CUDA %s%n", i.driverVersion());
        out.printf("cuda: %s (the version kvsim's JCuda bindings were built for)%n", i.cudaVersion());
        out.printf("memory: %s total, %s free%n", Bytes.format(i.totalBytes()), Bytes.format(free));
        out.printf("vmm granularity: %s%n", i.vmmGranularityBytes() == 0 ? "none (no virtual memory management)" : Bytes.format(i.vmmGranularityBytes()));
      }
    }
    out.flush();
    return KvSim.EXIT_OK;
  }
}

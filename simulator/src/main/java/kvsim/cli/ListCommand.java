package kvsim.cli;

import java.io.PrintWriter;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.serving.ServingSystems;
import kvsim.workload.LengthPreset;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code kvsim list}: the registered allocators with their capabilities, generators, devices and models. */
@Command(
    name = "list",
    mixinStandardHelpOptions = true,
    description = "List allocators, workload generators, device presets and model presets.")
final class ListCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    PrintWriter out = spec.commandLine().getOut();
    out.println("Allocators (name, capabilities, description):");
    int width = AllocatorRegistry.entries().stream().mapToInt(e -> e.capabilityLabels().length()).max().orElse(0);
    for (AllocatorRegistry.Entry e : AllocatorRegistry.entries()) {
      out.printf("  %-16s %-" + width + "s %s%n", e.name(), e.capabilityLabels(), e.description());
    }
    out.println();
    out.println("Workload generators (replay/compare WORKLOAD as NAME:key=value,...; kvsim generate NAME):");
    for (WorkloadRegistry.Generator g : WorkloadRegistry.generators().values()) {
      out.printf("  %-16s %s%n", g.name(), g.description());
    }
    out.println();
    out.println("Request generators (serving-level workloads; kvsim generate NAME):");
    for (WorkloadRegistry.Generator g : WorkloadRegistry.requestGenerators().values()) {
      out.printf("  %-16s %s%n", g.name(), g.description());
    }
    out.println();
    out.println("Request log importers (serving-level workloads NAME:PATH[,key=value,...]; kvsim import NAME FILE -o TRACE):");
    for (WorkloadRegistry.Generator g : WorkloadRegistry.requestImporters().values()) {
      out.printf("  %-16s %s%n", g.name(), g.description());
    }
    out.println();
    out.println("Length presets of the kv and requests generators (preset=NAME):");
    for (LengthPreset p : LengthPreset.presets().values()) {
      out.printf(
          java.util.Locale.ROOT,
          "  %-16s %s; default rate %.2f req/s, prompt cap %d, output cap %d tokens%s%n",
          p.name(),
          p.description(),
          p.meanRatePerSecond(),
          p.input().cap(),
          p.output().cap(),
          p.caps() == LengthPreset.Caps.DROP ? ", prompt + output cap " + p.maxTotalTokens() + " (a request outside is drawn again)" : "");
    }
    out.println();
    out.println("Device presets (--device NAME, or a size such as 80GiB or 40GB):");
    for (Map.Entry<String, DeviceSpec> e : DeviceSpec.presets().entrySet()) {
      DeviceSpec d = e.getValue();
      out.printf(
          java.util.Locale.ROOT,
          "  %-16s %s HBM, %.2f TB/s, host link %.0f GB/s, %.0f TFLOP/s%n",
          e.getKey(),
          Bytes.format(d.capacityBytes()),
          d.hbmBytesPerSecond() / 1e12,
          d.hostLinkBytesPerSecond() / 1e9,
          d.peakFlops() / 1e12);
    }
    out.println("  Multi-GPU presets (tensor parallelism on one node; README, \"Several GPUs\"): 2x, 4x and 8x of each, e.g. "
        + String.join(", ", kvsim.devicemodel.DeviceGroup.presets().keySet().stream().filter(n -> n.matches("(2xh100-80|4xh100-80|8xh100-80|4xa100-40|8xa100-80)")).toList())
        + "; --tensor-parallel N splits the model over N of a single preset");
    out.println();
    out.println("Built-in GPU profile tables (kvsim serving --cost-model profile; README, \"Cost models\"):");
    for (Map.Entry<String, String> e : kvsim.devicemodel.CostModels.listing().entrySet()) {
      out.printf("  %-26s %s%n", e.getKey(), e.getValue());
    }
    out.println();
    out.println("Model presets (--model NAME):");
    for (ModelPreset m : ModelPreset.presets().values()) {
      out.printf(
          java.util.Locale.ROOT,
          "  %-16s %d layers, %d KV heads x %d, %s KV per token, %.1fB parameters, context %d tokens%n",
          m.name(),
          m.layers(),
          m.kvHeads(),
          m.headDim(),
          Bytes.format(m.kvBytesPerToken()),
          m.parameters() / 1e9,
          m.maxModelLen());
    }
    out.println();
    out.println("Serving systems (kvsim serving --system NAME):");
    for (ServingSystems.System sys : ServingSystems.systems()) {
      out.printf("  %-16s %s%n", sys.name(), sys.description());
    }
    out.println("  vLLM v1's scheduler (vllm, vattention) and block manager (vllm) follow " + kvsim.serving.VllmV1Scheduler.UPSTREAM
        + ", with its full-prompt admission gate and asynchronous scheduling on by default");
    out.flush();
  }
}

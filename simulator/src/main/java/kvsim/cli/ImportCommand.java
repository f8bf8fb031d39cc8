package kvsim.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import kvsim.core.AtomicFiles;
import kvsim.torch.SnapshotImporter;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim import …}: turns foreign recordings into kvsim L1 traces. */
@Command(
    name = "import",
    mixinStandardHelpOptions = true,
    description = "Convert recordings of other tools into kvsim L1 traces.",
    subcommands = {ImportCommand.TorchSnapshotImport.class})
final class ImportCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    err.println("kvsim: error: missing what to import (torch-snapshot)");
    spec.commandLine().usage(err);
    err.flush();
    return KvSim.EXIT_BAD_INPUT;
  }

  /** {@code kvsim import torch-snapshot FILE -o trace.jsonl}. */
  @Command(
      name = "torch-snapshot",
      mixinStandardHelpOptions = true,
      description = {
        "Turn the device_traces of a PyTorch _dump_snapshot pickle into a kvsim L1 trace: alloc and free_completed become alloc/free events (requested size, stream, recorded address in addr, tag temp, not splittable); blocks live when recording began are allocated first; segment events and OOMs are kept as annotate events."
      })
  static final class TorchSnapshotImport implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE", description = "A _dump_snapshot pickle with allocation history.")
    Path file;

    @Option(names = {"-o", "--output"}, required = true, paramLabel = "TRACE", description = "The L1 trace to write (JSONL).")
    Path output;

    @Option(names = "--device", paramLabel = "N", description = "CUDA device to import (default: the only device with history).")
    int device = -1;

    @Override
    public Integer call() throws Exception {
      TorchSnapshot snapshot = SnapshotReader.read(file);
      int d = SnapshotImporter.chooseDevice(snapshot, device);
      SnapshotImporter.Summary[] summary = new SnapshotImporter.Summary[1];
      AtomicFiles.write(output, out -> summary[0] = SnapshotImporter.write(snapshot, d, out));
      PrintWriter w = spec.commandLine().getOut();
      SnapshotImporter.Summary s = summary[0];
      w.printf("wrote %s: device %d, %d allocations live at the start, %d allocations, %d frees, %d segment/oom annotations%n",
          output, s.device(), s.preludeAllocations(), s.allocations(), s.frees(), s.annotations());
      w.flush();
      return KvSim.EXIT_OK;
    }
  }
}

package kvsim.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import kvsim.torch.SnapshotInspector;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim torch-inspect FILE}: the fragmentation picture of a snapshot's segments. */
@Command(
    name = "torch-inspect",
    mixinStandardHelpOptions = true,
    description = "Print the fragmentation picture of a PyTorch memory snapshot per pool and per segment: reserved, allocated, free, inactive split, largest free block, external fragmentation.")
final class TorchInspectCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "A _dump_snapshot pickle (state-only or with history).")
  Path file;

  @Option(names = "--json", description = "Print the picture as one JSON object.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    TorchSnapshot snapshot = SnapshotReader.read(file);
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(SnapshotInspector.toJson(snapshot)));
    } else {
      out.print(SnapshotInspector.toText(snapshot));
    }
    out.flush();
    return KvSim.EXIT_OK;
  }
}

package kvsim.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import kvsim.alloc.caching.TieBreak;
import kvsim.alloc.caching.TorchAllocConf;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.torch.ReplayReport;
import kvsim.torch.ReplayVerifier;
import kvsim.torch.SnapshotReader;
import kvsim.torch.TorchSnapshot;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim torch-replay FILE [--verify]}: replays a PyTorch snapshot against the caching model. */
@Command(
    name = "torch-replay",
    mixinStandardHelpOptions = true,
    description = {
      "Rebuild the allocator state at the start of a PyTorch memory snapshot's recording and replay the recording on the pytorch-caching model, comparing every allocation address and segment decision.",
      "Without --verify the whole trace is replayed and the exit status is 0; with --verify the replay stops at the first divergence and the exit status is 0 only when everything matched (1 otherwise)."
    })
final class TorchReplayCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "A _dump_snapshot pickle with allocation history.")
  Path file;

  @Option(names = "--verify", description = "Stop at the first divergence; exit status 1 unless everything matched.")
  boolean verify;

  @Option(names = "--json", description = "Print the report as one JSON object.")
  boolean json;

  @Option(names = "--device", paramLabel = "N", description = "Replay only this CUDA device (default: every device with history).")
  int device = -1;

  @Option(names = "--tie-break", paramLabel = "address|segment-age", description = "Free-block tie-break of the recording's PyTorch version (default: ${DEFAULT-VALUE}).", defaultValue = TorchCachingModel.DEFAULT_TIE_BREAK_LABEL)
  String tieBreak;

  @Option(names = "--torch-alloc-conf", paramLabel = "CONF", description = "Replay with these options instead of the recording's allocator_settings (PyTorch syntax).")
  String conf;

  @Option(names = "--device-memory", paramLabel = "SIZE", description = "Device size for the memory fraction and expandable reservations (default: the size a kvsim export records, else 80GiB).")
  String deviceMemory;

  @Override
  public Integer call() throws Exception {
    TieBreak tb;
    try {
      tb = TieBreak.of(tieBreak);
    } catch (IllegalArgumentException e) {
      throw new InputException("--tie-break: " + e.getMessage());
    }
    TorchAllocConf c = null;
    if (conf != null) {
      try {
        c = TorchAllocConf.parse(conf);
      } catch (IllegalArgumentException e) {
        throw new InputException("--torch-alloc-conf '" + conf + "': " + e.getMessage());
      }
    }
    long memory = 0;
    if (deviceMemory != null) {
      try {
        memory = Bytes.parse(deviceMemory);
      } catch (IllegalArgumentException e) {
        throw new InputException("--device-memory: " + e.getMessage());
      }
      if (memory <= 0) {
        throw new InputException("--device-memory: must be positive");
      }
      // The caching model computes reservations of 1.125 × the device in a long.
      if (memory > TorchCachingModel.MAX_REQUEST_BYTES) {
        throw new InputException("--device-memory: at most 1 EiB (" + TorchCachingModel.MAX_REQUEST_BYTES + " B)");
      }
    }
    TorchSnapshot snapshot = SnapshotReader.read(file);
    ReplayReport report = ReplayVerifier.verify(snapshot, new ReplayVerifier.Options(c, tb, memory, device, !verify));
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(report.toJson()));
    } else {
      printText(out, report, tb);
    }
    out.flush();
    return verify && !report.allMatched() ? KvSim.EXIT_FAILED : KvSim.EXIT_OK;
  }

  private static void printText(PrintWriter out, ReplayReport r, TieBreak tb) {
    out.println("torch-replay " + r.file());
    for (ReplayReport.DeviceResult d : r.devices()) {
      out.printf(Locale.ROOT, "device %d  (torch_alloc_conf %s, tie-break %s)%n", d.device(), d.conf(), tb.label());
      out.printf(Locale.ROOT, "  trace entries walked      %d%n", d.events());
      out.printf(Locale.ROOT, "  allocations               %d%n", d.allocations());
      out.printf(Locale.ROOT, "  address matches           %d (%s)%n", d.addressMatches(), percent(d.addressMatches(), d.allocations()));
      out.printf(Locale.ROOT, "  segment decisions         %d%n", d.segmentDecisions());
      out.printf(Locale.ROOT, "  segment matches           %d (%s)%n", d.segmentMatches(), percent(d.segmentMatches(), d.segmentDecisions()));
      out.printf(Locale.ROOT, "  new segments recorded     %d, segment frees %d%n", d.newSegmentsRecorded(), d.segmentFrees());
      out.printf(Locale.ROOT, "  blocks of inferred size   %d (live at the start, freed during the recording)%n", d.inferredBlocks());
      out.printf(Locale.ROOT, "  peak reserved / allocated %s / %s%n", Bytes.format(d.peakReservedBytes()), Bytes.format(d.peakAllocatedBytes()));
      out.printf(Locale.ROOT, "  final state               %s%n",
          d.finalStateMatches() == null ? "not reached (stopped at the divergence)" : d.finalStateMatches() ? "matches the file's segments and blocks" : "differs from the file's segments and blocks");
      ReplayReport.Divergence v = d.firstDivergence();
      if (v != null) {
        out.printf(Locale.ROOT, "  first divergence at event %d: %s of %d B on stream %d%n", v.eventIndex(), v.action(), v.sizeBytes(), v.stream());
        out.println("    " + v.what());
        out.println("    " + v.state());
        out.println("    " + v.cause());
      }
    }
    out.println(r.allMatched() ? "result: every allocation address and segment decision matched" : "result: the model diverged from the recording");
  }

  private static String percent(long part, long whole) {
    return whole == 0 ? "-" : String.format(Locale.ROOT, "%.2f %%", 100.0 * part / whole);
  }
}

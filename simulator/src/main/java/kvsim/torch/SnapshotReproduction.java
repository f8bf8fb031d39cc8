package kvsim.torch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import kvsim.core.Bytes;
import kvsim.alloc.caching.TorchCachingModel;
import kvsim.core.InputException;

/**
 * The {@code torch-snapshots} reproduction: every PyTorch memory snapshot of a folder replayed on
 * {@code pytorch-caching} by {@link ReplayVerifier} (recorded settings, address tie-break, going on
 * after a divergence to count what still matches), and the fragmentation picture of its final
 * state by {@link SnapshotInspector}. The published numbers are the recordings themselves: a match
 * is an address or segment decision the model makes as the recording shows.
 */
public final class SnapshotReproduction {
  /**
   * The comparison.
   *
   * @param header the table's columns
   * @param rows one row per snapshot, in file name order
   * @param numbers per snapshot file name, kvsim's numbers
   */
  public record Outcome(List<String> header, List<List<String>> rows, Map<String, Object> numbers) {}

  private SnapshotReproduction() {}

  /** Runs every {@code *.pickle} of {@code folder}; an absent or empty folder is bad input. */
  public static Outcome run(Path folder) throws IOException {
    if (!Files.isDirectory(folder)) {
      throw new InputException(folder + ": no such folder; the torch-snapshots reproduction reads the shared PyTorch snapshots there (--snapshots DIR)");
    }
    List<Path> files;
    try (Stream<Path> list = Files.list(folder)) {
      files = list.filter(p -> p.getFileName().toString().endsWith(".pickle")).sorted().toList();
    }
    if (files.isEmpty()) {
      throw new InputException(folder + ": holds no .pickle snapshot");
    }
    List<List<String>> rows = new ArrayList<>();
    Map<String, Object> numbers = new LinkedHashMap<>();
    for (Path f : files) {
      TorchSnapshot snapshot = SnapshotReader.read(f);
      SnapshotInspector.Totals t = SnapshotInspector.totals(snapshot, -1, null);
      Map<String, Object> n = new LinkedHashMap<>();
      String name = f.getFileName().toString();
      List<String> row = new ArrayList<>(List.of(name));
      if (snapshot.devicesWithHistory().isEmpty()) {
        row.addAll(List.of("state only", "-", "-", "-"));
        n.put("allocations", null);
      } else {
        ReplayReport r = ReplayVerifier.verify(snapshot, new ReplayVerifier.Options(null, TorchCachingModel.DEFAULT_TIE_BREAK, 0, -1, true));
        row.add(Long.toString(r.allocations()));
        row.add(percent(r.addressMatches(), r.allocations()));
        row.add(percent(r.segmentMatches(), r.segmentDecisions()));
        boolean finalMatches = r.devices().stream().allMatch(d -> Boolean.TRUE.equals(d.finalStateMatches()));
        row.add(finalMatches ? "matches" : "differs");
        n.put("allocations", r.allocations());
        n.put("address_matches", r.addressMatches());
        n.put("segment_decisions", r.segmentDecisions());
        n.put("segment_matches", r.segmentMatches());
        n.put("final_state_matches", finalMatches);
      }
      Double ext = t.externalFragmentation();
      row.add(Bytes.format(t.reserved()));
      row.add(Bytes.format(t.allocated()));
      row.add(ext == null ? "-" : String.format(Locale.ROOT, "%.4f", ext));
      n.put("reserved_bytes", t.reserved());
      n.put("allocated_bytes", t.allocated());
      n.put("external_fragmentation", ext);
      rows.add(row);
      numbers.put(name, n);
    }
    return new Outcome(
        List.of("snapshot", "allocations replayed", "address matches", "segment matches", "final state", "reserved", "allocated", "ext. frag. (final)"),
        rows, numbers);
  }

  private static String percent(long part, long whole) {
    return whole == 0 ? "-" : String.format(Locale.ROOT, "%.2f %%", 100.0 * part / whole);
  }
}

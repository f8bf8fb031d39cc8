package kvsim.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.OutputFile;
import kvsim.registry.AllocatorRegistry;
import kvsim.torch.SnapshotRecorder;

/** {@code replay --torch-snapshot FILE}: one snapshot recorder per allocator run, written after the run. */
final class TorchSnapshotFiles {
  private TorchSnapshotFiles() {}

  /**
   * Returns a recorder per allocator that may run (none when {@code file} is null); allocators a
   * workload spec names are not known here, so without {@code -a} every registered one gets a
   * recorder and only those that ran are written.
   */
  static Map<String, SnapshotRecorder> recorders(Path file, List<String> allocators) {
    Map<String, SnapshotRecorder> out = new LinkedHashMap<>();
    if (file == null) {
      return out;
    }
    List<String> names = allocators.isEmpty() ? AllocatorRegistry.names() : allocators;
    for (String name : names) {
      out.put(name, new SnapshotRecorder());
    }
    return out;
  }

  /** Returns the file for one allocator: {@code file} itself when there is one allocator, else {@code file-NAME.ext}. */
  static Path fileFor(Path file, String name, int allocators) {
    if (allocators == 1) {
      return file;
    }
    String f = file.getFileName().toString();
    int dot = f.lastIndexOf('.');
    String named = dot > 0 ? f.substring(0, dot) + "-" + name + f.substring(dot) : f + "-" + name;
    return file.resolveSibling(named);
  }

  /**
   * Checks, before the run, every file the snapshots may go to (Note [Output rule] on {@code
   * core.OutputFile}): {@code file} when one allocator may run, else one per allocator.
   */
  static void check(Path file, java.util.Set<String> allocators, boolean force, List<Path> inputs) {
    if (file == null) {
      return;
    }
    for (String name : allocators) {
      output(fileFor(file, name, allocators.size()), force, inputs).check();
    }
  }

  private static OutputFile output(Path file, boolean force, List<Path> inputs) {
    return OutputFile.of(file, SnapshotRecorder.OUTPUT_KIND, force, inputs);
  }

  /** Writes the snapshot of every allocator that ran, atomically, and says where. */
  static void write(PrintWriter out, Path file, Map<String, SnapshotRecorder> recorders, boolean force, List<Path> inputs) throws IOException {
    Map<String, SnapshotRecorder> ran = new LinkedHashMap<>();
    recorders.forEach((name, r) -> {
      if (r.bound()) {
        ran.put(name, r);
      }
    });
    for (Map.Entry<String, SnapshotRecorder> e : ran.entrySet()) {
      Path target = fileFor(file, e.getKey(), ran.size());
      output(target, force, inputs).write(e.getValue()::write);
      out.println("torch snapshot: " + target + " (" + e.getValue().entries() + " trace entries)");
    }
    out.flush();
  }
}

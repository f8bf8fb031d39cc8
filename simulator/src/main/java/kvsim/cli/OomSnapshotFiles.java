package kvsim.cli;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocatorListener;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.metrics.MemoryMap;
import kvsim.registry.AllocatorRegistry;
import kvsim.run.RunResult;
import kvsim.torch.OomSnapshotRecorder;
import kvsim.torch.SnapshotRecorder;
import picocli.CommandLine.Option;

/**
 * {@code --snapshot-at-oom FILE[:frag]} on {@code replay} and {@code compare}: one {@link
 * OomSnapshotRecorder} per allocator run, whose snapshot at the first OOM (with {@code :frag}, the
 * first fragmentation OOM) is written after the run, before the result folder, whose memory map
 * then marks that event and whose report links the file. Files are named as {@code
 * --torch-snapshot} names them ({@link TorchSnapshotFiles#fileFor}); an allocator that had no such
 * OOM gets no file and one line on stderr.
 */
final class OomSnapshotFiles {
  /** The suffix that asks for the first fragmentation OOM. */
  static final String FRAG_SUFFIX = ":frag";

  /** The option, as a picocli mixin of the commands that take it. */
  static final class Flag {
    @Option(
        names = "--snapshot-at-oom",
        paramLabel = "FILE[:frag]",
        description = "Write a PyTorch memory snapshot (memory_viz opens it) of the allocator's state (serving: the KV memory's) at its first OOM (FILE:frag: its first fragmentation OOM); "
            + "several allocators: one file each, FILE-NAME.pickle. No OOM: no file, and a line on stderr.")
    String value;
  }

  private final Path file;
  private final OomSnapshotRecorder.Trigger trigger;
  private final Map<String, OomSnapshotRecorder> recorders = new LinkedHashMap<>();

  private OomSnapshotFiles(Path file, OomSnapshotRecorder.Trigger trigger) {
    this.file = file;
    this.trigger = trigger;
  }

  /**
   * Parses the option's value and checks, before the run, every file the snapshots may go to (Note
   * [Output rule] on {@code core.OutputFile}), and that their folder can be written; null when the
   * option was not given.
   *
   * @param allocators the allocators asked for ({@code -a}); empty: every registered one may run
   * @param seeds the {@code --seeds} value, or null: a sweep keeps no run's state, so the two are refused together
   */
  static OomSnapshotFiles of(String value, List<String> allocators, String seeds, boolean force, List<Path> inputs) {
    if (value == null) {
      return null;
    }
    Parsed p = parse(value);
    if (seeds != null) {
      throw new InputException("--snapshot-at-oom: not with --seeds (a sweep over seeds keeps no run's state); run one seed");
    }
    Path file = p.file();
    OomSnapshotFiles out = new OomSnapshotFiles(file, p.trigger());
    List<String> names = allocators.isEmpty() ? AllocatorRegistry.names() : allocators;
    for (String name : names) {
      out.recorders.put(name, new OomSnapshotRecorder(p.trigger()));
    }
    for (String name : names) {
      Path f = TorchSnapshotFiles.fileFor(file, name, names.size());
      requireWritableFolder(f);
      OutputFile.of(f, SnapshotRecorder.OUTPUT_KIND, force, inputs).check();
    }
    return out;
  }

  /** Refuses {@code --torch-snapshot} and {@code --snapshot-at-oom} naming the same file: one would overwrite the other. */
  static void requireApart(Path torchSnapshot, OomSnapshotFiles oom) {
    if (torchSnapshot != null && oom != null && torchSnapshot.toAbsolutePath().normalize().equals(oom.file.toAbsolutePath().normalize())) {
      throw new InputException("--snapshot-at-oom " + oom.file + ": is also the --torch-snapshot file; give each its own");
    }
  }

  /** The option's value: the file, and which OOM. */
  record Parsed(Path file, OomSnapshotRecorder.Trigger trigger) {}

  /** Parses {@code FILE} or {@code FILE:frag}. */
  static Parsed parse(String value) {
    OomSnapshotRecorder.Trigger trigger = OomSnapshotRecorder.Trigger.ANY;
    String path = value;
    if (value.endsWith(FRAG_SUFFIX)) {
      trigger = OomSnapshotRecorder.Trigger.FRAGMENTATION;
      path = value.substring(0, value.length() - FRAG_SUFFIX.length());
    }
    if (path.isBlank()) {
      throw new InputException("--snapshot-at-oom " + value + ": expected FILE or FILE:frag, with a file name");
    }
    try {
      return new Parsed(Path.of(path), trigger);
    } catch (java.nio.file.InvalidPathException e) {
      throw new InputException("--snapshot-at-oom " + value + ": not a file name (" + e.getReason() + ")");
    }
  }

  /** The folder a file would go to must be a folder this process can write, or creatable in one. */
  static void requireWritableFolder(Path f) {
    Path dir = f.toAbsolutePath().normalize().getParent();
    Path existing = dir;
    while (existing != null && !Files.exists(existing)) {
      existing = existing.getParent();
    }
    if (existing == null || !Files.isDirectory(existing)) {
      throw new InputException("--snapshot-at-oom " + f + ": cannot create its folder " + dir + " (" + existing + " is not a folder)");
    }
    if (!Files.isWritable(existing) || !Files.isExecutable(existing)) {
      throw new InputException("--snapshot-at-oom " + f + ": the folder " + existing + " is not writable");
    }
  }

  /** Returns the listeners of a run: each allocator's {@code --torch-snapshot} recorder (if any) and its OOM recorder. */
  static Map<String, AllocatorListener> listeners(Map<String, ? extends AllocatorListener> others, OomSnapshotFiles oom) {
    Map<String, AllocatorListener> out = new LinkedHashMap<>(others);
    if (oom != null) {
      oom.recorders.forEach((name, r) -> out.put(name, AllocatorListener.both(out.get(name), r)));
    }
    return out;
  }

  /**
   * After the run, before the result folder: writes each captured snapshot atomically, says where
   * on {@code out} (or, for an allocator without such an OOM, that there is none, on {@code err}),
   * and returns the run with each map marked at its snapshot's event.
   *
   * @param folder the result folder (or a folder beside where it will be), for the files' relative paths
   */
  RunResult write(PrintWriter out, PrintWriter err, RunResult result, Path folder, boolean force, List<Path> inputs) throws java.io.IOException {
    Map<String, OomSnapshotRecorder> ran = new LinkedHashMap<>();
    recorders.forEach((name, r) -> {
      if (r.bound()) {
        ran.put(name, r);
      }
    });
    Map<String, MemoryMap.OomSnapshot> marks = new LinkedHashMap<>();
    for (Map.Entry<String, OomSnapshotRecorder> e : ran.entrySet()) {
      Path target = TorchSnapshotFiles.fileFor(file, e.getKey(), ran.size());
      OomSnapshotRecorder r = e.getValue();
      if (!r.captured()) {
        err.println("kvsim: " + e.getKey() + " had no " + trigger.label().substring("first ".length()) + " in this run: no snapshot written to " + target);
        continue;
      }
      OutputFile.of(target, SnapshotRecorder.OUTPUT_KIND, force, inputs).write(r::write);
      OomSnapshotRecorder.Oom o = r.oom();
      out.println("snapshot at " + trigger.label() + ": " + target + " (" + e.getKey() + ", event " + o.event() + ", " + kvsim.core.Bytes.format(o.sizeBytes())
          + " refused, " + o.reason().label() + "; " + r.entries() + " trace entries)");
      marks.put(e.getKey(), new MemoryMap.OomSnapshot(o.event(), o.timeNanos(), o.sizeBytes(), o.reason().label(), relative(folder, target)));
    }
    out.flush();
    err.flush();
    if (marks.isEmpty() || result.memoryMaps() == null) {
      return result;
    }
    List<MemoryMap> maps = new ArrayList<>();
    for (MemoryMap m : result.memoryMaps()) {
      MemoryMap.OomSnapshot mark = m == null ? null : marks.get(m.allocator());
      maps.add(mark == null ? m : m.withOomSnapshot(mark));
    }
    return new RunResult(result.config(), result.results(), result.timings(), maps);
  }

  /** Returns {@code file} relative to {@code folder} (with forward slashes), or absolute where it cannot be. */
  static String relative(Path folder, Path file) {
    Path f = file.toAbsolutePath().normalize();
    try {
      return folder.toAbsolutePath().normalize().relativize(f).toString().replace('\\', '/');
    } catch (IllegalArgumentException e) {
      return f.toString();
    }
  }
}

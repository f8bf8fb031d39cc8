package kvsim.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.OutputFile;
import kvsim.report.ServingOomLinks;
import kvsim.run.ServingOomCapture;
import kvsim.run.ServingRunner;
import kvsim.serving.KvRefusals;
import kvsim.torch.OomSnapshotRecorder;
import kvsim.torch.PickleWriter;
import kvsim.torch.SnapshotRecorder;

/**
 * {@code serving --snapshot-at-oom FILE[:frag]}: per system, the KV memory at its first OOM (Note
 * [Serving OOM] in {@code serving.KvRefusals}) as a PyTorch snapshot (its segments and blocks, a
 * trace of the one {@code oom} entry), written after the run, before the result folder; files
 * named as {@code --emit-trace} names them ({@link ServingRunner#traceFile}). A system without such
 * an OOM gets no file and one line on stderr.
 */
final class ServingOomSnapshots {
  private final OomSnapshotFiles.Parsed parsed;
  private final Map<String, ServingOomCapture> captures = new LinkedHashMap<>();
  private final boolean force;
  private final List<Path> inputs;

  private ServingOomSnapshots(OomSnapshotFiles.Parsed parsed, boolean force, List<Path> inputs) {
    this.parsed = parsed;
    this.force = force;
    this.inputs = inputs;
  }

  /**
   * Parses and checks the option before the run (Note [Output rule] on {@code core.OutputFile});
   * null when it was not given. One run per system: refused with a grid ({@code --set}) or
   * {@code --seeds}.
   */
  static ServingOomSnapshots of(String value, List<String> systems, boolean grid, boolean seeds, boolean force, List<Path> inputs) {
    if (value == null) {
      return null;
    }
    OomSnapshotFiles.Parsed p = OomSnapshotFiles.parse(value);
    if (grid || seeds) {
      throw new InputException("--snapshot-at-oom: writes one snapshot per system, not per " + (grid ? "grid cell; leave out --set" : "seed; leave out --seeds")
          + ", or run each on its own");
    }
    ServingOomSnapshots out = new ServingOomSnapshots(p, force, inputs);
    for (String system : systems) {
      out.captures.put(system, new ServingOomCapture(p.trigger() == OomSnapshotRecorder.Trigger.FRAGMENTATION));
    }
    for (String system : systems) {
      Path f = fileOf(p.file(), system, systems.size());
      OomSnapshotFiles.requireWritableFolder(f);
      OutputFile.of(f, SnapshotRecorder.OUTPUT_KIND, force, inputs).check();
    }
    return out;
  }

  private static Path fileOf(Path file, String system, int systems) {
    return ServingRunner.traceFile(file, system, systems > 1);
  }

  /** Returns {@code runner} capturing each system's first OOM. */
  ServingRunner apply(ServingRunner runner) {
    return runner.capturingOoms(captures::get);
  }

  /**
   * Writes each captured snapshot atomically and says where; for a system without one, one line on
   * {@code err}. Returns the snapshots written, each file relative to {@code folder} (the result
   * folder, whose report links them).
   */
  List<ServingOomLinks.Link> write(PrintWriter out, PrintWriter err, Path folder) throws IOException {
    List<ServingOomLinks.Link> links = new ArrayList<>();
    String what = parsed.trigger().label().substring("first ".length());
    for (Map.Entry<String, ServingOomCapture> e : captures.entrySet()) {
      Path target = fileOf(parsed.file(), e.getKey(), captures.size());
      ServingOomCapture.Oom oom = e.getValue().oom();
      if (oom == null) {
        err.println("kvsim: " + e.getKey() + " had no " + what + " in this run" + (e.getValue().installed() ? "" : " (its KV manager reports none)")
            + ": no snapshot written to " + target);
        continue;
      }
      Map<String, Object> snapshot =
          OomSnapshotRecorder.ofState(oom.layout(), oom.sizeBytes(), 0, KvRefusals.freeBytes(oom.layout()), oom.timeNanos());
      OutputFile.of(target, SnapshotRecorder.OUTPUT_KIND, force, inputs).write(o -> PickleWriter.write(snapshot, o));
      out.println(String.format(java.util.Locale.ROOT, "snapshot at %s: %s (%s, at %.3f s, %s refused, %s)", parsed.trigger().label(), target, e.getKey(),
          oom.timeNanos() / 1e9, Bytes.format(oom.sizeBytes()), oom.reason().label()));
      links.add(new ServingOomLinks.Link(e.getKey(), OomSnapshotFiles.relative(folder, target), oom.timeNanos() / 1e9, oom.sizeBytes(), oom.reason().label()));
    }
    out.flush();
    err.flush();
    return links;
  }
}

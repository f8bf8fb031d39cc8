package kvsim.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The files a command reads, as the output rule needs them (Note [Output rule] on {@code
 * core.OutputFile}): no output may be one of them, and no result folder may hold one.
 */
final class Inputs {
  private Inputs() {}

  /**
   * Returns the input files of a workload argument: the argument itself where it names a file (a
   * trace or a workload spec), and the files the resolved workload reads ({@code null}s skipped).
   */
  static List<Path> of(String workload, Path... resolved) {
    List<Path> out = new ArrayList<>();
    if (workload != null) {
      try {
        Path p = Path.of(workload);
        if (Files.isRegularFile(p)) {
          out.add(p);
        }
      } catch (java.nio.file.InvalidPathException e) {
        // a generator spec, not a path
      }
    }
    for (Path p : resolved) {
      if (p != null) {
        out.add(p);
      }
    }
    return out;
  }
}

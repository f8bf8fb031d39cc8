package kvsim.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Locates the shared real data ({@code ../shared/data} beside the repository). Tests that use it
 * call {@link #require(String)}, which skips the test with a clear message when the folder is absent.
 * The product itself never reads it.
 */
public final class SharedData {
  private SharedData() {}

  /** Returns the shared data folder, or null when there is none beside the repository. */
  public static Path dir() {
    Path here = Path.of("").toAbsolutePath();
    for (Path p = here; p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("pom.xml")) && Files.isDirectory(p.resolve("simulator"))) {
        Path data = p.resolveSibling("shared").resolve("data");
        return Files.isDirectory(data) ? data : null;
      }
    }
    return null;
  }

  /** Returns a file under the shared data folder, skipping the calling test if it is absent. */
  public static Path require(String relative) {
    Path dir = dir();
    assumeTrue(dir != null, "skipped: ../shared/data is not beside this clone (real-data test)");
    Path file = dir.resolve(relative);
    assumeTrue(Files.exists(file), "skipped: " + file + " is absent (real-data test)");
    return file;
  }
}

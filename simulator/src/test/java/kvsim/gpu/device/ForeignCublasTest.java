package kvsim.gpu.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Where {@link ForeignCublas} looks for cuBLAS, and what it says where it finds none. */
class ForeignCublasTest {
  @Test
  void looksForCuda13ThenCuda12OnTheLibraryPathThenInCudasFolders() {
    assertEquals(List.of("libcublas.so.13", "libcublas.so.12",
        "/opt/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
        "/opt/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12"),
        ForeignCublas.candidates("/opt/cuda"));
    assertEquals(List.of("libcublas.so.13", "libcublas.so.12",
        "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
        "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12"),
        ForeignCublas.candidates(null));
    assertEquals(ForeignCublas.candidates(null), ForeignCublas.candidates(" "));
  }

  @Test
  void beforeJava22BindingSaysWhy() {
    assumeTrue(Runtime.version().feature() < 22, "this Java has the foreign function API");
    ForeignCublas.Binding binding = ForeignCublas.open();
    assertTrue(binding.calls().isEmpty());
    assertEquals("cuBLAS through the foreign function API needs Java 22 or newer (this is Java " + Runtime.version().feature() + ")", binding.reason());
  }

  /** Whether this machine visibly has a cuBLAS 12 or 13 (the dynamic linker's cache is not read). */
  private static boolean mayHaveCublas() {
    String path = System.getenv("LD_LIBRARY_PATH");
    if (path != null && !path.isBlank()) {
      return true;
    }
    for (String c : ForeignCublas.candidates(System.getenv("CUDA_HOME"))) {
      if (c.startsWith("/") && Files.exists(Path.of(c))) {
        return true;
      }
    }
    for (String name : ForeignCublas.NAMES) {
      if (Files.exists(Path.of("/usr/lib/x86_64-linux-gnu", name)) || Files.exists(Path.of("/lib/x86_64-linux-gnu", name))) {
        return true;
      }
    }
    return false;
  }

  @Test
  void withoutCublasBindingSaysSoInOneLine() {
    assumeTrue(Runtime.version().feature() >= 22, "the foreign function API is final from Java 22; this is Java " + Runtime.version().feature());
    assumeTrue(!mayHaveCublas(), "this machine may have cuBLAS");
    ForeignCublas.Binding binding = ForeignCublas.open();
    assertTrue(binding.calls().isEmpty());
    assertEquals("cuBLAS is not installed: neither libcublas.so.13 nor libcublas.so.12 is on the library path or under $CUDA_HOME/lib64 or /usr/local/cuda",
        binding.reason());
    assertFalse(binding.reason().contains("\n"));
  }
}

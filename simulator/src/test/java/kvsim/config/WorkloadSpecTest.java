package kvsim.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** Bad workload specs that fuzzing found (ReaderFuzzTest): each is refused with one line naming file, line and field. */
class WorkloadSpecTest {
  private static String error(String text) {
    return assertThrows(InputException.class,
        () -> WorkloadSpec.read("w.yaml", new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)))).getMessage();
  }

  // A NUL in a field that names a file escaped, when the run resolved it, as an InvalidPathException.
  @Test
  void aNulInAFileNameIsRefusedAtItsLine() {
    assertEquals("w.yaml:1: workload: a NUL character cannot be in a workload or a file name", error("workload: \"t\\0.jsonl\"\n"));
    assertEquals("w.yaml:2: calibration: a NUL character cannot be in a workload or a file name",
        error("workload: churn\ncalibration: \"h100\\0.json\"\n"));
  }
}

package kvsim.regress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad suite files that fuzzing found (ReaderFuzzTest): each is refused with one line naming file, line and field. */
class SuiteReadTest {
  @TempDir Path dir;

  private String error(byte[] content) throws IOException {
    Path f = Files.write(dir.resolve("suite.yaml"), content);
    return assertThrows(InputException.class, () -> Suite.read(f)).getMessage();
  }

  // A workload holding a NUL (written "\0" in a quoted YAML string) escaped as an InvalidPathException.
  @Test
  void aNulInAWorkloadIsRefusedAtItsLine() throws IOException {
    String suite = "version: 1\nscenarios:\n  - name: a\n    workload: \"churn\\0x\"\n    allocators: [buddy]\n"
        + "    watch: [{metric: oom_count, better: lower}]\n";
    assertEquals(dir.resolve("suite.yaml") + ":4: scenarios[0].workload: cannot be a file name: it holds a NUL or a lone UTF-16 surrogate",
        error(suite.getBytes()));
  }

  // A suite that is not UTF-8 was reported as "cannot read: Input length = 1".
  @Test
  void aFileThatIsNotUtf8SaysSo() throws IOException {
    assertEquals(dir.resolve("suite.yaml") + ": not UTF-8 text", error(new byte[] {'v', ':', ' ', (byte) 0xff, '\n'}));
  }
}

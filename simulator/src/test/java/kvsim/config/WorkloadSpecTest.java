package kvsim.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.core.InputException;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad workload specs that fuzzing found (ReaderFuzzTest): each is refused with one line naming file, line and field. */
class WorkloadSpecTest {
  private static String error(String text) {
    return assertThrows(InputException.class,
        () -> WorkloadSpec.read("w.yaml", new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)))).getMessage();
  }

  // A NUL in a field that names a file escaped, when the run resolved it, as an InvalidPathException.
  @Test
  void aNulInAFileNameIsRefusedAtItsLine() {
    assertEquals("w.yaml:1: workload: cannot be a file name: it holds a NUL or a lone UTF-16 surrogate", error("workload: \"t\\0.jsonl\"\n"));
    assertEquals("w.yaml:2: calibration: cannot be a file name: it holds a NUL or a lone UTF-16 surrogate",
        error("workload: churn\ncalibration: \"h100\\0.json\"\n"));
    assertEquals("w.yaml:1: workload: cannot be a file name: it holds a NUL or a lone UTF-16 surrogate", error("workload: \"\\ud800\"\n"));
  }

  // An empty entry in the allocator list was read as null and failed as a NullPointerException when the run resolved it.
  @Test
  void anEmptyAllocatorEntryIsRefusedAtItsLine() {
    assertEquals("w.yaml:2: allocators: an allocator name is missing (null or an empty entry)", error("workload: churn\nallocators: [slab, null]\n"));
  }

  /** The error of resolving the spec {@code text} as {@code kvsim replay w.yaml} does. */
  private static String resolveError(Path dir, String text) throws IOException {
    Path f = Files.writeString(dir.resolve("w.yaml"), text);
    WorkloadSpec spec = WorkloadSpec.read(f);
    RunRequest request = RunRequest.of(null).withSpec(spec, dir);
    return assertThrows(InputException.class, () -> RunSpec.resolve(request, new PrintWriter(OutputStream.nullOutputStream()))).getMessage();
  }

  // A plan that leaves nothing of the device was reported as "memory plan: ..." without the spec's file and line.
  @Test
  void aPlanFromTheSpecIsReportedAtItsLine(@TempDir Path dir) throws IOException {
    String e = resolveError(dir, "workload: churn\nplan: {weights: 308GB}\n");
    assertTrue(e.startsWith(dir.resolve("w.yaml") + ":2: plan: weights (308000000000 B) and activations (0 B) leave nothing"), e);
  }

  // Found by ReaderFuzzTest: a calibration path naming a folder ('' is the spec's own folder) was
  // reported without the spec's file and line.
  @Test
  void aCalibrationThatIsAFolderIsReportedAtTheSpecsLine(@TempDir Path dir) throws IOException {
    assertEquals(dir.resolve("w.yaml") + ":2: calibration: " + dir + ": is a folder, not a calibration file",
        resolveError(dir, "workload: churn\ncalibration: ''\n"));
  }

  // Found by ReaderFuzzTest: a device from the spec too small for a model was reported without the spec's file and line.
  @Test
  void aDeviceTooSmallForAModelIsReportedAtTheSpecsLine(@TempDir Path dir) throws IOException {
    assertTrue(resolveError(dir, "workload: churn\ndevice: 8\nallocators: [paged]\n")
        .startsWith(dir.resolve("w.yaml") + ":2: device: paged: the region under test (8 B) holds fewer than 2 pages"));
  }

  // Found by ReaderFuzzTest: the spec's torch-alloc-conf was reported as the option --torch-alloc-conf.
  @Test
  void aTorchAllocConfFromTheSpecIsReportedAtItsLine(@TempDir Path dir) throws IOException {
    assertEquals(dir.resolve("w.yaml") + ":3: torch-alloc-conf: applies to pytorch-caching, which is not among the allocators run [slab]",
        resolveError(dir, "workload: churn\nallocators: [slab]\ntorch-alloc-conf: \"expandable_segments:True\"\n"));
    assertTrue(resolveError(dir, "workload: churn\nallocators: [pytorch-caching]\ntorch-alloc-conf: \"garbage:1\"\n")
        .startsWith(dir.resolve("w.yaml") + ":3: torch-alloc-conf: allocator pytorch-caching: option torch-alloc-conf='garbage:1'"));
  }

  // Found probing the readers beside ReaderFuzzTest: a key given twice silently kept the last value, and a second
  // YAML document was silently ignored.
  @Test
  void aKeyGivenTwiceAndASecondDocumentAreRefused() {
    assertEquals("w.yaml:2: bad YAML: Duplicate field 'workload'", error("workload: churn\nworkload: kv\n"));
    assertEquals("w.yaml:1: params: bad YAML: Duplicate field 'ops'", error("params: {ops: 1, ops: 2}\nworkload: churn\n"));
    assertEquals("w.yaml:3: bad YAML: a second YAML document; a workload spec is one document", error("workload: churn\n---\nworkload: kv\n"));
  }

  // Found probing the readers beside ReaderFuzzTest: bytes that are not UTF-8 were read as U+FFFD
  // ("unknown device '\uFFFD\uFFFD'") rather than refused.
  @Test
  void aSpecThatIsNotUtf8SaysSo() {
    byte[] bytes = {'d', 'e', 'v', 'i', 'c', 'e', ':', ' ', (byte) 0xff, '\n'};
    InputException e = assertThrows(InputException.class, () -> WorkloadSpec.read("w.yaml", new ByteArrayInputStream(bytes)));
    assertEquals("w.yaml: not UTF-8 text", e.getMessage());
  }
}

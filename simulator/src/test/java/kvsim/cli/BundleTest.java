package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The self-contained bundle for hosts without Java (README, "Bundle"), unpacked into a temporary
 * folder and run with a PATH that holds no {@code java} and no JAVA_HOME: the version, a GPU
 * command without a GPU (exit 3, one line), the one-command GPU run's steps and its early stop, a
 * headless chart, and the layout (runtime, fonts, JCuda's natives beside the jar).
 *
 * <p>The bundle is built by {@code ./kvsim bundle} (a minute of jlink and xz, kept out of the plain
 * test run); this test runs when {@code -Dkvsim.bundle=FILE.tar.xz} names it, as {@code .ci/run}
 * does, and is skipped otherwise. A named file that is missing fails.
 */
class BundleTest {

  /** The tools the launchers call (bin/kvsim, bin/gpu-validate) and tar; no java among them. */
  private static final List<String> TOOLS = List.of(
      "bash", "env", "dirname", "readlink", "date", "grep", "ls", "mkdir", "rm", "cat", "tar", "xz");

  /** The one-command GPU run's steps, in order (issue 24's list). */
  private static final List<String> STEPS = List.of("info", "calibrate", "raw-churn-5000",
      "arena-churn-5000-first-fit", "arena-churn-5000-pytorch-caching", "arena-churn-5000-paged", "arena-churn-5000-vattention",
      "arena-kv-first-fit", "arena-kv-pytorch-caching", "arena-kv-paged", "arena-kv-vattention",
      "serving-trace", "arena-serving-vllm", "arena-serving-orca-oracle");

  @TempDir static Path tmp;
  static Path home;
  static Path tools;

  record Result(int exitCode, String out, String err) {
    List<String> errLines() {
      return err.lines().filter(l -> !l.isBlank()).toList();
    }
  }

  @BeforeAll
  static void unpack() throws Exception {
    String named = System.getProperty("kvsim.bundle");
    Assumptions.assumeTrue(named != null && !named.isBlank(),
        "no -Dkvsim.bundle=FILE.tar.xz: the bundle test is skipped (./kvsim bundle builds it; .ci/run runs this test)");
    Path bundle = Path.of(named).toAbsolutePath();
    assertTrue(Files.isRegularFile(bundle), bundle + ": no such bundle");
    tools = Files.createDirectories(tmp.resolve("tools"));
    for (String tool : TOOLS) {
      Path found = Stream.of("/usr/bin", "/bin").map(d -> Path.of(d, tool)).filter(Files::isExecutable).findFirst()
          .orElseThrow(() -> new AssertionError(tool + ": not in /usr/bin or /bin"));
      Files.createSymbolicLink(tools.resolve(tool), found);
    }
    Path unpacked = Files.createDirectories(tmp.resolve("unpacked"));
    Result untar = run(unpacked, 120, "tar", "-xJf", bundle.toString());
    assertEquals(0, untar.exitCode(), "tar: " + untar.err());
    try (Stream<Path> top = Files.list(unpacked)) {
      List<Path> folders = top.toList();
      assertEquals(1, folders.size(), "the bundle holds one top folder: " + folders);
      home = folders.get(0);
    }
    String name = bundle.getFileName().toString();
    assertEquals(name.substring(0, name.length() - ".tar.xz".length()), home.getFileName().toString());
  }

  /** Runs a command in {@code dir} with PATH = the tools folder only and no JAVA_HOME. */
  static Result run(Path dir, int timeoutSeconds, String... command) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile());
    pb.environment().clear();
    pb.environment().put("PATH", tools.toString());
    pb.environment().put("HOME", tmp.toString());
    Path out = Files.createTempFile(tmp, "out", ".txt");
    Path err = Files.createTempFile(tmp, "err", ".txt");
    pb.redirectOutput(out.toFile()).redirectError(err.toFile());
    Process p = pb.start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail(String.join(" ", command) + ": still running after " + timeoutSeconds + " s");
    }
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
  }

  static Result kvsim(int timeoutSeconds, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(home.resolve("bin/kvsim").toString());
    command.addAll(List.of(args));
    return run(tmp, timeoutSeconds, command.toArray(String[]::new));
  }

  @Test
  void theCommandsSeeNoJava() throws Exception {
    Result r = run(tmp, 30, tools.resolve("bash").toString(), "-c", "command -v java || echo \"none ${JAVA_HOME:-unset}\"");
    assertEquals("none unset\n", r.out());
  }

  @Test
  void versionRunsOnTheBundledRuntime() throws Exception {
    Result r = kvsim(120, "--version");
    assertEquals(0, r.exitCode(), r.err());
    assertTrue(r.out().startsWith("kvsim "), r.out());
    String version = r.out().trim().substring("kvsim ".length());
    assertEquals("kvsim-" + version + "-linux-x86_64", home.getFileName().toString());
  }

  @Test
  void gpuInfoWithoutGpuExitsThreeWithOneLine() throws Exception {
    Result r = kvsim(120, "gpu", "info");
    assertEquals(3, r.exitCode(), "stdout: " + r.out() + " stderr: " + r.err());
    assertEquals(1, r.errLines().size(), r.err());
    assertTrue(r.out().isBlank(), r.out());
  }

  @Test
  void gpuValidateListsTheStepsInOrder() throws Exception {
    Result r = kvsim(60, "gpu", "validate", "--list");
    assertEquals(0, r.exitCode(), r.err());
    List<String> names = r.out().lines().map(l -> l.split("\\s+")[0]).toList();
    assertEquals(STEPS, names);
    assertTrue(r.out().contains("--emit-trace DIR/traces/serving.jsonl"), r.out());
    assertTrue(r.out().contains(home.resolve("workloads/churn-5000.yaml").toString() + " --mode raw"), r.out());
    assertTrue(Files.isRegularFile(home.resolve("workloads/churn-5000.yaml")));
  }

  @Test
  void gpuValidateWithoutGpuStopsAfterInfoWithExitThree() throws Exception {
    Path dir = tmp.resolve("validate");
    long start = System.nanoTime();
    Result r = kvsim(120, "gpu", "validate", "-o", dir.toString());
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
    assertEquals(3, r.exitCode(), "stdout: " + r.out() + " stderr: " + r.err());
    assertEquals(1, r.errLines().size(), r.err());
    assertTrue(seconds < 60, "took " + seconds + " s");
    assertEquals("info FAILED (exit 3: no usable GPU)\n", Files.readString(dir.resolve("summary.txt")));
    assertFalse(Files.exists(dir.resolve("calibration.json")));
    assertFalse(Files.exists(dir.resolve("info.json")));
  }

  @Test
  void gpuValidateRejectsBadArguments() throws Exception {
    Result noOutput = kvsim(30, "gpu", "validate");
    assertEquals(2, noOutput.exitCode());
    assertEquals(List.of("kvsim: error: gpu validate: -o DIR is required"), noOutput.errLines());
    Result unknown = kvsim(30, "gpu", "validate", "--bogus");
    assertEquals(2, unknown.exitCode());
    assertEquals(1, unknown.errLines().size(), unknown.err());
    Path full = Files.createDirectories(tmp.resolve("full"));
    Files.writeString(full.resolve("keep.txt"), "mine");
    Result notEmpty = kvsim(30, "gpu", "validate", "-o", full.toString());
    assertEquals(2, notEmpty.exitCode());
    assertEquals(List.of("kvsim: error: " + full + ": folder is not empty; choose a new one"), notEmpty.errLines());
    assertEquals("mine", Files.readString(full.resolve("keep.txt")));
  }

  @Test
  void headlessChartsRenderWithTheBundledFonts() throws Exception {
    Path dir = tmp.resolve("compare");
    Result r = kvsim(300, "compare", "churn:ops=200", "-o", dir.toString(), "--quiet");
    assertEquals(0, r.exitCode(), r.err());
    assertTrue(Files.size(dir.resolve("fragmentation.png")) > 10_000);
    assertTrue(Files.size(dir.resolve("memory-map.png")) > 10_000);
  }

  @Test
  void layoutHoldsRuntimeFontsAndNativesBesideTheJar() throws Exception {
    String release = Files.readString(home.resolve("runtime/release"));
    for (String module : List.of("java.base", "java.desktop", "java.sql", "java.logging", "jdk.unsupported")) {
      assertTrue(release.contains(module), module + " missing from " + release);
    }
    assertFalse(Files.exists(home.resolve("runtime/bin/javac")));
    assertTrue(Files.isRegularFile(home.resolve("runtime/lib/fonts/DejaVuSans.ttf")));
    assertTrue(Files.readString(home.resolve("runtime/lib/fontconfig.properties")).contains("$JRE_LIB_FONTS/DejaVuSans.ttf"));
    try (Stream<Path> lib = Files.list(home.resolve("lib"))) {
      List<String> natives = lib.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".so")).sorted().toList();
      assertEquals(3, natives.size(), natives.toString());
      assertTrue(natives.get(0).matches("libJCublas2-12\\.6\\.0-linux-x86_64\\.so"), natives.toString());
      assertTrue(natives.get(1).matches("libJCudaDriver-12\\.6\\.0-linux-x86_64\\.so"), natives.toString());
      assertTrue(natives.get(2).matches("libJCudaRuntime-12\\.6\\.0-linux-x86_64\\.so"), natives.toString());
    }
    try (ZipFile jar = new ZipFile(home.resolve("lib/kvsim.jar").toFile())) {
      assertTrue(jar.getEntry("jcuda/driver/JCudaDriver.class") != null);
      assertTrue(jar.stream().noneMatch(e -> e.getName().startsWith("lib/") && e.getName().endsWith(".so")));
    }
  }
}

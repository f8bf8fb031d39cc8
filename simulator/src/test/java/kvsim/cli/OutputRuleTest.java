package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * Note [Output rule] on {@code core.OutputFile}, walked over every command and option that writes:
 * a file of the user's is replaced only with {@code --force}, an earlier kvsim output of the same
 * kind is replaced, an output that is also an input is refused even with {@code --force}; a result
 * folder is never written over a folder of the user's, of another kind, or one that holds an input.
 * {@link #everyOptionThatTakesAPathIsWalkedOrKnownToRead} makes sure a new writing option joins the
 * walk.
 */
class OutputRuleTest {
  @TempDir static Path fx;

  static Path azure;
  static Path mooncake;
  static Path lengths;
  static Path burstgpt;
  static Path script;
  static Path pickle;
  static Path trace;
  static Path suite;
  static Path baselines;
  static Path replayFolder;
  static Path grid;

  @BeforeAll
  static void fixtures() throws IOException {
    azure = write("az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,396,109\n");
    mooncake = write("mc.jsonl", "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n");
    lengths = write("len.csv", "num_prefill_tokens,num_decode_tokens\n10,20\n30,40\n");
    burstgpt = write("bg.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n7,ChatGPT,77,405,482,Conversation log\n");
    try (InputStream in = OutputRuleTest.class.getResourceAsStream("/blocks/prefix-sharing.jsonl")) {
      script = fx.resolve("script.jsonl");
      Files.write(script, in.readAllBytes());
    }
    trace = fx.resolve("t.jsonl");
    CliRun.of("generate", "churn", "--ops", "20", "-o", trace.toString()).ok();
    pickle = fx.resolve("snap.pickle");
    replayFolder = fx.resolve("replayed");
    CliRun.of("replay", trace.toString(), "-a", "pytorch-caching", "--quiet", "-o", replayFolder.toString(), "--torch-snapshot", pickle.toString()).ok();
    suite = write("tiny.yaml", "version: 1\nwatch:\n  allocators:\n    - {metric: oom_count, better: lower}\n"
        + "scenarios:\n  - name: churn\n    workload: churn:ops=40,seed=3\n    allocators: [first-fit]\n");
    baselines = fx.resolve("baselines");
    CliRun.of("regress", suite.toString(), "--baseline", baselines.toString(), "--update", "--quiet").ok();
    grid = write("grid.yaml", "workloads: [\"churn:ops=30\"]\nallocators: [first-fit]\nseeds: 1..2\n");
  }

  private static Path write(String name, String text) throws IOException {
    return Files.writeString(fx.resolve(name), text);
  }

  /**
   * A command line that writes one file.
   *
   * @param name the command and option, as {@link #everyOptionThatTakesAPathIsWalkedOrKnownToRead} names them
   * @param args the arguments, given the output path
   * @param input one of the command's input files, or null
   * @param marked whether an earlier output of this kind is recognised (false where the format has no room for a mark)
   */
  record FileWriter(String name, BiFunction<Path, Path, List<String>> args, Path input, boolean marked) {
    List<String> at(Path out) {
      return args.apply(out, input);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  static List<FileWriter> fileWriters() {
    return List.of(
        new FileWriter("generate churn -o", (o, in) -> List.of("generate", "churn", "--ops", "5", "-o", o.toString()), null, true),
        new FileWriter("generate kv -o", (o, in) -> List.of("generate", "kv", "--requests", "2", "-o", o.toString()), null, true),
        new FileWriter("generate requests -o", (o, in) -> List.of("generate", "requests", "--count", "2", "-o", o.toString()), null, true),
        new FileWriter("generate requests --format azure-csv -o",
            (o, in) -> List.of("generate", "requests", "--count", "2", "--format", "azure-csv", "-o", o.toString()), null, false),
        new FileWriter("import azure -o", (o, in) -> List.of("import", "azure", in.toString(), "-o", o.toString()), azure, true),
        new FileWriter("import mooncake -o", (o, in) -> List.of("import", "mooncake", in.toString(), "-o", o.toString()), mooncake, true),
        new FileWriter("import lengths -o",
            (o, in) -> List.of("import", "lengths", in.toString(), "--rate", "2", "--seed", "1", "-o", o.toString()), lengths, true),
        new FileWriter("import burstgpt -o", (o, in) -> List.of("import", "burstgpt", in.toString(), "-o", o.toString()), burstgpt, true),
        new FileWriter("import torch-snapshot -o", (o, in) -> List.of("import", "torch-snapshot", in.toString(), "-o", o.toString()), pickle, true),
        new FileWriter("blocks -o", (o, in) -> List.of("blocks", in.toString(), "-o", o.toString()), script, true),
        new FileWriter("convert OUT", (o, in) -> List.of("convert", in.toString(), o.toString()), trace, true),
        new FileWriter("serving --emit-trace",
            (o, in) -> List.of("serving", in.toString(), "--system", "vllm", "-q", "-o", fresh("serving").toString(), "--emit-trace", o.toString()),
            requestTrace(), true),
        new FileWriter("replay --torch-snapshot",
            (o, in) -> List.of("replay", in.toString(), "-a", "first-fit", "--quiet", "-o", fresh("replay").toString(), "--torch-snapshot", o.toString()),
            trace, true),
        new FileWriter("regress --junit",
            (o, in) -> List.of("regress", in.toString(), "--baseline", baselines.toString(), "--quiet", "--junit", o.toString()), suite, true),
        new FileWriter("regress --markdown",
            (o, in) -> List.of("regress", in.toString(), "--baseline", baselines.toString(), "--quiet", "--markdown", o.toString()), suite, true),
        new FileWriter("report -o", (o, in) -> List.of("report", replayFolder.toString(), "-o", o.toString()), null, true),
        new FileWriter("diff -o", (o, in) -> List.of("diff", replayFolder.toString(), replayFolder.toString(), "-o", o.toString()), null, true),
        new FileWriter("calibrate -o", (o, in) -> List.of("calibrate", in.toString(), "--model", "llama-2-7b", "--device", "a100-80", "-o", o.toString()),
            profile(), true),
        new FileWriter("gpu calibrate -o", (o, in) -> List.of("gpu", "calibrate", "--samples", in.toString(), "-o", o.toString()), gpuSamples(), true));
  }

  /** A recorded GPU calibration ({@code kvsim gpu calibrate --samples}'s input; the hand-written synthetic fixture). */
  private static Path gpuSamples() {
    Path p = fx.resolve("gpu-samples.json");
    if (!Files.exists(p)) {
      try (java.io.InputStream in = kvsim.gpu.calibrate.SampleFile.class.getResourceAsStream("synthetic-h100-samples.json")) {
        Files.copy(in, p);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
    return p;
  }

  /** A small per-operation profile in Vidur's format ({@code kvsim calibrate}'s input). */
  private static Path profile() {
    Path p = fx.resolve("mlp.csv");
    if (!Files.exists(p)) {
      try {
        Files.writeString(p, kvsim.devicemodel.ProfileCostModelTestAccess.fixture(new long[] {1, 2, 8, 16, 1024, 2048}, new int[] {1}));
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
    return p;
  }

  private static Path requestTrace() {
    Path p = fx.resolve("requests.jsonl");
    if (!Files.exists(p)) {
      CliRun.of("generate", "requests", "--count", "3", "-o", p.toString()).ok();
    }
    return p;
  }

  private static int freshCount;

  private static synchronized Path fresh(String stem) {
    return fx.resolve("out-" + stem + "-" + (++freshCount));
  }

  private static CliRun run(List<String> args, String... extra) {
    List<String> all = new ArrayList<>(args);
    all.addAll(Arrays.asList(extra));
    return CliRun.of(all.toArray(String[]::new));
  }

  private static void oneLineError(CliRun r, String... parts) {
    assertEquals(2, r.exitCode(), r.out() + r.err());
    String line = r.err().strip();
    assertFalse(line.contains("\n"), "one line: " + line);
    assertTrue(line.startsWith("kvsim: error: "), line);
    for (String p : parts) {
      assertTrue(line.contains(p), "'" + p + "' in: " + line);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fileWriters")
  void aUsersFileIsReplacedOnlyWithForce(FileWriter w) throws IOException {
    Path out = fresh("mine").resolveSibling("mine-" + w.name().replaceAll("[^a-z]+", "-") + ".txt");
    Files.writeString(out, "mine\n");
    oneLineError(run(w.at(out)), out.toString(), "--force");
    assertEquals("mine\n", Files.readString(out), "the user's file is intact");
    run(w.at(out), "--force").ok();
    assertFalse(Files.readString(out, StandardCharsets.ISO_8859_1).equals("mine\n"), "replaced with --force");
    CliRun again = run(w.at(out));
    if (w.marked()) {
      again.ok(); // an earlier output of the same kind is kvsim's own
    } else {
      oneLineError(again, out.toString(), "--force");
    }
    try (Stream<Path> s = Files.list(out.getParent())) {
      assertEquals(List.of(), s.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList(), "no temporary left");
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fileWriters")
  void anOutputOfAnotherKindIsTheUsersToo(FileWriter w) throws IOException {
    Path out = fresh("other");
    // A kvsim output, of a kind this option does not write: its own kind's header would be accepted.
    boolean writesJunit = w.name().contains("--junit");
    Files.writeString(out, writesJunit ? "### kvsim regress: x\n" : "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvsim-regress.x\">\n");
    byte[] before = Files.readAllBytes(out);
    oneLineError(run(w.at(out)), out.toString(), "--force");
    assertArrayEquals(before, Files.readAllBytes(out));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fileWriters")
  void anOutputThatIsAnInputIsRefusedEvenWithForce(FileWriter w) throws IOException {
    if (w.input() == null) {
      return; // the command reads no file
    }
    byte[] before = Files.readAllBytes(w.input());
    oneLineError(run(w.at(w.input()), "--force"), w.input().toString(), "input");
    assertArrayEquals(before, Files.readAllBytes(w.input()), "the input is intact");
    // The same file through another name.
    Path link = fx.resolve("link-" + w.input().getFileName());
    if (!Files.exists(link)) {
      Files.createSymbolicLink(link, w.input());
    }
    oneLineError(run(w.at(link), "--force"), "input");
    assertArrayEquals(before, Files.readAllBytes(w.input()));
  }

  /**
   * A command line that writes a result folder.
   *
   * @param kind the kind its folders record
   * @param runs whether a rerun into an earlier folder of its kind is cheap enough to try here
   */
  record FolderWriter(String name, BiFunction<Path, Path, List<String>> args, Path input, String kind, boolean runs) {
    List<String> at(Path out) {
      return args.apply(out, input);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  static List<FolderWriter> folderWriters() {
    return List.of(
        new FolderWriter("replay -o", (o, in) -> List.of("replay", in.toString(), "-a", "first-fit", "--quiet", "-o", o.toString()), trace, "replay", true),
        new FolderWriter("compare -o", (o, in) -> List.of("compare", in.toString(), "-a", "first-fit", "--quiet", "-o", o.toString()), trace, "replay", true),
        // Without a GPU it stops (exit 3) after checking the folder; GpuReplayCommandTest runs it on an in-memory device.
        new FolderWriter("gpu replay -o", (o, in) -> List.of("gpu", "replay", in.toString(), "-o", o.toString()), trace, "replay", false),
        new FolderWriter("serving -o", (o, in) -> List.of("serving", in.toString(), "--system", "vllm", "-q", "-o", o.toString()), requestTrace(), "serving", true),
        new FolderWriter("capacity -o", (o, in) -> List.of("capacity", in.toString(), "--system", "vllm", "--slo", "ttft.p50<=10s", "--max-rate", "4",
            "--steps", "1", "-o", o.toString()), requestTrace(), "capacity", true),
        new FolderWriter("sweep -o", (o, in) -> List.of("sweep", in.toString(), "-q", "-o", o.toString()), grid, "sweep", true),
        new FolderWriter("tune -o", (o, in) -> List.of("tune", in.toString(), "-a", "buddy", "-q", "-o", o.toString()), trace, "tune", true),
        new FolderWriter("reproduce -o", (o, in) -> List.of("reproduce", "seed000-churn", "-o", o.toString()), null, "reproduction", false),
        new FolderWriter("regress --update --baseline",
            (o, in) -> List.of("regress", in.toString(), "--baseline", o.getParent().toString(), "--update", "--quiet"), suite, "baseline", true));
  }

  private static Path folderFor(FolderWriter w) throws IOException {
    Path base = fresh("folder");
    if (w.name().startsWith("regress")) {
      Files.createDirectories(base);
      return base.resolve("tiny"); // regress writes BASELINE/<suite name>
    }
    return base;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("folderWriters")
  void aFolderOfTheUsersIsNeverWritten(FolderWriter w) throws IOException {
    Path d = folderFor(w);
    Files.createDirectories(d);
    Files.writeString(d.resolve("notes.txt"), "mine\n");
    for (String[] extra : new String[][] {{}, {"--force"}}) {
      if (extra.length > 0 && w.name().startsWith("regress")) {
        continue; // regress --update has no --force for its folder
      }
      oneLineError(run(w.at(d), extra), d.toString(), "not a kvsim result folder");
      assertEquals("mine\n", Files.readString(d.resolve("notes.txt")));
      try (Stream<Path> s = Files.list(d)) {
        assertEquals(1, s.count());
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("folderWriters")
  void aFolderOfAnotherKindIsRefusedEvenWithForce(FolderWriter w) throws IOException {
    Path d = folderFor(w);
    Files.createDirectories(d);
    String other = w.kind().equals("baseline") ? "serving" : "baseline";
    Files.writeString(d.resolve(".kvsim-result"), "kvsim result folder\nkind: " + other + "\nfiles:\nsummary.json\n");
    Files.writeString(d.resolve("summary.json"), "{}\n");
    List<String> args = new ArrayList<>(w.at(d));
    if (!w.name().startsWith("regress")) {
      args.add("--force");
    }
    CliRun r = run(args);
    oneLineError(r, d.toString(), "even with --force");
    assertTrue(r.err().contains(w.kind()) && r.err().contains(other.equals("baseline") ? "regression-baseline" : "serving"), r.err());
    assertEquals("{}\n", Files.readString(d.resolve("summary.json")), "the other folder is intact");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("folderWriters")
  void anEarlierFolderOfTheSameKindIsReplacedUnlessItHoldsAnInput(FolderWriter w) throws IOException {
    if (!w.runs()) {
      return;
    }
    Path d = folderFor(w);
    run(w.at(d)).ok();
    assertEquals(w.kind(), kindIn(d));
    run(w.at(d)).ok();
    assertEquals(w.kind(), kindIn(d));
    if (w.input() == null || w.name().startsWith("regress")) {
      return;
    }
    // The input, moved into the earlier result folder: replacing the folder would delete it.
    Path inside = d.resolve("input-" + w.input().getFileName());
    Files.copy(w.input(), inside);
    Files.writeString(d.resolve(".kvsim-result"), Files.readString(d.resolve(".kvsim-result")) + inside.getFileName() + "\n");
    List<String> args = new ArrayList<>(w.at(d));
    args.set(args.indexOf(w.input().toString()), inside.toString());
    oneLineError(run(args, "--force"), d.toString(), "input");
    assertTrue(Files.exists(inside));
  }

  private static String kindIn(Path folder) throws IOException {
    for (String line : Files.readAllLines(folder.resolve(".kvsim-result"))) {
      if (line.startsWith("kind: ")) {
        return line.substring("kind: ".length());
      }
    }
    return null;
  }

  /** Options and parameters of type Path that only read; every other one must be walked above. */
  private static final Set<String> READS = Set.of(
      "blocks SCRIPT.jsonl", "import azure FILE", "import mooncake FILE", "import lengths FILE", "import burstgpt FILE",
      "import torch-snapshot FILE", "regress SUITE", "report RUN_DIR", "reproduce --snapshots", "sweep GRID.yaml", "torch-replay FILE",
      "torch-inspect FILE", "calibrate PROFILE", "gpu calibrate --samples", "diff A", "diff B", "convert IN");

  @Test
  void everyOptionThatTakesAPathIsWalkedOrKnownToRead() {
    Set<String> walked = new TreeSet<>();
    fileWriters().forEach(w -> walked.add(w.name().replace(" --format azure-csv", "")));
    folderWriters().forEach(w -> walked.add(w.name()));
    Set<String> found = new TreeSet<>();
    collect(KvSim.newCommandLine(), "", found);
    Set<String> unknown = new TreeSet<>();
    for (String f : found) {
      if (!READS.contains(f) && walked.stream().noneMatch(w -> w.equals(f) || (w + " ").startsWith(f + " ") || f.endsWith("--baseline") && w.startsWith("regress --update"))) {
        unknown.add(f);
      }
    }
    assertEquals(Set.of(), unknown, "options that take a path, neither walked by this test nor known to only read");
    assertTrue(found.containsAll(Set.of("generate churn -o", "serving --emit-trace", "regress --junit", "replay --torch-snapshot")), found.toString());
  }

  private static void collect(CommandLine cl, String prefix, Set<String> out) {
    String name = prefix.isEmpty() ? "" : prefix.strip();
    for (CommandLine.Model.OptionSpec o : cl.getCommandSpec().options()) {
      if (takesPath(o) || Arrays.asList(o.names()).contains("-o")) {
        out.add(name + " " + (Arrays.asList(o.names()).contains("-o") ? "-o" : o.longestName()));
      }
    }
    for (CommandLine.Model.PositionalParamSpec p : cl.getCommandSpec().positionalParameters()) {
      if (takesPath(p)) {
        out.add(name + " " + p.paramLabel());
      }
    }
    for (CommandLine sub : cl.getSubcommands().values()) {
      if (!sub.getCommandName().equals("help")) {
        collect(sub, name + " " + sub.getCommandName(), out);
      }
    }
  }

  private static boolean takesPath(CommandLine.Model.ArgSpec a) {
    return a.type() == Path.class || (a.auxiliaryTypes().length > 0 && a.auxiliaryTypes()[0] == Path.class);
  }
}

package kvsim.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The training run behind the launcher's start-up cache: a few small runs of the commands people
 * run most (trace files, binary and JSONL, written and replayed among them), in one process, so
 * that the JVM can record which classes they load and which methods they run hot (Note [Start-up
 * cache] in the {@code kvsim} launcher). It writes only under the folder it is given and prints
 * nothing; its exit status is non-zero when any run failed, and the launcher then keeps no cache.
 *
 * <p>Usage: {@code java -cp kvsim.jar kvsim.cli.Training DIR}.
 */
public final class Training {
  private Training() {}

  /**
   * Runs the training commands under {@code args[0]}; with {@code blocks} after it, those of {@link
   * #runBlocks}, with {@code sweeps}, those of {@link #runSweeps}.
   */
  public static void main(String[] args) throws IOException {
    String kind = args.length == 2 ? args[1] : "";
    if (args.length < 1 || args.length > 2 || !List.of("", "blocks", "sweeps").contains(kind)) {
      System.err.println("usage: java -cp kvsim.jar kvsim.cli.Training DIR [blocks|sweeps]");
      System.exit(KvSim.EXIT_BAD_INPUT);
    }
    Path dir = Path.of(args[0]);
    int failed = switch (kind) {
      case "blocks" -> runBlocks(dir);
      case "sweeps" -> runSweeps(dir);
      default -> run(dir);
    };
    System.exit(failed == 0 ? KvSim.EXIT_OK : KvSim.EXIT_FAILED);
  }

  /** Runs the training commands under {@code dir}; returns how many failed (each is named on standard error). */
  static int run(Path dir) throws IOException {
    Files.createDirectories(dir);
    Path script = dir.resolve("script.jsonl");
    Files.write(script, blockScript(60, 7), StandardCharsets.UTF_8);
    return runAll(List.of(
        new String[] {"--help"},
        new String[] {"compare", "churn:ops=300", "--quiet", "-o", dir.resolve("compare").toString()},
        sweep(dir),
        longSweep(dir),
        new String[] {"blocks", script.toString(), "-o", dir.resolve("blocks.jsonl").toString()},
        new String[] {"serving", "requests:preset=sharegpt,rate=2,count=60", "--system", "vllm", "--quiet", "-o", dir.resolve("serving").toString()},
        new String[] {"generate", "churn", "--ops", "20000", "-o", dir.resolve("trace.kvt").toString()},
        new String[] {"replay", dir.resolve("trace.kvt").toString(), "-a", "first-fit", "--quiet", "--no-report", "-o", dir.resolve("replay-kvt").toString()},
        new String[] {"generate", "churn", "--ops", "20000", "-o", dir.resolve("trace.jsonl").toString()},
        new String[] {"replay", dir.resolve("trace.jsonl").toString(), "-a", "first-fit", "--quiet", "--no-report", "-o", dir.resolve("replay-jsonl").toString()}));
  }

  /** The 1,000-operation seed sweep of both the shared and the sweeps training, into {@code dir/sweep}. */
  private static String[] sweep(Path dir) {
    return new String[] {"replay", "churn:ops=1000", "--seeds", "1..40", "-a", "first-fit", "--quiet", "-o", dir.resolve("sweep").toString()};
  }

  /** The 5,000-operation seed sweep of both trainings, into {@code dir/sweep-long}. */
  private static String[] longSweep(Path dir) {
    return new String[] {"replay", "churn:ops=5000", "--seeds", "1..20", "-a", "first-fit", "--quiet", "-o", dir.resolve("sweep-long").toString()};
  }

  /**
   * Runs the training of the launcher's cache for seed sweeps ({@code replay --seeds}; Note [A cache
   * for blocks] in the launcher) under {@code dir}: the two sweeps of the shared training, and one
   * without its report; returns how many failed.
   */
  static int runSweeps(Path dir) throws IOException {
    Files.createDirectories(dir);
    return runAll(List.of(
        sweep(dir),
        longSweep(dir),
        new String[] {"replay", "churn:ops=2000", "--seeds", "1..10", "-a", "first-fit,buddy", "--quiet", "--no-report", "-o", dir.resolve("sweep-data").toString()}));
  }

  /**
   * Runs the training of the launcher's cache for {@code kvsim blocks} alone (Note [A cache for
   * blocks] in the launcher) under {@code dir}: the benchmark-shaped script to a file and to
   * standard output, a v0 script (fork, copy-on-write, swapping, a fractional watermark) with the
   * invariant checker, and vLLM v1's scheduler stepping; returns how
   * many failed.
   */
  static int runBlocks(Path dir) throws IOException {
    Files.createDirectories(dir);
    Path script = Files.write(dir.resolve("script.jsonl"), blockScript(60, 7), StandardCharsets.UTF_8);
    Path v0 = Files.write(dir.resolve("v0.jsonl"), List.of(
        "# v0: fork, copy-on-write, swapping",
        "{\"op\":\"config\",\"mode\":\"v0\",\"num_blocks\":10,\"block_size\":4,\"enable_caching\":true,\"watermark\":0.1,\"num_host_blocks\":4}",
        "{\"op\":\"add\",\"req\":\"P\",\"prompt_range\":[0,6]}",
        "{\"op\":\"admit\",\"req\":\"P\"}",
        "{\"op\":\"fork\",\"parent\":\"P\",\"child\":\"C\"}",
        "{\"op\":\"decode\",\"req\":\"P\",\"token\":6}",
        "{\"op\":\"swap_out\",\"req\":\"C\"}",
        "{\"op\":\"swap_in\",\"req\":\"C\"}",
        "{\"op\":\"state\"}",
        "{\"op\":\"free\",\"req\":\"C\"}",
        "{\"op\":\"free\",\"req\":\"P\"}"), StandardCharsets.UTF_8);
    List<String> steps = new ArrayList<>(List.of(
        "{\"op\":\"config\",\"num_blocks\":5,\"block_size\":4,\"max_num_batched_tokens\":10,\"max_num_seqs\":3}",
        "{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,7],\"max_tokens\":4,\"output\":[100,101,102,103]}",
        "{\"op\":\"submit\",\"req\":\"B\",\"prompt_range\":[100,107],\"max_tokens\":3}"));
    for (int k = 0; k < 8; k++) {
      steps.add("{\"op\":\"step\"}");
    }
    steps.add("{\"op\":\"state\"}");
    Path scheduler = Files.write(dir.resolve("steps.jsonl"), steps, StandardCharsets.UTF_8);
    return runAll(List.of(
        new String[] {"blocks", script.toString(), "-o", dir.resolve("blocks.jsonl").toString()},
        new String[] {"blocks", script.toString()},
        new String[] {"blocks", "--check", v0.toString(), "-o", dir.resolve("v0.out.jsonl").toString()},
        new String[] {"blocks", scheduler.toString(), "-o", dir.resolve("steps.out.jsonl").toString()}));
  }

  /** Runs each command with standard output and error discarded; returns how many failed (each named on standard error). */
  private static int runAll(List<String[]> runs) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8);
    int failed = 0;
    for (String[] run : runs) {
      System.setOut(nowhere);
      System.setErr(nowhere);
      int status;
      try {
        // Plain arguments run as main runs them: without picocli (Note [Plain arguments] on PlainArguments).
        Integer plain = KvSim.runPlain(run);
        status = plain != null ? plain : KvSim.newCommandLine(run).execute(run);
      } finally {
        System.setOut(out);
        System.setErr(err);
      }
      if (status != KvSim.EXIT_OK) {
        err.println("kvsim training: " + String.join(" ", run) + " exited with " + status);
        failed++;
      }
    }
    return failed;
  }

  /**
   * A block script in the shape of the block benchmark's: {@code requests} prompts of 240 tokens,
   * every other one sharing a 120-token prefix, each admitted, given one token, decoded 16 times
   * and freed, with at most eight live at once.
   */
  static List<String> blockScript(int requests, long seed) {
    SplittableRandom rng = new SplittableRandom(seed);
    List<String> lines = new ArrayList<>();
    lines.add("{\"op\":\"config\",\"num_blocks\":400,\"block_size\":16,\"enable_caching\":true,\"show_free_queue\":false}");
    int[] prefix = tokens(rng, 120);
    List<String> live = new ArrayList<>();
    for (int r = 0; r < requests; r++) {
      String id = "R" + r;
      int[] own = tokens(rng, 240);
      if (r % 2 == 0) {
        System.arraycopy(prefix, 0, own, 0, prefix.length);
      }
      StringBuilder prompt = new StringBuilder();
      for (int k = 0; k < own.length; k++) {
        prompt.append(k == 0 ? "" : ",").append(own[k]);
      }
      lines.add("{\"op\":\"add\",\"req\":\"" + id + "\",\"prompt\":[" + prompt + "]}");
      lines.add("{\"op\":\"admit\",\"req\":\"" + id + "\"}");
      lines.add("{\"op\":\"append\",\"req\":\"" + id + "\",\"tokens\":[" + rng.nextInt(32000) + "]}");
      for (int d = 0; d < 16; d++) {
        lines.add("{\"op\":\"decode\",\"req\":\"" + id + "\",\"token\":" + rng.nextInt(32000) + "}");
      }
      live.add(id);
      if (live.size() > 8) {
        lines.add("{\"op\":\"free\",\"req\":\"" + live.remove(0) + "\"}");
      }
    }
    for (String id : live) {
      lines.add("{\"op\":\"free\",\"req\":\"" + id + "\"}");
    }
    return lines;
  }

  private static int[] tokens(SplittableRandom rng, int n) {
    int[] t = new int[n];
    for (int k = 0; k < n; k++) {
      t[k] = rng.nextInt(32000);
    }
    return t;
  }
}

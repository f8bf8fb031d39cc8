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
 * run most, in one process, so that the JVM can record which classes they load and which methods
 * they run hot (Note [Start-up cache] in the {@code kvsim} launcher). It writes only under the
 * folder it is given and prints nothing; its exit status is non-zero when any run failed, and the
 * launcher then keeps no cache.
 *
 * <p>Usage: {@code java -cp kvsim.jar kvsim.cli.Training DIR}.
 */
public final class Training {
  private Training() {}

  /** Runs the training commands under {@code args[0]}. */
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: java -cp kvsim.jar kvsim.cli.Training DIR");
      System.exit(KvSim.EXIT_BAD_INPUT);
    }
    System.exit(run(Path.of(args[0])) == 0 ? KvSim.EXIT_OK : KvSim.EXIT_FAILED);
  }

  /** Runs the training commands under {@code dir}; returns how many failed (each is named on standard error). */
  static int run(Path dir) throws IOException {
    Files.createDirectories(dir);
    Path script = dir.resolve("script.jsonl");
    Files.write(script, blockScript(60, 7), StandardCharsets.UTF_8);
    List<String[]> runs = List.of(
        new String[] {"--help"},
        new String[] {"compare", "churn:ops=300", "--quiet", "-o", dir.resolve("compare").toString()},
        new String[] {"replay", "churn:ops=1000", "--seeds", "1..40", "-a", "first-fit", "--quiet", "-o", dir.resolve("sweep").toString()},
        new String[] {"replay", "churn:ops=5000", "--seeds", "1..20", "-a", "first-fit", "--quiet", "-o", dir.resolve("sweep-long").toString()},
        new String[] {"blocks", script.toString(), "-o", dir.resolve("blocks.jsonl").toString()},
        new String[] {"serving", "requests:preset=sharegpt,rate=2,count=60", "--system", "vllm", "--quiet", "-o", dir.resolve("serving").toString()});
    PrintStream out = System.out;
    PrintStream err = System.err;
    PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8);
    int failed = 0;
    for (String[] run : runs) {
      System.setOut(nowhere);
      System.setErr(nowhere);
      int status;
      try {
        // A block script runs as main runs it: without picocli (Note [Blocks without a command line]).
        Integer plain = run[0].equals("blocks") ? BlocksCommand.runPlain(run, System.out, System.err) : null;
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

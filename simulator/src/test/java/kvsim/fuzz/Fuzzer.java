package kvsim.fuzz;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import kvsim.core.InputException;

/**
 * Runs one reader fuzz target ({@link ReaderFuzzTest}): feeds it its seed corpus, then mutated
 * inputs ({@link Mutator}), and judges every execution by the oracle of Note [Reader oracle].
 *
 * <p>Note [Reader oracle]: an input is either accepted (the reader reads it to the end) or rejected
 * with a {@link InputException} whose message is non-empty, one line (no '\n' or '\r'), starts
 * with the file's name, is in kvsim's words (none of Jackson's or Java's phrases such as
 * "Unrecognized token" or "For input string"), and, for a line-oriented format, names a line ({@code file:LINE:}) unless
 * the problem is the whole file's. Anything else is a finding: another exception (a
 * NullPointerException, NumberFormatException, a Jackson exception leaking, an IOException that is
 * no InputException), an Error (OutOfMemoryError, StackOverflowError), or a hang, which is an
 * execution that takes longer than the per-input limit.
 *
 * <p>Note [Fuzz counts]: the number of tries per target is fixed for the build ({@code tries} of
 * the target, chosen so that the whole fuzz suite stays near a minute on a 2-core machine) and the
 * seed is fixed, so a build is reproducible. System properties run longer or other campaigns:
 * {@code kvsim.fuzz.tries} (tries per target), {@code kvsim.fuzz.seed}, {@code
 * kvsim.fuzz.timeout-ms} (the per-input limit, default 10000: generous, since a shared build
 * machine may be loaded, and the slowest inputs read take about a second). Each target prints its
 * executions and how many inputs were accepted and rejected. Each distinct finding (exception
 * class and first kvsim frame) is reduced to a small input by removing chunks while it still fails
 * the same way, written to {@code target/fuzz-findings/}, and reported; a run stops at the first
 * hang, whose thread cannot be stopped.
 */
final class Fuzzer {
  /** Findings reported per target before the run stops. */
  private static final int MAX_FINDINGS = 12;
  /** Executions spent reducing one finding. */
  private static final int REDUCE_BUDGET = 3000;

  /** A reader driven as the product drives it; returns normally when the input is accepted. */
  interface Target {
    void read(Path file) throws Exception;
  }

  /**
   * What to fuzz: a name for reports, the file name inputs are written to, the reader, whether
   * messages must name a line, which whole-file messages may leave it out, the seed corpus and
   * the dictionary of field names and keywords.
   */
  record Spec(String name, String fileName, Target target, boolean lineOriented, Pattern wholeFile, List<byte[]> corpus, List<String> dictionary) {}

  /** The counts of one run. */
  record Counts(long executions, long accepted, long rejected, int longestMessage, long slowestMillis, long millis) {}

  private final Spec spec;
  private final Path file;
  private ExecutorService executor = newExecutor();
  private long accepted;
  private long rejected;
  private int longestMessage;
  private long slowestNanos;
  private byte[] slowest;

  Fuzzer(Spec spec, Path dir) {
    this.spec = spec;
    this.file = dir.resolve(spec.fileName());
  }

  /** Tries per target: the system property, or the build's count. */
  static long tries(long build) {
    String p = System.getProperty("kvsim.fuzz.tries");
    return p == null || p.isBlank() ? build : Long.parseLong(p.trim());
  }

  private static long seed() {
    String p = System.getProperty("kvsim.fuzz.seed");
    return p == null || p.isBlank() ? 20261125L : Long.parseLong(p.trim());
  }

  private static long timeoutMillis() {
    String p = System.getProperty("kvsim.fuzz.timeout-ms");
    return p == null || p.isBlank() ? 10_000 : Long.parseLong(p.trim());
  }

  /** Runs the corpus, then {@code tries} mutated inputs; returns the counts, or throws listing the findings. */
  Counts run(long tries) throws Exception {
    long t0 = System.nanoTime();
    long seed = seed() ^ spec.name().hashCode();
    Mutator mutator = new Mutator(spec.corpus(), spec.dictionary());
    Map<String, Finding> findings = new LinkedHashMap<>();
    long executions = 0;
    try {
      for (int i = 0; i < spec.corpus().size() && findings.size() < MAX_FINDINGS; i++) {
        executions++;
        check(spec.corpus().get(i), "corpus member " + i, findings);
      }
      for (long i = 0; i < tries && findings.size() < MAX_FINDINGS; i++) {
        byte[] input = mutator.next(new SplittableRandom(seed + i * 0x9E3779B97F4A7C15L));
        executions++;
        if (check(input, "try " + i + " (seed " + seed() + ")", findings) && findings.values().stream().anyMatch(f -> f.hang)) {
          break; // a hung execution keeps its thread; stop here
        }
      }
    } finally {
      executor.shutdownNow();
    }
    long millis = (System.nanoTime() - t0) / 1_000_000;
    Counts c = new Counts(executions, accepted, rejected, longestMessage, slowestNanos / 1_000_000, millis);
    System.out.printf(Locale.ROOT,
        "fuzz %-15s %8d executions: %8d accepted, %8d rejected with a one-line message (longest %d chars); %d findings; %.1f s, slowest input %d ms%n",
        spec.name(), c.executions(), c.accepted(), c.rejected(), c.longestMessage(), findings.size(), millis / 1000.0, c.slowestMillis());
    if (slowest != null && Boolean.getBoolean("kvsim.fuzz.save-slowest")) {
      Path dir = Path.of("target", "fuzz-findings");
      Files.createDirectories(dir);
      Files.write(dir.resolve(spec.name() + "-slowest.bin"), slowest);
    }
    if (!findings.isEmpty()) {
      StringBuilder sb = new StringBuilder(spec.name() + ": " + findings.size() + " finding(s)\n");
      for (Finding f : findings.values()) {
        sb.append("\n").append(f.report());
      }
      throw new AssertionError(sb.toString());
    }
    return c;
  }

  /** Runs one input; returns true when it is a new finding. */
  private boolean check(byte[] input, String where, Map<String, Finding> findings) throws IOException {
    Outcome o = execute(input);
    if (o.problem == null) {
      if (o.message == null) {
        accepted++;
      } else {
        rejected++;
        longestMessage = Math.max(longestMessage, o.message.length());
      }
      return false;
    }
    if (findings.containsKey(o.signature)) {
      return false;
    }
    byte[] small = o.hang ? input : reduce(input, o.signature);
    Outcome again = o.hang ? o : execute(small);
    Finding f = new Finding(o.signature, where, small, again.problem == null ? o.problem : again.problem, o.hang);
    f.save(spec.name(), findings.size());
    findings.put(o.signature, f);
    return true;
  }

  /** Removes chunks of the input while it still fails with {@code signature} (delta debugging, greedy). */
  private byte[] reduce(byte[] input, String signature) throws IOException {
    byte[] best = input;
    int budget = REDUCE_BUDGET;
    for (int chunk = Math.max(1, best.length / 2); chunk >= 1 && budget > 0; chunk /= 2) {
      boolean progress = true;
      while (progress && budget > 0) {
        progress = false;
        for (int at = 0; at + chunk <= best.length && budget > 0; ) {
          byte[] candidate = Mutator.splice(best, at, chunk, new byte[0]);
          budget--;
          Outcome o = execute(candidate);
          if (signature.equals(o.signature) && !o.hang) {
            best = candidate;
            progress = true;
          } else {
            at += chunk;
          }
        }
      }
      if (chunk == 1) {
        break;
      }
    }
    return best;
  }

  /** One execution's outcome: accepted (no message), rejected (message), or a problem. */
  private record Outcome(String message, String problem, String signature, boolean hang) {}

  private Outcome execute(byte[] input) throws IOException {
    Files.write(file, input);
    long t0 = System.nanoTime();
    Future<?> run = executor.submit(() -> {
      spec.target().read(file);
      return null;
    });
    try {
      try {
        run.get(timeoutMillis(), TimeUnit.MILLISECONDS);
      } finally {
        long nanos = System.nanoTime() - t0;
        if (nanos > slowestNanos) {
          slowestNanos = nanos;
          slowest = input;
        }
      }
      return new Outcome(null, null, null, false);
    } catch (TimeoutException e) {
      run.cancel(true);
      executor.shutdownNow();
      executor = newExecutor(); // the hung thread is a daemon and is left behind
      return new Outcome(null, "no answer within " + timeoutMillis() + " ms (a hang)", "hang", true);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    } catch (ExecutionException e) {
      Throwable t = e.getCause();
      if (t instanceof InputException ie) {
        String bad = judge(ie.getMessage());
        if (bad == null) {
          return new Outcome(ie.getMessage(), null, null, false);
        }
        return new Outcome(null, "InputException with " + bad + ": " + quote(ie.getMessage()) + "\n" + stack(t), "message: " + bad, false);
      }
      return new Outcome(null, stack(t), signature(t), false);
    }
  }

  /** Phrases of Jackson's and Java's messages that kvsim's own words replace (core.JsonProblem). */
  private static final Pattern PARSER_WORDS =
      Pattern.compile("Unrecognized token|was expecting|\\(code \\d+\\)|at \\[Source|For input string|JsonToken\\.|com\\.fasterxml|java\\.lang\\.");

  /** Returns what is wrong with an InputException's message, or null when it obeys Note [Reader oracle]. */
  private String judge(String message) {
    String source = file.toString();
    if (message == null || message.isBlank()) {
      return "an empty message";
    }
    if (message.indexOf('\n') >= 0 || message.indexOf('\r') >= 0) {
      return "a message of several lines";
    }
    if (!message.startsWith(source)) {
      return "a message that does not start with the file's name";
    }
    if (PARSER_WORDS.matcher(message).find()) {
      return "the parser's own words (Jackson's or Java's) instead of kvsim's";
    }
    if (spec.lineOriented() && !message.startsWith(source + ":")) {
      return "a message without a line (unexpected ':' after the file name)";
    }
    if (spec.lineOriented() && !message.substring(source.length()).matches("(?s):[1-9][0-9]*: .*")) {
      if (spec.wholeFile() == null || !spec.wholeFile().matcher(message.substring(source.length())).find()) {
        return "a message without a line number";
      }
    }
    return null;
  }

  /** The exception class and the first frame in kvsim's main code, which tells findings apart. */
  private static String signature(Throwable t) {
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().startsWith("kvsim.") && !e.getClassName().startsWith("kvsim.fuzz.")) {
        return t.getClass().getName() + " at " + e.getClassName() + "." + e.getMethodName() + ":" + e.getLineNumber();
      }
    }
    return t.getClass().getName();
  }

  private static String stack(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    String[] lines = w.toString().split("\n");
    StringBuilder sb = new StringBuilder();
    int kept = 0;
    for (String l : lines) {
      if (l.contains("kvsim.fuzz.") || kept > 14) {
        break;
      }
      sb.append(l).append('\n');
      kept++;
    }
    return sb.toString();
  }

  private static ExecutorService newExecutor() {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "fuzz-target");
      t.setDaemon(true);
      return t;
    });
  }

  /** A Java string literal of {@code text}, escaped so that it pastes into a test. */
  static String quote(String text) {
    StringBuilder sb = new StringBuilder("\"");
    for (int i = 0; i < text.length() && i < 2000; i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20 || c > 0x7e) {
            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    if (text.length() > 2000) {
      sb.append("...(").append(text.length()).append(" chars)");
    }
    return sb.append('"').toString();
  }

  /** One distinct finding, reduced. */
  private static final class Finding {
    final String signature;
    final String where;
    final byte[] input;
    final String problem;
    final boolean hang;
    Path saved;

    Finding(String signature, String where, byte[] input, String problem, boolean hang) {
      this.signature = signature;
      this.where = where;
      this.input = input;
      this.problem = problem;
      this.hang = hang;
    }

    void save(String target, int n) throws IOException {
      Path dir = Path.of("target", "fuzz-findings");
      Files.createDirectories(dir);
      saved = dir.resolve(target + "-" + n + ".bin");
      Files.write(saved, input);
    }

    String report() {
      String text;
      try {
        text = quote(StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(input)).toString());
      } catch (CharacterCodingException e) {
        StringBuilder hex = new StringBuilder("bytes ");
        for (int i = 0; i < input.length && i < 2000; i++) {
          hex.append(String.format(Locale.ROOT, "%02x", input[i] & 0xff));
        }
        text = hex.toString();
      }
      return "* " + signature + " (" + where + ", " + input.length + " bytes, saved as " + saved + ")\n  input: " + text + "\n  " + problem.replace("\n", "\n  ") + "\n";
    }
  }
}

package kvsim.cli;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * The progress lines every long command prints on stderr (issue "CLI consistency"): what is done
 * of the known total, the share, the time elapsed and an estimate of the time left, e.g. {@code
 * kvsim: capacity: 12/48 probes, 25 %, 31 s elapsed, ETA 1 min 33 s}; where the total is not
 * known, the count and the time elapsed only.
 *
 * <p>Note [Progress pacing]: a short run prints nothing, so the first line comes only once {@link
 * #FIRST_LINE_NANOS} have passed, and then at most one line per {@link #EVERY_NANOS}, whichever
 * thread reports; the last unit of work prints its line (with no ETA) when a line was printed
 * before, so that a user who saw progress sees it end. Lines go to stderr only: stdout and every
 * file stay the same bytes with or without progress, and {@code -q} ({@link QuietOption}) prints
 * none. The ETA is linear: the elapsed time per unit done times the units left.
 */
final class Progress {
  /** Time before the first line: a run shorter than this prints nothing. */
  static final long FIRST_LINE_NANOS = 2_500_000_000L;

  /** The least time between two lines. */
  static final long EVERY_NANOS = 5_000_000_000L;

  private final PrintWriter err;
  private final String command;
  private final String unit;
  private final LongSupplier clock;
  private final long startNanos;
  private long lastLineNanos = Long.MIN_VALUE;
  private boolean printed;

  /**
   * Progress of {@code command} counted in {@code unit} (plural: "probes", "runs", "cells",
   * "requests finished"), timed by {@code clock} (nanoseconds; {@link System#nanoTime} outside tests).
   */
  Progress(PrintWriter err, String command, String unit, LongSupplier clock) {
    this.err = err;
    this.command = command;
    this.unit = unit;
    this.clock = clock;
    this.startNanos = clock.getAsLong();
  }

  /** Progress on the wall clock, or null (no progress) when {@code quiet}. */
  static Progress of(boolean quiet, PrintWriter err, String command, String unit) {
    return quiet ? null : new Progress(err, command, unit, System::nanoTime);
  }

  /**
   * Reports {@code done} of {@code total} units ({@code total} &lt;= 0: not known), with an
   * optional {@code detail} appended in parentheses; prints a line when Note [Progress pacing]
   * allows. Safe to call from several threads.
   */
  synchronized void update(long done, long total, String detail) {
    long now = clock.getAsLong();
    long elapsed = now - startNanos;
    boolean last = total > 0 && done >= total;
    if (last ? !printed : (elapsed < FIRST_LINE_NANOS || (printed && now - lastLineNanos < EVERY_NANOS))) {
      return;
    }
    printed = true;
    lastLineNanos = now;
    err.println(line(command, unit, done, total, elapsed) + (detail == null ? "" : " (" + detail + ")"));
    err.flush();
  }

  /** As {@link #update(long, long, String)} with no detail. */
  void update(long done, long total) {
    update(done, total, null);
  }

  /**
   * Returns the line for {@code done} of {@code total} units after {@code elapsedNanos}: {@code
   * kvsim: CMD: 12/48 UNIT, 25 %, 31 s elapsed, ETA 1 min 33 s}; no ETA before the first unit or
   * after the last; {@code kvsim: CMD: 12 UNIT, 31 s elapsed} when the total is not known.
   */
  static String line(String command, String unit, long done, long total, long elapsedNanos) {
    StringBuilder b = new StringBuilder("kvsim: ").append(command).append(": ");
    if (total <= 0) {
      b.append(done).append(' ').append(unit).append(", ").append(duration(elapsedNanos)).append(" elapsed");
      return b.toString();
    }
    b.append(done).append('/').append(total).append(' ').append(unit).append(", ")
        .append(String.format(Locale.ROOT, "%d %%", (long) Math.floor(100.0 * done / total))).append(", ")
        .append(duration(elapsedNanos)).append(" elapsed");
    if (done > 0 && done < total) {
      b.append(", ETA ").append(duration((long) ((double) elapsedNanos / done * (total - done))));
    }
    return b.toString();
  }

  /** Returns {@code 31 s}, {@code 1 min 33 s} or {@code 2 h 5 min}, rounded to whole seconds. */
  static String duration(long nanos) {
    long s = Math.max(0, Math.round(nanos / 1e9));
    if (s < 60) {
      return s + " s";
    }
    if (s < 3600) {
      return s / 60 + " min " + s % 60 + " s";
    }
    return s / 3600 + " h " + s % 3600 / 60 + " min";
  }
}

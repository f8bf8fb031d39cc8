package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The progress lines of long commands (Note [Progress pacing] on {@link Progress}), on a fake clock. */
class ProgressTest {
  private static final long S = 1_000_000_000L;

  /** A clock the test sets. */
  private static final class FakeClock {
    long nanos = 1_000 * S;

    long now() {
      return nanos;
    }
  }

  @Test
  void aLineGivesDoneOfTotalTheShareTheTimeElapsedAndTheEta() {
    assertEquals("kvsim: capacity: 12/48 probes, 25 %, 31 s elapsed, ETA 1 min 33 s", Progress.line("capacity", "probes", 12, 48, 31 * S));
    assertEquals("kvsim: sweep: 0/10 cells, 0 %, 3 s elapsed", Progress.line("sweep", "cells", 0, 10, 3 * S));
    assertEquals("kvsim: regress: 49/49 runs, 100 %, 1 h 2 min elapsed", Progress.line("regress", "runs", 49, 49, 3720 * S));
    assertEquals("kvsim: serving: 1200 requests, 4 s elapsed", Progress.line("serving", "requests", 1200, 0, 4 * S));
  }

  @Test
  void durationsAreRoundedToSecondsMinutesOrHours() {
    assertEquals("0 s", Progress.duration(0));
    assertEquals("59 s", Progress.duration(59 * S + S / 3));
    assertEquals("1 min 0 s", Progress.duration(60 * S));
    assertEquals("59 min 59 s", Progress.duration(3599 * S));
    assertEquals("2 h 5 min", Progress.duration(2 * 3600 * S + 5 * 60 * S + 7 * S));
  }

  @Test
  void aShortRunPrintsNothingThenLinesComeAtMostEveryFiveSecondsAndTheLastOneEnds() {
    FakeClock clock = new FakeClock();
    StringWriter text = new StringWriter();
    Progress p = new Progress(new PrintWriter(text), "capacity", "probes", clock::now);
    clock.nanos += 2 * S;
    p.update(1, 4); // before the first 2.5 s: nothing
    clock.nanos += 1 * S;
    p.update(2, 4); // 3 s: the first line
    clock.nanos += 4 * S;
    p.update(3, 4); // 4 s after the last line: nothing
    clock.nanos += 2 * S;
    p.update(3, 4, "vllm"); // 6 s after it: a line with its detail
    clock.nanos += 1 * S;
    p.update(4, 4); // the last: always, once a line was printed
    assertEquals(List.of(
        "kvsim: capacity: 2/4 probes, 50 %, 3 s elapsed, ETA 3 s",
        "kvsim: capacity: 3/4 probes, 75 %, 9 s elapsed, ETA 3 s (vllm)",
        "kvsim: capacity: 4/4 probes, 100 %, 10 s elapsed"), text.toString().lines().toList());
  }

  @Test
  void aRunThatEndsBeforeTheFirstLinePrintsNothingAtAll() {
    FakeClock clock = new FakeClock();
    StringWriter text = new StringWriter();
    Progress p = new Progress(new PrintWriter(text), "sweep", "cells", clock::now);
    clock.nanos += 2 * S;
    p.update(10, 10);
    assertEquals("", text.toString());
  }

  @Test
  void quietMeansNoProgress() {
    assertEquals(null, Progress.of(true, new PrintWriter(new StringWriter()), "replay", "runs"));
  }
}

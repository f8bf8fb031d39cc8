package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The progress line of a long run on stderr. */
class RunsProgressTest {
  @Test
  void givesTheEventsAndTheirRateInMillions() {
    assertEquals("kvsim: first-fit: 7.2 M events, 1.80 M events/s", Runs.progressLine("first-fit", 7_200_000, 4_000_000_000L));
    assertEquals("kvsim: paged: 1.0 M events, 0.25 M events/s", Runs.progressLine("paged", 1_000_000, 4_000_000_000L));
  }
}

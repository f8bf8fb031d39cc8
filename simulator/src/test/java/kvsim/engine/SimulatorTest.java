package kvsim.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** The event core fires events in (time, priority, insertion sequence) order and never goes back in time. */
class SimulatorTest {

  /** An event that records its label when it fires. */
  private static final class Mark extends Event {
    final String label;
    final List<String> log;

    Mark(String label, int priority, List<String> log) {
      super(priority);
      this.label = label;
      this.log = log;
    }

    @Override
    protected void actions() {
      log.add(label);
    }
  }

  @Test
  void eventsFireByTimeThenPriorityThenInsertionOrder() {
    Simulator sim = new Simulator();
    List<String> log = new ArrayList<>();
    sim.scheduleAt(new Mark("t20", 0, log), 20);
    sim.scheduleAt(new Mark("t10-second", 0, log), 10);
    sim.scheduleAt(new Mark("t10-third", 0, log), 10);
    sim.scheduleAt(new Mark("t10-urgent", -1, log), 10);
    sim.scheduleAt(new Mark("t5-late-priority", 9, log), 5);
    sim.run();
    assertEquals(List.of("t5-late-priority", "t10-urgent", "t10-second", "t10-third", "t20"), log);
    assertEquals(20, sim.nowNanos());
    assertEquals(5, sim.eventsFired());
  }

  @Test
  void schedulingIntoThePastOrTwiceIsRefused() {
    Simulator sim = new Simulator();
    List<String> log = new ArrayList<>();
    Mark later = new Mark("later", 0, log);
    Event probe = new Event() {
      @Override
      protected void actions() {
        assertThrows(IllegalArgumentException.class, () -> sim.scheduleAt(new Mark("past", 0, log), 99));
        assertThrows(IllegalArgumentException.class, () -> sim.scheduleAfter(new Mark("negative", 0, log), -1));
        sim.scheduleAfter(later, 5);
        assertThrows(IllegalStateException.class, () -> sim.scheduleAt(later, 200));
      }
    };
    sim.scheduleAt(probe, 100);
    sim.run();
    assertEquals(List.of("later"), log);
    assertEquals(105, sim.nowNanos());
  }

  @Test
  void aFiredEventMayRescheduleItselfAndCancelledEventsNeverFire() {
    Simulator sim = new Simulator();
    List<Long> times = new ArrayList<>();
    List<String> log = new ArrayList<>();
    Mark cancelled = new Mark("cancelled", 0, log);
    sim.scheduleAt(cancelled, 25);
    Event ticker = new Event() {
      @Override
      protected void actions() {
        times.add(sim.nowNanos());
        if (times.size() < 4) {
          sim.scheduleAfter(this, 10);
        }
      }
    };
    sim.scheduleAt(ticker, 0);
    assertTrue(sim.cancel(cancelled));
    assertFalse(sim.cancel(cancelled));
    assertFalse(cancelled.isScheduled());
    sim.run();
    assertEquals(List.of(0L, 10L, 20L, 30L), times);
    assertEquals(List.of(), log);
  }

  @Test
  void stopEndsTheRunAfterTheCurrentEvent() {
    Simulator sim = new Simulator();
    List<String> log = new ArrayList<>();
    sim.scheduleAt(new Event() {
      @Override
      protected void actions() {
        log.add("stopper");
        sim.stop();
      }
    }, 1);
    sim.scheduleAt(new Mark("after", 0, log), 2);
    sim.run();
    assertEquals(List.of("stopper"), log);
    assertEquals(1, sim.pending());
    sim.run();
    assertEquals(List.of("stopper", "after"), log);
  }

  /** Random schedules and cancellations fire exactly the surviving events, sorted by (time, priority, sequence). */
  @Property(tries = 300)
  void theEventListAgreesWithASortedReference(
      @ForAll @Size(max = 200) List<@IntRange(min = 0, max = 50) Integer> times,
      @ForAll @Size(max = 200) List<@IntRange(min = -2, max = 2) Integer> priorities,
      @ForAll @Size(max = 60) List<@IntRange(min = 0, max = 199) Integer> cancels) {
    Simulator sim = new Simulator();
    List<String> log = new ArrayList<>();
    List<Mark> marks = new ArrayList<>();
    record Key(long time, int priority, int seq, String label) {}
    List<Key> expected = new ArrayList<>();
    for (int i = 0; i < times.size(); i++) {
      int priority = i < priorities.size() ? priorities.get(i) : 0;
      Mark m = new Mark("e" + i, priority, log);
      marks.add(m);
      sim.scheduleAt(m, times.get(i));
    }
    for (int c : cancels) {
      if (c < marks.size()) {
        sim.cancel(marks.get(c));
      }
    }
    for (int i = 0; i < marks.size(); i++) {
      if (marks.get(i).isScheduled()) {
        expected.add(new Key(times.get(i), marks.get(i).priority(), i, marks.get(i).label));
      }
    }
    expected.sort(Comparator.comparingLong(Key::time).thenComparingInt(Key::priority).thenComparingInt(Key::seq));
    sim.run();
    assertEquals(expected.stream().map(Key::label).toList(), log);
  }
}

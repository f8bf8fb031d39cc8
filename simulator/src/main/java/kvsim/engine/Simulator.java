package kvsim.engine;

/**
 * The discrete-event executive that every kvsim run is driven by (after SSJ's {@code Simulator}):
 * a simulated clock in {@code long} nanoseconds and an event list ordered by (time, priority,
 * insertion sequence). {@link #run()} takes the first pending event, advances the clock to its time
 * and runs its actions, until no event is pending or {@link #stop()} was called.
 *
 * <p>There is no global simulator: each run makes its own and passes it to the events that need to
 * schedule, so runs on several threads never share state. The clock never goes back: scheduling an
 * event before {@link #nowNanos()}, or scheduling one that is already pending, throws.
 */
public final class Simulator {
  private final EventList events = new EventList();
  private long nowNanos;
  private long nextSequence;
  private long fired;
  private boolean stopped;

  /** Returns the simulated time, in nanoseconds. */
  public long nowNanos() {
    return nowNanos;
  }

  /** Returns how many events have fired. */
  public long eventsFired() {
    return fired;
  }

  /** Returns how many events are pending. */
  public int pending() {
    return events.size();
  }

  /**
   * Schedules {@code event} to fire at {@code timeNanos}.
   *
   * @throws IllegalStateException if the event is already pending
   * @throws IllegalArgumentException if {@code timeNanos} is before the current time
   */
  public void scheduleAt(Event event, long timeNanos) {
    if (event.isScheduled()) {
      throw new IllegalStateException("event already scheduled at " + event.timeNanos + " ns: " + event);
    }
    if (timeNanos < nowNanos) {
      throw new IllegalArgumentException("cannot schedule into the past: " + timeNanos + " ns < now " + nowNanos + " ns");
    }
    event.timeNanos = timeNanos;
    event.sequence = nextSequence++;
    events.add(event);
  }

  /** Schedules {@code event} to fire {@code delayNanos} after the current time. */
  public void scheduleAfter(Event event, long delayNanos) {
    if (delayNanos < 0) {
      throw new IllegalArgumentException("negative delay " + delayNanos + " ns");
    }
    scheduleAt(event, Math.addExact(nowNanos, delayNanos));
  }

  /** Removes a pending event; returns whether it was pending. */
  public boolean cancel(Event event) {
    return events.remove(event);
  }

  /** Makes {@link #run()} return after the event now firing. */
  public void stop() {
    stopped = true;
  }

  /** Fires events in order until none is pending or {@link #stop()} is called. */
  public void run() {
    stopped = false;
    Event e;
    while (!stopped && (e = events.pollFirst()) != null) {
      nowNanos = e.timeNanos;
      fired++;
      e.actions();
    }
  }
}

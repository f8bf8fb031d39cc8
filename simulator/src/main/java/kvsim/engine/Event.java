package kvsim.engine;

/**
 * Something that happens at a simulated time: SSJ's {@code Event}, with kvsim's deterministic
 * order. Subclasses are small classes whose {@link #actions()} change the model's state and may
 * schedule further events, themselves included: an event that has fired may be scheduled again,
 * which lets a process (a trace being replayed, a request's iterations) reuse one object.
 *
 * <p>Among events at the same time, a lower {@link #priority()} fires first; among events of equal
 * time and priority, the one scheduled first fires first (insertion sequence), so a run never
 * depends on how the event list breaks ties.
 */
public abstract class Event {
  private final int priority;
  long timeNanos;
  long sequence;
  /** Index in the event list's heap, or -1 while not scheduled. */
  int slot = -1;

  /** An event of the default priority, 0. */
  protected Event() {
    this(0);
  }

  /** An event of this priority; lower fires first at equal times. */
  protected Event(int priority) {
    this.priority = priority;
  }

  /** Does what happens at this event's time. */
  protected abstract void actions();

  /** Returns the tie-break priority among events of the same time (lower first). */
  public final int priority() {
    return priority;
  }

  /** Returns the time this event is (or was last) scheduled for, in nanoseconds. */
  public final long timeNanos() {
    return timeNanos;
  }

  /** Returns whether the event is in an event list, waiting to fire. */
  public final boolean isScheduled() {
    return slot >= 0;
  }
}

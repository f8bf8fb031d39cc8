package kvsim.trace;

import java.io.IOException;
import java.util.Map;

/**
 * A stream of L1 events in time order: a trace file read line by line, or a generator. Sources are
 * pulled one event at a time and never hold a whole trace in memory.
 *
 * <p>A generator may be closed-loop: {@link #acknowledge} tells it whether an allocation was
 * served, and a refused allocation never becomes live, so the generator never frees it (the churn
 * workload of the slab literature works this way). A file is open-loop and ignores it.
 */
public interface EventSource extends AutoCloseable {

  /** Returns the next event, or null at the end. */
  TraceEvent next() throws IOException;

  /** Tells the source whether the allocation {@code event} was served. */
  default void acknowledge(TraceEvent event, boolean served) {}

  /**
   * Whether the source may free an allocation that was refused. A file may: the engine keeps each
   * refused id until its free, which it counts ({@code frees_of_refused_count}). A closed-loop
   * generator never does, so the engine keeps nothing for its refusals: a long run with millions of
   * them would otherwise hold them all, in a table far larger than the caches.
   */
  default boolean freesRefused() {
    return true;
  }

  /** Returns a short name for reports ({@code t.jsonl}, {@code churn}). */
  String name();

  /** Returns the source's description for the run's config echo (generator and parameters, or the file's header). */
  Map<String, Object> describe();

  @Override
  default void close() throws IOException {}
}

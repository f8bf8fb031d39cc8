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

  /**
   * Leaves the check that an allocated id is not live and a freed id is to the caller, which keeps
   * the live ids in a table of its own anyway and asks {@link #liveIdError} for the message when the
   * check fails (Note [One table of live ids] on {@code engine.ReplayEngine}). Called before the
   * first {@link #next}; a source that makes no such check ignores it.
   */
  default void leaveLiveIdsToCaller() {}

  /**
   * The error this source would have reported itself at {@code event}, an allocation of a live id
   * or a free of an id that is not live, after {@link #leaveLiveIdsToCaller}; null where it cannot
   * tell, and the caller then reports the problem in its own words.
   */
  default kvsim.core.InputException liveIdError(TraceEvent event) {
    return null;
  }

  /**
   * Reads the trace {@code file} anew, with every check, up to {@code event} and returns the error
   * it stops with there, which is the one its reader would have reported the first time; null
   * where it stops with none, or where {@code file} is null (a stream, which cannot be read again).
   * For {@link #liveIdError}: a problem with live ids is rare and the whole run fails with it, so
   * reading the trace again costs nothing that matters.
   */
  static kvsim.core.InputException errorOnReadingAgain(java.nio.file.Path file, TraceEvent event) {
    if (file == null) {
      return null;
    }
    try (EventSource again = TraceFiles.openL1(file)) {
      TraceEvent e;
      do {
        e = again.next();
      } while (e != null && e.line() < event.line());
      return null;
    } catch (kvsim.core.InputException e) {
      return e;
    } catch (IOException e) {
      return null;
    }
  }

  /** Returns a short name for reports ({@code t.jsonl}, {@code churn}). */
  String name();

  /** Returns the source's description for the run's config echo (generator and parameters, or the file's header). */
  Map<String, Object> describe();

  @Override
  default void close() throws IOException {}
}

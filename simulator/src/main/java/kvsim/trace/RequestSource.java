package kvsim.trace;

import java.io.IOException;
import java.util.Map;

/**
 * A stream of LLM requests in arrival order: a request trace file read line by line, or a
 * generator. Pulled one request at a time; never holds a whole trace in memory.
 */
public interface RequestSource extends AutoCloseable {

  /** Returns the next request, or null at the end. */
  Request next() throws IOException;

  /** Returns the tokens each prefix hash covers, or 0 when the source carries no hashes. */
  int hashBlockTokens();

  /** Returns a short name for reports. */
  String name();

  /** Returns the source's description for a run's config echo. */
  Map<String, Object> describe();

  @Override
  default void close() throws IOException {}
}

package kvsim.serving;

import java.io.IOException;
import kvsim.core.ReadAhead;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;

/**
 * A request source read ahead on a thread of its own ({@link ReadAhead}), each request's prompt
 * prepared there by a {@link KvManager.PromptPreparer} (Note [Prompts prepared ahead] in {@link
 * ServingEngine}). The engine takes the requests in the source's order, each with what was
 * prepared for it ({@link #prepared}).
 */
final class PreparedRequests implements AutoCloseable {
  /** Requests handed over at once. */
  static final int BATCH = 64;
  /** Batches the reader may be ahead. */
  static final int BATCHES = 8;

  /** A request and what was prepared for it (null: nothing). */
  private record Item(Request request, Object prepared) {}

  private final ReadAhead<Item> items;
  private Item last;

  /** Starts reading {@code source} ahead; {@code maxModelLen} cuts each request's output as the engine's admission does. */
  PreparedRequests(RequestSource source, KvManager.PromptPreparer preparer, int maxModelLen) {
    items = new ReadAhead<>("kvsim-requests", () -> {
      Request r = source.next();
      if (r == null) {
        return null;
      }
      int maxOutput = ServingEngine.maxOutputTokens(r, maxModelLen);
      Object prepared = null;
      if (maxOutput >= 0) {
        try {
          prepared = preparer.prepare(r, maxOutput);
        } catch (RuntimeException e) {
          // nothing prepared: the manager's own add meets the problem again, where it would have
        }
      }
      return new Item(r, prepared);
    }, BATCH, BATCHES);
  }

  /** Returns the next request, or null at the end; throws what the source threw, in its place. */
  Request next() throws IOException {
    last = items.next();
    return last == null ? null : last.request();
  }

  /** Returns what was prepared for the request {@link #next} returned last (null: nothing). */
  Object prepared() {
    return last.prepared();
  }

  /** Stops the reader and waits until it has ended. */
  @Override
  public void close() {
    items.close();
  }
}

package kvsim.serving;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;

/**
 * A request source read on a thread of its own, each request's prompt prepared there by a {@link
 * KvManager.PromptPreparer} (Note [Prompts prepared ahead] in {@link ServingEngine}). The engine
 * takes the requests in the source's order, each with what was prepared for it ({@link
 * #prepared}); a failure of the source reaches the engine where the request that failed would
 * have, after every request before it. The reader stays at most {@value #BATCHES} batches of
 * {@value #BATCH} requests ahead, so memory stays flat however long the source. {@link #close}
 * stops the reader and waits for it, so the source is never read after the run.
 */
final class PreparedRequests implements AutoCloseable {
  /** Requests handed over at once: one hand-over between threads costs more than preparing a request. */
  static final int BATCH = 64;
  /** Batches the reader may be ahead. */
  static final int BATCHES = 8;

  /** Up to {@link #BATCH} requests and what was prepared for each; then the end, or the failure that stopped the reader. */
  private record Batch(Request[] requests, Object[] prepared, int size, boolean end, Throwable failure) {}

  private final BlockingQueue<Batch> queue = new ArrayBlockingQueue<>(BATCHES);
  private final Thread reader;
  private Batch batch;
  private int next;

  /** Starts reading {@code source} ahead; {@code maxModelLen} cuts each request's output as the engine's admission does. */
  PreparedRequests(RequestSource source, KvManager.PromptPreparer preparer, int maxModelLen) {
    reader = new Thread(() -> read(source, preparer, maxModelLen), "kvsim-requests");
    reader.setDaemon(true);
    reader.start();
  }

  private void read(RequestSource source, KvManager.PromptPreparer preparer, int maxModelLen) {
    try {
      while (true) {
        Request[] requests = new Request[BATCH];
        Object[] prepared = new Object[BATCH];
        int n = 0;
        boolean end = false;
        Throwable failure = null;
        while (n < BATCH) {
          try {
            Request r = source.next();
            if (r == null) {
              end = true;
              break;
            }
            int maxOutput = ServingEngine.maxOutputTokens(r, maxModelLen);
            requests[n] = r;
            prepared[n] = maxOutput < 0 ? null : preparer.prepare(r, maxOutput);
            n++;
          } catch (IOException | RuntimeException | Error e) {
            failure = e;
            break;
          }
        }
        queue.put(new Batch(requests, prepared, n, end, failure));
        if (end || failure != null) {
          return;
        }
      }
    } catch (InterruptedException e) {
      // closed: the run is over
    }
  }

  /** Returns the next request, or null at the end; throws what the source threw, in its place. */
  Request next() throws IOException {
    if (batch == null || next == batch.size()) {
      if (batch != null && (batch.end() || batch.failure() != null)) {
        return finish();
      }
      try {
        batch = queue.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for the next request");
      }
      next = 0;
      if (batch.size() == 0) {
        return finish();
      }
    }
    return batch.requests()[next++];
  }

  /** Returns what was prepared for the request {@link #next} returned last (null: nothing). */
  Object prepared() {
    return batch.prepared()[next - 1];
  }

  private Request finish() throws IOException {
    Throwable failure = batch.failure();
    if (failure == null) {
      return null;
    }
    if (failure instanceof IOException e) {
      throw e;
    }
    if (failure instanceof RuntimeException e) {
      throw e;
    }
    throw (Error) failure;
  }

  /** Stops the reader and waits until it has ended. */
  @Override
  public void close() {
    reader.interrupt();
    boolean interrupted = false;
    while (reader.isAlive()) {
      try {
        reader.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}

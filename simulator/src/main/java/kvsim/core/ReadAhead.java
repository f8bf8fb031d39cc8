package kvsim.core;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A stream read on a thread of its own, a few batches ahead of its consumer (Note [Read ahead]).
 * The consumer takes the items in the stream's order; a failure of the stream reaches it where the
 * item that failed would have, after every item before it. {@link #close} stops the reader and
 * waits for it, so the stream is never read after its consumer is done with it.
 *
 * <p>Note [Read ahead]: a simulation runs on one thread, and reading its input (parsing a request
 * trace, preparing what each item needs that does not depend on the simulation) is work the other
 * core of a 2-core machine can do meanwhile. Items are handed over in batches, since one hand-over
 * between threads costs more than reading an item, and at most {@code batches} batches wait, so
 * memory stays flat however long the stream. The items and their order are the stream's own, so a
 * run that reads ahead computes exactly what it would have computed without. It pays only where an
 * item costs more to read than to move between cores: a serving run's request, whose prompt is
 * hashed too, does; an L1 replay's event does not (Note [Trace files read on the engine's thread]
 * on {@code engine.ReplayEngine}), though a binary trace's events decoded into reused arrays do
 * ({@code trace.L1BinaryReader}, which hands its chunks over without waking either thread).
 *
 * <p>Note [Waking the reader]: the reader is faster than its consumer, so it mostly waits for room.
 * A blocking queue woke it at every batch taken, to read one batch and wait again; waking a
 * thread is a system call, and it was about 3% of a serving run's engine thread in async-profiler
 * samples (the week's first 90 minutes, vllm, batches of 64 requests). The consumer now wakes a
 * waiting reader only once at most half the batches are left, and the reader then reads until
 * they are all there again: one wake for every half of the batches instead of one for every batch,
 * with the same batches ahead at most.
 *
 * @param <T> the items
 */
public final class ReadAhead<T> implements AutoCloseable {
  /** The stream: its next item, or null at the end. */
  @FunctionalInterface
  public interface Reader<T> {
    /** Returns the next item, or null at the end. */
    T next() throws IOException;
  }

  /** Up to a batch of items, then the end or the failure that stopped the reader. */
  private record Batch(Object[] items, int size, boolean end, Throwable failure) {}

  /** The batches read and not yet taken: {@code waiting} of them from {@code head}, in a ring. */
  private final Batch[] ring;
  private int head;
  private int waiting;
  /** Whether the reader waits for room (Note [Waking the reader]). */
  private boolean readerWaits;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition notEmpty = lock.newCondition();
  private final Condition room = lock.newCondition();
  private final Thread thread;
  private Batch batch;
  private int next;

  /** Starts reading {@code reader} on a daemon thread named {@code name}, {@code batch} items at a time, at most {@code batches} batches ahead. */
  public ReadAhead(String name, Reader<T> reader, int batch, int batches) {
    if (batch < 1 || batches < 1) {
      throw new IllegalArgumentException("batches of at least one item, at least one batch ahead");
    }
    ring = new Batch[batches];
    thread = new Thread(() -> read(reader, batch), name);
    thread.setDaemon(true);
    thread.start();
  }

  private void read(Reader<T> reader, int batchSize) {
    try {
      while (true) {
        Object[] items = new Object[batchSize];
        int n = 0;
        boolean end = false;
        Throwable failure = null;
        while (n < batchSize) {
          try {
            T item = reader.next();
            if (item == null) {
              end = true;
              break;
            }
            items[n++] = item;
          } catch (IOException | RuntimeException | Error e) {
            failure = e;
            break;
          }
        }
        put(new Batch(items, n, end, failure));
        if (end || failure != null) {
          return;
        }
      }
    } catch (InterruptedException e) {
      // closed: the consumer is done
    }
  }

  /** Hands a batch to the consumer, waiting while all the batches are there. */
  private void put(Batch b) throws InterruptedException {
    lock.lockInterruptibly();
    try {
      while (waiting == ring.length) {
        readerWaits = true;
        room.await();
      }
      readerWaits = false;
      ring[(head + waiting) % ring.length] = b;
      waiting++;
      if (waiting == 1) {
        notEmpty.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Takes the next batch, waiting for the reader while none is there. */
  private Batch take() throws InterruptedException {
    lock.lockInterruptibly();
    try {
      while (waiting == 0) {
        notEmpty.await();
      }
      Batch b = ring[head];
      ring[head] = null;
      head = (head + 1) % ring.length;
      waiting--;
      if (readerWaits && waiting <= ring.length / 2) {
        readerWaits = false;
        room.signal();
      }
      return b;
    } finally {
      lock.unlock();
    }
  }

  /** Returns the next item, or null at the end; throws what the stream threw, in its place. */
  @SuppressWarnings("unchecked")
  public T next() throws IOException {
    if (batch == null || next == batch.size()) {
      if (batch != null && (batch.end() || batch.failure() != null)) {
        return finish();
      }
      try {
        batch = take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for the next item");
      }
      next = 0;
      if (batch.size() == 0) {
        return finish();
      }
    }
    return (T) batch.items()[next++];
  }

  private T finish() throws IOException {
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
    thread.interrupt();
    awaitEnd(thread);
  }

  /** Waits until {@code thread} has ended, an interrupt meanwhile kept for the caller. */
  public static void awaitEnd(Thread thread) {
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}

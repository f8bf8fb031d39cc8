package kvsim.run;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Runs independent pieces of work on a fixed pool of threads and returns their results by index,
 * so the order of results never depends on scheduling or on the number of threads. An exception
 * of any piece is rethrown as it was (the first one by index).
 */
public final class Parallel {
  /** One piece of work, which may fail with an I/O error. */
  @FunctionalInterface
  public interface Work<T> {
    T run(int index) throws IOException;
  }

  private Parallel() {}

  /** Runs pieces 0..n-1 on at most {@code threads} threads and returns their results by index. */
  public static <T> List<T> map(int n, int threads, Work<T> work) throws IOException {
    if (n == 1 || threads == 1) {
      List<T> out = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        out.add(work.run(i));
      }
      return out;
    }
    ExecutorService pool = Executors.newFixedThreadPool(Math.min(n, threads), r -> {
      Thread t = new Thread(r, "kvsim-run");
      t.setDaemon(true);
      return t;
    });
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int index = i;
        futures.add(pool.submit(() -> work.run(index)));
      }
      List<T> out = new ArrayList<>();
      for (Future<T> f : futures) {
        out.add(get(f));
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  private static <T> T get(Future<T> f) throws IOException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted");
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException r) {
        throw r;
      }
      if (c instanceof IOException io) {
        throw io;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(c);
    }
  }
}

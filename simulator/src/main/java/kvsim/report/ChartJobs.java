package kvsim.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import kvsim.core.AtomicFiles;
import org.jfree.chart.JFreeChart;

/**
 * Draws a result folder's chart files concurrently, on a small pool of daemon threads, while the
 * caller goes on (with the folder's {@code report.html}, which takes each chart's SVG from here
 * instead of drawing it again).
 *
 * <p>Note [Charts off the critical path]: after a run, drawing its charts (rasterising and encoding
 * PNGs, serialising SVGs) took most of the time between the engine's end and the process's. Each
 * chart is now two independent jobs, its PNG and its SVG, each on a chart object of its own (a
 * JFreeChart is not safe to draw from two threads at once, but two built from the same read-only
 * results are), run on as many threads as the machine has processors; the SVG drawn once serves
 * both the file and the report's inline copy (Note [One drawing, two SVGs] on {@link ChartFiles}).
 * Every file's bytes depend on its own chart only, and the report waits for each chart in page
 * order, so the output is the same whatever the threads' timing. {@link #await} returns only when
 * every job has ended, so that nothing is written into the temporary folder after it is sealed or
 * discarded.
 */
final class ChartJobs {
  /** The pool: one thread per processor, daemons, so that a pool left idle never keeps the process alive. */
  private static final class Pool {
    static final ExecutorService THREADS = Executors.newFixedThreadPool(Math.max(1, Runtime.getRuntime().availableProcessors()), r -> {
      Thread t = new Thread(r, "kvsim-charts");
      t.setDaemon(true);
      return t;
    });
  }

  private final Path dir;
  private final List<Future<?>> jobs = new ArrayList<>();
  private final Map<String, Future<ChartFiles.Svg>> svgs = new LinkedHashMap<>();

  /** Jobs writing their files into {@code dir}. */
  ChartJobs(Path dir) {
    this.dir = dir;
  }

  /**
   * Starts drawing the chart that {@code chart} builds as {@code dir/NAME.png} and {@code
   * dir/NAME.svg}, {@code width} × {@code height} pixels; {@code chart} is called once per file,
   * from the pool's threads.
   */
  void add(String name, Supplier<JFreeChart> chart, int width, int height) {
    jobs.add(Pool.THREADS.submit(() -> {
      ChartFiles.writePng(dir.resolve(name + ".png"), chart.get(), width, height);
      return null;
    }));
    Future<ChartFiles.Svg> svg = Pool.THREADS.submit(() -> {
      ChartFiles.Svg s = ChartFiles.drawSvg(chart.get(), width, height);
      byte[] bytes = s.document().getBytes(StandardCharsets.UTF_8);
      AtomicFiles.write(dir.resolve(name + ".svg"), out -> out.write(bytes));
      return s;
    });
    jobs.add(svg);
    svgs.put(name + ".svg", svg);
  }

  /**
   * Returns the SVG drawn for the file {@code svgFile} when it was drawn {@code width} × {@code
   * height} pixels, waiting for it; null where no such chart was added (the report then draws it).
   */
  ChartFiles.Svg svg(String svgFile, int width, int height) {
    Future<ChartFiles.Svg> f = svgs.get(svgFile);
    if (f == null) {
      return null;
    }
    ChartFiles.Svg s;
    try {
      s = get(f);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return s.width() == width && s.height() == height ? s : null;
  }

  /**
   * Runs {@code last} (the folder's report) on the caller's thread while the jobs draw, then waits
   * for every job, also where {@code last} failed.
   */
  void finishWith(AtomicFiles.FolderWriter last) throws IOException {
    try {
      last.write(dir);
    } catch (IOException | RuntimeException | Error e) {
      try {
        await();
      } catch (IOException | RuntimeException | Error s) {
        if (s != e) {
          e.addSuppressed(s);
        }
      }
      throw e;
    }
    await();
  }

  /** Waits for every job to end; then throws the first job's failure, in the order added, if any. */
  void await() throws IOException {
    Throwable first = null;
    for (Future<?> f : jobs) {
      try {
        get(f);
      } catch (IOException | RuntimeException | Error e) {
        if (first == null) {
          first = e;
        }
      }
    }
    if (first instanceof IOException e) {
      throw e;
    }
    if (first instanceof RuntimeException e) {
      throw e;
    }
    if (first instanceof Error e) {
      throw e;
    }
  }

  /** Waits for {@code f}, rethrowing its failure as it was thrown. */
  private static <T> T get(Future<T> f) throws IOException {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return f.get();
        } catch (InterruptedException e) {
          interrupted = true; // the job still writes into the folder: wait for it to end
        }
      }
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(cause);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}

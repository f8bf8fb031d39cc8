package kvsim.metrics;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A time series of rows indexed 1, 2, 3, … (events, iterations), kept every {@code stride}-th row
 * plus the first and the last.
 *
 * <p>Note [Bounded time series]: with an automatic stride, when the series reaches {@link
 * #MAX_AUTO_SAMPLES} rows every second row is dropped and the stride doubles. The series stays
 * bounded for a run of any length and remains evenly spaced; which rows are kept depends only on
 * the row count, so it is deterministic.
 */
public final class SampledSeries {
  /** Most rows kept when the stride is automatic. */
  public static final int MAX_AUTO_SAMPLES = 2048;

  private final boolean autoStride;
  private final int width;
  private long stride;
  /** The kept rows, one after another ({@code keptRows} rows of {@code width} values). */
  private double[] kept;
  private int keptRows;
  /** The latest row, kept so the series always ends at the last index. */
  private final double[] last;
  private long count;

  /**
   * A series of rows of {@code width} values whose first value is the row's index; every {@code
   * every}-th row is kept (0 = automatic stride).
   */
  public SampledSeries(int width, long every) {
    if (every < 0) {
      throw new IllegalArgumentException("the sampling stride must not be negative");
    }
    this.autoStride = every == 0;
    this.width = width;
    this.stride = autoStride ? 1 : every;
    this.last = new double[width];
    this.kept = new double[width * 64];
  }

  /**
   * Returns the array to fill with the next row; its first value is set to the row's index. Call
   * {@link #commit()} once it is filled.
   */
  public double[] next() {
    count++;
    last[0] = count;
    return last;
  }

  /** Keeps the row just filled if it falls on the stride. */
  public void commit() {
    if (count % stride == 0 || count == 1) {
      if ((keptRows + 1) * width > kept.length) {
        kept = Arrays.copyOf(kept, kept.length * 2);
      }
      System.arraycopy(last, 0, kept, keptRows * width, width);
      keptRows++;
      if (autoStride && keptRows >= MAX_AUTO_SAMPLES) {
        decimate();
      }
    }
  }

  /** Doubles the stride and keeps, in place, the rows on the new stride (and the first). */
  private void decimate() {
    stride *= 2;
    int out = 0;
    for (int r = 0; r < keptRows; r++) {
      long i = (long) kept[r * width];
      if (i == 1 || i % stride == 0) {
        System.arraycopy(kept, r * width, kept, out * width, width);
        out++;
      }
    }
    keptRows = out;
  }

  /** Returns the number of rows recorded (kept or not). */
  public long count() {
    return count;
  }

  /** Returns the kept rows; the last row recorded is always included. */
  public List<double[]> rows() {
    List<double[]> out = new ArrayList<>(keptRows + 1);
    for (int r = 0; r < keptRows; r++) {
      out.add(Arrays.copyOfRange(kept, r * width, (r + 1) * width));
    }
    if (count > 0 && (out.isEmpty() || out.get(out.size() - 1)[0] != count)) {
      out.add(last.clone());
    }
    return out;
  }
}

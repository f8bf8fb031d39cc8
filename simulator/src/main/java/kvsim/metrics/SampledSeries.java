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
  /** The index of the next row to keep: the first, then the next multiple of the stride. */
  private long nextKept = 1;
  /** Whether {@code last} holds the last row counted (false after {@link #skip}). */
  private boolean lastFilled = true;

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
    lastFilled = true;
    return last;
  }

  /**
   * Counts the next row without its values where it will not be kept, and returns true; returns
   * false, counting nothing, where it will be kept, and the caller then fills it ({@link #next}).
   * Once a row has been skipped, {@link #lastRow} must be filled before {@link #rows} (Note [Rows
   * not kept are not filled]).
   *
   * <p>Note [Rows not kept are not filled]: with an automatic stride a long run keeps one row in
   * thousands, and filling every row only to drop it (ten values converted and stored, and a
   * division by the stride to test it) cost a replay of the 2 M-event churn trace through first
   * fit 18 of its engine's 196 ms in a warm resident server (12 interleaved runs; in JMH's {@code
   * ReplayBenchmark}, a JVM that replays nothing else, the difference is within the noise); a
   * recorder that knows its rows asks {@link #skip} first and fills only the rows kept. The series
   * still ends at the last row, which the recorder fills once at the end, from the values it holds
   * ({@link #lastRow}). Which rows are kept is unchanged: the next kept index is the next multiple
   * of the stride, found when a row is kept and when the stride doubles, not tested at every row.
   */
  public boolean skip() {
    if (count + 1 == nextKept) {
      return false;
    }
    count++;
    lastFilled = false;
    return true;
  }

  /** Keeps the row just filled if it falls on the stride. */
  public void commit() {
    if (count == nextKept) {
      if ((keptRows + 1) * width > kept.length) {
        kept = Arrays.copyOf(kept, kept.length * 2);
      }
      System.arraycopy(last, 0, kept, keptRows * width, width);
      keptRows++;
      if (autoStride && keptRows >= MAX_AUTO_SAMPLES) {
        decimate();
      }
      nextKept = count - count % stride + stride;
    }
  }

  /**
   * Returns the array of the last row counted, its index set, for the caller to fill where that
   * row was skipped (Note [Rows not kept are not filled]).
   */
  public double[] lastRow() {
    last[0] = count;
    lastFilled = true;
    return last;
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

  /** Returns the kept rows; the last row counted is always included. */
  public List<double[]> rows() {
    List<double[]> out = new ArrayList<>(keptRows + 1);
    for (int r = 0; r < keptRows; r++) {
      out.add(Arrays.copyOfRange(kept, r * width, (r + 1) * width));
    }
    if (count > 0 && (out.isEmpty() || out.get(out.size() - 1)[0] != count)) {
      if (!lastFilled) {
        throw new IllegalStateException("the last row was skipped and not filled again (lastRow)");
      }
      out.add(last.clone());
    }
    return out;
  }
}

package kvsim.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * {@link SampledSeries} keeps its rows in one flat array and decimates in place; it must keep
 * exactly the rows a naive series of one array per row keeps, for any stride and row count.
 */
class SampledSeriesProperties {
  @Property(tries = 200)
  void keepsTheRowsOfANaiveSeries(
      @ForAll @IntRange(min = 1, max = 6) int width,
      @ForAll @LongRange(min = 0, max = 9) long every,
      @ForAll @IntRange(min = 0, max = 20_000) int rows) {
    SampledSeries fast = new SampledSeries(width, every);
    NaiveSeries naive = new NaiveSeries(width, every);
    for (int i = 0; i < rows; i++) {
      fillRow(fast.next(), i);
      fillRow(naive.next(), i);
      fast.commit();
      naive.commit();
    }
    assertSameRows(naive, fast, rows);
  }

  /** Note [Rows not kept are not filled]: rows skipped and the last row filled at the end are the rows of a naive series. */
  @Property(tries = 200)
  void skippingTheRowsNotKeptKeepsTheRowsOfANaiveSeries(
      @ForAll @IntRange(min = 1, max = 6) int width,
      @ForAll @LongRange(min = 0, max = 9) long every,
      @ForAll @IntRange(min = 0, max = 20_000) int rows) {
    SampledSeries fast = new SampledSeries(width, every);
    NaiveSeries naive = new NaiveSeries(width, every);
    int filled = 0;
    for (int i = 0; i < rows; i++) {
      double[] b = naive.next();
      fillRow(b, i);
      naive.commit();
      if (!fast.skip()) {
        fillRow(fast.next(), i);
        fast.commit();
        filled++;
      }
    }
    if (rows > 0) {
      fillRow(fast.lastRow(), rows - 1);
    }
    assertSameRows(naive, fast, rows);
    if (every == 0 && rows > 2 * SampledSeries.MAX_AUTO_SAMPLES) {
      assertTrue(filled < rows, "an automatic stride skips rows: " + filled + " of " + rows + " filled");
    }
  }

  @Example
  void aSkippedLastRowMustBeFilledBeforeTheRowsAreRead() {
    SampledSeries series = new SampledSeries(2, 3);
    assertFalse(series.skip(), "the first row is kept");
    series.next()[1] = 7;
    series.commit();
    assertTrue(series.skip(), "the second row is not");
    assertThrows(IllegalStateException.class, series::rows);
    series.lastRow()[1] = 8;
    List<double[]> rows = series.rows();
    assertEquals(2, rows.size());
    assertArrayEquals(new double[] {2, 8}, rows.get(1));
  }

  private static void assertSameRows(NaiveSeries naive, SampledSeries fast, int rows) {
    List<double[]> expected = naive.rows();
    List<double[]> actual = fast.rows();
    assertEquals(expected.size(), actual.size(), "kept rows");
    for (int r = 0; r < expected.size(); r++) {
      assertArrayEquals(expected.get(r), actual.get(r), "row " + r);
    }
    assertEquals(rows, fast.count());
  }

  private static void fillRow(double[] row, int i) {
    for (int k = 1; k < row.length; k++) {
      row[k] = i * 31 + k;
    }
  }

  @Property(tries = 20)
  void aRecorderWithoutASeriesKeepsNoRowsAndTheSameSummaries(@ForAll @IntRange(min = 1, max = 3000) int events) {
    RunMetrics with = new RunMetrics(0);
    RunMetrics without = new RunMetrics(RunMetrics.NO_SERIES);
    for (int i = 0; i < events; i++) {
      long free = (i * 7919L) % 1000;
      with.record(i, 1000, 1000 - free, 900 - free, free, free / 2, i % 13);
      without.record(i, 1000, 1000 - free, 900 - free, free, free / 2, i % 13);
    }
    assertEquals(List.of(), without.samples());
    assertEquals(with.summaries(), without.summaries());
    assertEquals(with.counters(), without.counters());
  }

  /** The series as it was first written: every kept row its own array, decimation by copying the list. */
  private static final class NaiveSeries {
    private final boolean autoStride;
    private long stride;
    private final List<double[]> rows = new ArrayList<>();
    private final double[] last;
    private long count;

    NaiveSeries(int width, long every) {
      this.autoStride = every == 0;
      this.stride = autoStride ? 1 : every;
      this.last = new double[width];
    }

    double[] next() {
      count++;
      last[0] = count;
      return last;
    }

    void commit() {
      if (count % stride == 0 || count == 1) {
        rows.add(last.clone());
        if (autoStride && rows.size() >= SampledSeries.MAX_AUTO_SAMPLES) {
          stride *= 2;
          rows.removeIf(row -> (long) row[0] != 1 && (long) row[0] % stride != 0);
        }
      }
    }

    List<double[]> rows() {
      List<double[]> out = new ArrayList<>(rows);
      if (count > 0 && (out.isEmpty() || out.get(out.size() - 1)[0] != count)) {
        out.add(last.clone());
      }
      return out;
    }
  }
}

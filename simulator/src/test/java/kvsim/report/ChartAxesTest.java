package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.junit.jupiter.api.Test;

/** Note [Log when one series dwarfs the others] on {@link ChartAxes}, and the log axis' readable ticks. */
class ChartAxesTest {
  @Test
  void logWhenTheLargestMaximumIsOverTwentyTimesTheSmallest() {
    assertTrue(ChartAxes.wantsLog(new double[] {0.8, 1.2, 9300}), "hf-naive's 9,300 s beside seconds");
    assertFalse(ChartAxes.wantsLog(new double[] {0.8, 1.2, 15}), "under 20 times: linear");
    assertFalse(ChartAxes.wantsLog(new double[] {0, 0, 5}), "zeros are not a series maximum to divide by");
    assertFalse(ChartAxes.wantsLog(new double[] {Double.NaN, 3}));
    // Runs on one time axis (Note [Runs on one time axis]): vllm's 60 s beside hf-naive's 960 s.
    assertTrue(ChartAxes.wantsLog(new double[] {60, 410, 960}, ChartAxes.PANEL_LOG_RATIO), "16 times: log for runs over time");
    assertFalse(ChartAxes.wantsLog(new double[] {60, 250}, ChartAxes.PANEL_LOG_RATIO), "under 5 times: linear");
    assertTrue(ChartAxes.valueAxis("TTFT (s)", new double[] {1, 100}) instanceof LogAxis);
    assertTrue(ChartAxes.valueAxis("TTFT (s)", new double[] {1, 100}).getLabel().endsWith(ChartAxes.LOG_NOTE), "the label says so");
    assertTrue(ChartAxes.valueAxis("TTFT (s)", new double[] {1, 10}) instanceof NumberAxis);
  }

  @Test
  void logTicksAreOneTwoFiveWithinADecadeOrTwo() {
    assertEquals(List.of(0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0), ChartAxes.logTicks(0.1, 10));
    assertEquals(List.of(1.0, 1.5, 2.0, 3.0), ChartAxes.logTicks(0.9, 3.5), "more than two labels within one decade");
    assertEquals(List.of(0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0), ChartAxes.logTicks(0.001, 10000));
    assertEquals("0.05", ChartAxes.tickLabel(0.05));
    assertEquals("2", ChartAxes.tickLabel(2));
    assertEquals("1,000", ChartAxes.tickLabel(1000));
  }

  @Test
  void anEventAxisEndsAtTheData() {
    NumberAxis a = ChartAxes.toData("event");
    assertEquals(0, a.getUpperMargin());
    assertEquals(0, a.getLowerMargin());
    assertFalse(a.getAutoRangeIncludesZero());
  }
}

package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigDecimal;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.Example;

/** {@link PlainNumbers#text} writes exactly what BigDecimal's plain string did (Note [Plain digits by hand]). */
class PlainNumbersProperties {
  private static void assertAsBigDecimal(double v) {
    String expected = PlainNumbers.plain(v) ? BigDecimal.valueOf(v).toPlainString() : Double.toString(v);
    assertEquals(expected, PlainNumbers.text(v), () -> "for " + Double.toString(v));
  }

  @Property(tries = 3000)
  void anyDoubleAsBigDecimalWritesIt(@ForAll long bits) {
    assertAsBigDecimal(Double.longBitsToDouble(bits));
  }

  /** Byte counts and their means: integers and fractions from 10^6 to 10^19, either sign. */
  @Property(tries = 3000)
  void bytesAndMeansAsBigDecimalWritesThem(
      @ForAll @LongRange(min = 1, max = Long.MAX_VALUE) long bytes, @ForAll @IntRange(min = 1, max = 1000) int divisor, @ForAll boolean negative) {
    double v = (double) bytes / divisor;
    assertAsBigDecimal(negative ? -v : v);
    assertAsBigDecimal(negative ? -(double) bytes : bytes);
  }

  @Example
  void edgesOfThePlainRange() {
    for (double v : new double[] {1e7, 9999999.999999998, 1.0000000000000002e7, 85899345920.0, 81910520449.29292, 1e15, 1e16, 1e22, 1.7976931348623157e308, 123456789.125, -1e7, -4.5e9}) {
      assertAsBigDecimal(v);
    }
    assertEquals("10000000", PlainNumbers.text(1e7));
    assertEquals("81910520449.29292", PlainNumbers.text(81910520449.29292));
    assertEquals("-4500000000", PlainNumbers.text(-4.5e9));
  }
}

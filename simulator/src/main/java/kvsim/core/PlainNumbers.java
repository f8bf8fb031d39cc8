package kvsim.core;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import java.io.IOException;
import java.math.BigDecimal;

/**
 * Numbers in kvsim's CSV and JSON files: an integral value is written as an integer, never in
 * scientific notation, whatever type held it, and a large fraction in plain digits (Note [Integers
 * as integers]).
 *
 * <p>Note [Integers as integers]: a byte count or mean that is a {@code double} prints through
 * {@link Double#toString}, which turns to scientific notation from 10^7 up: {@code 8.589934592E10}
 * for 80 GiB, next to {@code 85899345920} where the same value was a {@code long}. Spreadsheets and
 * scripts read both, but a person reading the table should not have to. So a double of magnitude
 * 10^7 or more is written in plain digits, the same shortest digits Java chooses: an integral one
 * as an integer ({@code 85899345920}), another with its fraction ({@code 81910520449.29292}).
 * Smaller values are written as Java writes them (an integral one keeps its {@code .0}, a tiny
 * fraction its exponent), so every file whose numbers were all below 10^7 keeps its bytes. The value is the same either way, and
 * every kvsim reader reads both forms (a JSON number is a number; results written before read as
 * they did).
 */
public final class PlainNumbers {
  /** Where {@link Double#toString} turns to scientific notation. */
  private static final double SCIENTIFIC_FROM = 1e7;

  /** The Jackson module that writes doubles and floats by this rule; register it on every mapper that writes result files. */
  public static final SimpleModule MODULE = new SimpleModule("kvsim-plain-numbers")
      .addSerializer(Double.class, new DoubleSerializer())
      .addSerializer(double.class, new DoubleSerializer());

  private PlainNumbers() {}

  /** Returns whether {@code v} is written in plain digits rather than as Java writes it: finite and of magnitude 10^7 or more. */
  public static boolean plain(double v) {
    return Double.isFinite(v) && Math.abs(v) >= SCIENTIFIC_FROM;
  }

  /** Returns {@code v} as a CSV or JSON file shows it (Note [Integers as integers]). */
  public static String text(double v) {
    return plain(v) ? plainDigits(Double.toString(v)) : Double.toString(v);
  }

  /**
   * Returns {@code BigDecimal.valueOf(v).toPlainString()} for a {@link #plain} {@code v}, given
   * {@code Double.toString(v)}, without building a BigDecimal.
   *
   * <p>Note [Plain digits by hand]: from 10^7 up {@link Double#toString} writes {@code d.fffEn}
   * (one digit, a point, at least one digit, an exponent n of 7 or more), and the BigDecimal of that
   * text has the digits {@code dfff} and scale {@code |fff| - n}, whose plain string is those digits
   * with the point moved n places right: zeros appended when the fraction is shorter than n, else the
   * point put after n + 1 digits. Moving it by hand gives the same characters (a property test
   * checks it against BigDecimal on random doubles); BigDecimal did it by BigInteger arithmetic,
   * which was about half of the time a 200-seed sweep spent writing its {@code summary.json}
   * (JFR samples).
   */
  static String plainDigits(String javaText) {
    int start = javaText.charAt(0) == '-' ? 1 : 0;
    int e = javaText.indexOf('E');
    if (e < 0 || javaText.charAt(start + 1) != '.') {
      return new BigDecimal(javaText).toPlainString(); // not Double.toString's form: never for a plain value
    }
    int exponent = Integer.parseInt(javaText, e + 1, javaText.length(), 10);
    int fractionDigits = e - start - 2;
    StringBuilder b = new StringBuilder(javaText.length() + Math.max(0, exponent - fractionDigits) + 1);
    b.append(javaText, 0, start + 1).append(javaText, start + 2, e);
    if (fractionDigits <= exponent) {
      for (int i = fractionDigits; i < exponent; i++) {
        b.append('0');
      }
    } else {
      b.insert(start + 1 + exponent, '.');
    }
    return b.toString();
  }

  private static final class DoubleSerializer extends StdSerializer<Double> {
    DoubleSerializer() {
      super(Double.class);
    }

    @Override
    public void serialize(Double value, JsonGenerator g, SerializerProvider provider) throws IOException {
      double v = value;
      if (plain(v)) {
        g.writeNumber(text(v)); // the digits as they are: Jackson would write a BigDecimal with an exponent
      } else {
        g.writeNumber(v);
      }
    }
  }
}

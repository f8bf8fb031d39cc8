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
    return plain(v) ? BigDecimal.valueOf(v).toPlainString() : Double.toString(v);
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

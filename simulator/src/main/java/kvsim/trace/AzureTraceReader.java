package kvsim.trace;

import java.io.IOException;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kvsim.core.InputException;
import kvsim.core.OptionMap;

/**
 * Imports an Azure LLM inference trace (Azure Public Dataset, {@code AzureLLMInferenceTrace_conv}
 * and {@code _code} of 2023, and the week-long 2024 files of the same shape): a CSV with columns
 * {@code TIMESTAMP,ContextTokens,GeneratedTokens}, one row per request.
 *
 * <ul>
 *   <li>{@code TIMESTAMP}: {@code YYYY-MM-DD HH:MM:SS} with up to 9 fractional digits (the files
 *       have 7, i.e. 100 ns), optionally followed by {@code Z} or an offset {@code ±HH:MM}; parsed
 *       exactly to nanoseconds (no floating point).
 *   <li>{@code ContextTokens} is the prompt, {@code GeneratedTokens} the output; the rules for 0
 *       and for windows are {@link ImportedRequestSource}'s. The files carry no prefix hashes.
 * </ul>
 */
public final class AzureTraceReader extends ImportedRequestSource {
  private static final Pattern TIME = Pattern.compile(
      "(\\d{4})-(\\d{2})-(\\d{2})[ T](\\d{2}):(\\d{2}):(\\d{2})(?:\\.(\\d{1,9}))?(Z|[+-]\\d{2}:\\d{2})?");

  private final CsvRows csv;
  private final int timeColumn;
  private final int promptColumn;
  private final int outputColumn;

  /** Opens {@code file} with the shared options of {@link ImportedRequestSource}. */
  public AzureTraceReader(Path file, OptionMap options) throws IOException {
    super("azure", file, options, "TIMESTAMP", "ContextTokens", "GeneratedTokens");
    options.requireAllUsed();
    this.csv = new CsvRows(file, "Azure LLM inference trace");
    try {
      this.timeColumn = csv.column("TIMESTAMP");
      this.promptColumn = csv.column("ContextTokens");
      this.outputColumn = csv.column("GeneratedTokens");
    } catch (InputException e) {
      csv.close();
      throw e;
    }
  }

  @Override
  protected Row readRow() throws IOException {
    if (!csv.next()) {
      return null;
    }
    long line = csv.line();
    long t = parseTime(csv.field(timeColumn).trim(), line);
    long prompt = csvInteger(csv.field(promptColumn), line, "ContextTokens");
    long output = csvInteger(csv.field(outputColumn), line, "GeneratedTokens");
    return new Row(line, t, prompt, output, null);
  }

  /** Parses a timestamp to nanoseconds since 1970-01-01 UTC, exactly. */
  private long parseTime(String s, long line) {
    Matcher m = TIME.matcher(s);
    if (!m.matches()) {
      throw InputException.at(source, line, "TIMESTAMP", "expected YYYY-MM-DD HH:MM:SS[.fraction][offset], got '" + s + "'");
    }
    try {
      LocalDate date = LocalDate.of(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)));
      int h = Integer.parseInt(m.group(4));
      int min = Integer.parseInt(m.group(5));
      int sec = Integer.parseInt(m.group(6));
      if (h > 23 || min > 59 || sec > 59) {
        throw new java.time.DateTimeException("hour, minute or second out of range");
      }
      long seconds = date.toEpochDay() * 86_400L + h * 3600L + min * 60L + sec;
      String z = m.group(8);
      if (z != null && !z.equals("Z")) {
        int oh = Integer.parseInt(z.substring(1, 3));
        int om = Integer.parseInt(z.substring(4, 6));
        if (oh > 18 || om > 59 || (oh == 18 && om > 0)) {
          throw new java.time.DateTimeException("offset " + z + " is outside -18:00 to +18:00");
        }
        int offset = (oh * 3600 + om * 60) * (z.charAt(0) == '-' ? -1 : 1);
        seconds -= offset;
      }
      long nanos = 0;
      String frac = m.group(7);
      if (frac != null) {
        nanos = Long.parseLong(frac);
        for (int i = frac.length(); i < 9; i++) {
          nanos *= 10;
        }
      }
      return Math.addExact(Math.multiplyExact(seconds, 1_000_000_000L), nanos);
    } catch (java.time.DateTimeException | ArithmeticException e) {
      throw InputException.at(source, line, "TIMESTAMP", "not a valid time: '" + s + "' (" + e.getMessage() + ")");
    }
  }

  @Override
  public int hashBlockTokens() {
    return 0;
  }

  @Override
  public void close() throws IOException {
    csv.close();
  }
}

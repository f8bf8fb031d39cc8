package kvsim.trace;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import kvsim.core.InputException;
import kvsim.core.OptionMap;

/**
 * Imports a BurstGPT trace (Wang et al., "BurstGPT: A Real-world Workload Dataset to Optimize LLM
 * Serving Systems", 2024; the {@code BurstGPT_*.csv} files): a CSV with columns {@code
 * Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type}, one row per request to
 * ChatGPT or GPT-4 through Azure OpenAI.
 *
 * <ul>
 *   <li>{@code Timestamp}: seconds from the trace's start, a decimal that may have a fraction;
 *       parsed exactly to nanoseconds and kept as the request's time (BurstGPT already counts from
 *       its start, so times are not shifted to the first row). Times must not go backwards along
 *       the file, rows left out by a filter included.
 *   <li>{@code Request tokens} is the prompt, {@code Response tokens} the output; {@code Total
 *       tokens} must equal their sum (a row where it does not is bad input). Failed requests have 0
 *       response tokens; {@code zero-output} decides, as for every importer ({@link
 *       ImportedRequestSource}).
 *   <li>Filters: option {@code model} keeps the rows whose {@code Model} is exactly that text
 *       ({@code ChatGPT}, {@code GPT-4}), {@code log-type} those whose {@code Log Type} is exactly
 *       that text ({@code Conversation log}, {@code API log}); both apply together. Ids stay the
 *       row numbers of the whole file. A filter that matches no row of the whole file is bad input,
 *       reported when the file ends with the values the file has (Note [Empty filter]).
 * </ul>
 *
 * <p>Note [Empty filter]: a filter value is compared exactly, so a typo ({@code gpt-4}) would
 * otherwise give an empty workload that says nothing about why. A value that matches nothing is
 * not an error by itself, since the file may hold it further down; when the whole file has been
 * read and no row matched, the import fails naming the values seen. A window ({@code to}) that ends
 * reading early never reaches that check, and an empty result is then reported as an empty
 * workload by the command that runs it.
 */
public final class BurstGptTraceReader extends ImportedRequestSource {
  private static final BigDecimal NANOS_PER_SECOND = BigDecimal.valueOf(1_000_000_000L);
  private static final int MAX_VALUES_NAMED = 20;

  private final CsvRows csv;
  private final int timeColumn;
  private final int modelColumn;
  private final int promptColumn;
  private final int outputColumn;
  private final int totalColumn;
  private final int logTypeColumn;
  private final String model;
  private final String logType;
  private final Set<String> modelsSeen = new TreeSet<>();
  private final Set<String> logTypesSeen = new TreeSet<>();
  private long lastNanos = Long.MIN_VALUE;
  private long lastLine;
  private long rowsMatched;
  private long rowsTotal;

  /** Opens {@code file}; options {@code model} and {@code log-type} besides the shared ones. */
  public BurstGptTraceReader(Path file, OptionMap options) throws IOException {
    super("burstgpt", file, options, "Timestamp", "Request tokens", "Response tokens");
    this.model = options.optional("model");
    this.logType = options.optional("log-type");
    options.requireAllUsed();
    this.csv = new CsvRows(file, "BurstGPT trace");
    try {
      this.timeColumn = csv.column("Timestamp");
      this.modelColumn = csv.column("Model");
      this.promptColumn = csv.column("Request tokens");
      this.outputColumn = csv.column("Response tokens");
      this.totalColumn = csv.column("Total tokens");
      this.logTypeColumn = csv.column("Log Type");
    } catch (InputException e) {
      csv.close();
      throw e;
    }
  }

  @Override
  protected boolean relativeToFirstRow() {
    return false;
  }

  @Override
  protected Row readRow() throws IOException {
    while (csv.next()) {
      long line = csv.line();
      lastLine = line;
      rowsTotal++;
      long t = parseSeconds(csv.field(timeColumn).trim(), line);
      if (t < lastNanos) {
        throw InputException.at(source, line, "Timestamp", "time goes backwards: " + t + " ns after " + lastNanos
            + " ns; the importer never reorders rows");
      }
      lastNanos = t;
      long prompt = csvInteger(csv.field(promptColumn), line, "Request tokens");
      long output = csvInteger(csv.field(outputColumn), line, "Response tokens");
      long total = csvInteger(csv.field(totalColumn), line, "Total tokens");
      if (total != prompt + output) {
        throw InputException.at(source, line, "Total tokens", total + " is not Request tokens + Response tokens (" + prompt + " + " + output + " = "
            + (prompt + output) + ")");
      }
      String rowModel = csv.field(modelColumn).trim();
      String rowLogType = csv.field(logTypeColumn).trim();
      remember(modelsSeen, rowModel);
      remember(logTypesSeen, rowLogType);
      if ((model != null && !model.equals(rowModel)) || (logType != null && !logType.equals(rowLogType))) {
        continue;
      }
      rowsMatched++;
      return new Row(line, t, prompt, output, null, rowsTotal - 1);
    }
    if (rowsMatched == 0 && rowsTotal > 0 && (model != null || logType != null)) {
      // Note [Empty filter]
      throw InputException.at(source, lastLine, model != null && !modelsSeen.contains(model) ? "Model" : "Log Type",
          "the filter" + (model != null ? " model=" + model : "") + (logType != null ? " log-type=" + logType : "") + " matched none of the "
              + rowsTotal + " rows (models in the file: " + String.join(", ", modelsSeen) + "; log types: " + String.join(", ", logTypesSeen)
              + "); values are compared exactly");
    }
    return null;
  }

  /** Returns the data rows read so far, the rows a filter left out included. */
  @Override
  public long rowsRead() {
    return rowsTotal;
  }

  private static void remember(Set<String> seen, String value) {
    if (seen.size() < MAX_VALUES_NAMED) {
      seen.add(value);
    }
  }

  /** Parses a non-negative decimal number of seconds to nanoseconds, exactly. */
  private long parseSeconds(String s, long line) {
    if (s.isEmpty()) {
      throw InputException.at(source, line, "Timestamp", "missing value");
    }
    BigDecimal seconds;
    try {
      seconds = new BigDecimal(s);
    } catch (NumberFormatException e) {
      throw InputException.at(source, line, "Timestamp", "not a number of seconds: '" + s + "'");
    }
    if (seconds.signum() < 0) {
      throw InputException.at(source, line, "Timestamp", "must not be negative, got " + s);
    }
    BigDecimal nanos;
    try {
      nanos = seconds.multiply(NANOS_PER_SECOND).stripTrailingZeros(); // an exponent near 2^31 overflows the scale here
    } catch (ArithmeticException e) {
      throw InputException.at(source, line, "Timestamp", "too large: " + s + " s");
    }
    if (nanos.scale() > 0) {
      throw InputException.at(source, line, "Timestamp", "finer than a nanosecond: " + s);
    }
    try {
      return nanos.longValueExact();
    } catch (ArithmeticException e) {
      throw InputException.at(source, line, "Timestamp", "too large: " + s + " s");
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

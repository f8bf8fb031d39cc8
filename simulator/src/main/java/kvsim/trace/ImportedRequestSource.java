package kvsim.trace;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.OptionMap;

/**
 * The part every importer of a foreign request log shares ({@code azure}, {@code mooncake}, {@code
 * lengths}): it turns the rows a subclass reads into {@link Request}s, one at a time.
 *
 * <ul>
 *   <li>Ids: the row's index among the file's data rows, from 0, so a request can be found in the
 *       original file; a window keeps the ids of the rows it keeps.
 *   <li>Time: the row's time minus the first row's time (the trace's own time, from 0), then minus
 *       {@code from} and divided by {@code speedup}, rounded to whole nanoseconds. Time never goes
 *       backwards: a row earlier than the one before is an error, never reordered.
 *   <li>Window: options {@code from} and {@code to}, in seconds of the trace's own time, keep the
 *       rows with {@code from <= time < to}; reading stops at the first row past {@code to}.
 *   <li>Spread: option {@code spread} (seconds, default 0: off) spreads rows that share one time
 *       evenly over that many seconds after it (see {@link #nextSpread()}), before the window.
 *   <li>Lengths: a prompt of 0 tokens is an error (vLLM refuses an empty prompt). A row with 0
 *       output tokens is an error unless {@code zero-output} says otherwise: {@code one} runs it
 *       with 1 output token (vLLM always samples one token at the end of the prefill; {@code
 *       max_tokens} is at least 1), {@code drop} leaves the row out; either way {@link
 *       #zeroOutputRows()} counts them. No length is clipped.
 *   <li>Nothing selected: a source that reaches its end without giving a request (a window past
 *       the trace's end or between its rows, every row dropped, a filter of a subclass) is bad
 *       input, naming the file and the window, as an empty workload is everywhere else (Note
 *       [An empty selection]).
 * </ul>
 *
 * <p>Every problem is {@code file:line: field: problem}; nothing is skipped or clamped unless an
 * option above says so.
 */
public abstract class ImportedRequestSource implements RequestSource {

  /**
   * One data row as a subclass read it.
   *
   * @param index the row's index among the file's data rows, or -1 for the count of rows this
   *     class has seen (a subclass that leaves rows out itself, as a filter does, gives it)
   */
  protected record Row(long line, long rawNanos, long prompt, long output, long[] hashIds, long index) {
    /** A row numbered by this class: the rows it has seen so far. */
    protected Row(long line, long rawNanos, long prompt, long output, long[] hashIds) {
      this(line, rawNanos, prompt, output, hashIds, -1);
    }
  }

  /** The file, as named in messages. */
  protected final String source;
  private final String format;
  private final long fromNanos;
  private final long toNanos;
  private final boolean toGiven;
  private final double speedup;
  private final String zeroOutput;
  private final Map<String, Object> description = new LinkedHashMap<>();
  private final String timeField;
  private final String outputField;
  private final String promptField;
  private boolean started;
  private boolean done;
  private long firstRaw;
  private long lastRaw;
  private long rows;
  private long zeroOutputRows;
  private final long spreadNanos;
  private final java.util.ArrayDeque<Row> group = new java.util.ArrayDeque<>();
  private Row lookahead;
  private long given;
  private long beforeWindow;

  /**
   * Reads the shared options ({@code from}, {@code to}, {@code speedup}, {@code zero-output}) from
   * {@code options}; the subclass reads its own before calling {@link OptionMap#requireAllUsed()}.
   */
  protected ImportedRequestSource(String format, Path file, OptionMap options, String timeField, String promptField, String outputField) {
    this.source = file.toString();
    this.format = format;
    this.timeField = timeField;
    this.promptField = promptField;
    this.outputField = outputField;
    double from = options.number("from", 0, 0, 1e9);
    double to = Double.POSITIVE_INFINITY;
    if (options.optional("to") != null) {
      to = options.number("to", 0, 0, 1e9);
      if (!(to > from)) {
        throw options.bad("to", Double.toString(to), "must be above from (" + from + " s)");
      }
    }
    this.fromNanos = Math.round(from * 1e9);
    this.toGiven = !Double.isInfinite(to);
    this.toNanos = toGiven ? Math.round(to * 1e9) : Long.MAX_VALUE;
    this.speedup = options.number("speedup", 1, 1e-6, 1e6);
    this.spreadNanos = Math.round(options.number("spread", 0, 0, 86_400) * 1e9);
    this.zeroOutput = options.string("zero-output", "error");
    if (!zeroOutput.equals("error") && !zeroOutput.equals("one") && !zeroOutput.equals("drop")) {
      throw options.bad("zero-output", zeroOutput, "expected error, one or drop");
    }
    description.put("source", file.getFileName() == null ? source : file.getFileName().toString());
    description.put("import", format);
    description.put("params", options.effective());
  }

  /** Returns the next data row, or null at the end of the file. */
  protected abstract Row readRow() throws IOException;

  /**
   * Returns whether times are taken relative to the first row (true for recorded timestamps);
   * false keeps them as read (generated arrivals that start at 0).
   */
  protected boolean relativeToFirstRow() {
    return true;
  }

  @Override
  public final Request next() throws IOException {
    while (!done) {
      Row r = spreadNanos > 0 ? nextSpread() : readRow();
      if (r == null) {
        done = true;
        return ended();
      }
      long seen = rows++;
      long index = r.index() >= 0 ? r.index() : seen;
      if (r.prompt() <= 0) {
        throw InputException.at(source, r.line(), promptField, "must be positive, got " + r.prompt() + " (an empty prompt cannot be served)");
      }
      if (r.prompt() > Integer.MAX_VALUE) {
        throw InputException.at(source, r.line(), promptField, "must be at most " + Integer.MAX_VALUE + ", got " + r.prompt());
      }
      if (r.output() < 0) {
        throw InputException.at(source, r.line(), outputField, "must not be negative, got " + r.output());
      }
      if (r.output() > Integer.MAX_VALUE) {
        throw InputException.at(source, r.line(), outputField, "must be at most " + Integer.MAX_VALUE + ", got " + r.output());
      }
      if (!started) {
        started = true;
        firstRaw = relativeToFirstRow() ? r.rawNanos() : 0;
      } else if (r.rawNanos() < lastRaw) {
        throw InputException.at(source, r.line(), timeField, "time goes backwards: " + (r.rawNanos() - firstRaw) + " ns after " + (lastRaw - firstRaw)
            + " ns (of the trace's own time); the importer never reorders rows");
      }
      lastRaw = r.rawNanos();
      long output = r.output();
      if (output == 0) {
        switch (zeroOutput) {
          case "one" -> output = 1;
          case "drop" -> {
            zeroOutputRows++;
            continue;
          }
          default -> throw InputException.at(source, r.line(), outputField,
              "0 output tokens: vLLM always generates at least one token; pass zero-output=one to run such rows with 1 output token, or zero-output=drop to leave them out");
        }
        zeroOutputRows++;
      }
      long rel;
      try {
        rel = Math.subtractExact(r.rawNanos(), firstRaw);
      } catch (ArithmeticException e) {
        // Rows 1677 and 2262 apart: the difference passes 2^63 ns and would wrap to a negative time.
        throw InputException.at(source, r.line(), timeField, "more than 2^63 ns (292 years) after the first row");
      }
      if (rel < fromNanos) {
        beforeWindow++;
        continue;
      }
      if (toGiven && rel >= toNanos) { // without a to, a row at 2^63-1 ns is still in the window
        done = true;
        return ended();
      }
      long t = rel - fromNanos;
      if (speedup != 1) {
        t = Math.round(t / speedup);
      }
      given++;
      return new Request(r.line(), index, t, (int) r.prompt(), (int) output, r.hashIds(), 1, 1);
    }
    return ended();
  }

  /**
   * Returns null, the end of the requests, or throws InputException when none was given.
   *
   * <p>Note [An empty selection]: a window or filter that keeps no row gives an empty workload,
   * which a serving run refuses and an import would write as a trace of nothing with exit status
   * 0, a silent wrong answer (say {@code from} given in milliseconds where seconds are meant). The
   * source itself refuses it, once read to its end, so every use of an importer (import, serving,
   * capacity, sweeps) says the same thing: the file, the window as given, and what the file holds
   * (its rows and the span of its own time), so the user can see where the window went wrong.
   */
  private Request ended() {
    if (given > 0) {
      return null;
    }
    StringBuilder why = new StringBuilder(source).append(": selects no request: ");
    if (rows == 0) {
      why.append("the file has no data rows");
    } else {
      why.append("the window from ").append(seconds(fromNanos)).append(" s to ")
          .append(toNanos == Long.MAX_VALUE ? "the end" : seconds(toNanos) + " s").append(" of the trace's own time holds none of its ")
          .append(rows).append(rows == 1 ? " row" : " rows").append(" read (")
          .append(relativeToFirstRow() ? "which span 0 to " : "which arrive from 0 to ").append(seconds(lastRaw - firstRaw)).append(" s");
      if (beforeWindow > 0) {
        why.append("; ").append(beforeWindow).append(" before the window");
      }
      if (zeroOutput.equals("drop") && zeroOutputRows > 0) {
        why.append("; ").append(zeroOutputRows).append(" dropped for 0 output tokens");
      }
      why.append(')');
    }
    throw new InputException(why.toString());
  }

  /** Formats nanoseconds as seconds, plainly (no exponent), to the nanosecond at most. */
  private static String seconds(long nanos) {
    return java.math.BigDecimal.valueOf(nanos, 9).stripTrailingZeros().toPlainString();
  }

  /**
   * Returns the next row with {@code spread} applied: the k rows that share one time T get the times
   * T + i·spread/k (i = 0..k−1, whole ns), so a trace quantised to ticks (Mooncake's 3 s) arrives
   * evenly over each tick instead of in bursts; an error if that would pass the next row's time.
   * Reads one group of equal times ahead.
   */
  private Row nextSpread() throws IOException {
    if (group.isEmpty()) {
      Row first = lookahead != null ? lookahead : readRow();
      lookahead = null;
      if (first == null) {
        return null;
      }
      List<Row> same = new ArrayList<>();
      same.add(first);
      Row next;
      while ((next = readRow()) != null && next.rawNanos() == first.rawNanos()) {
        same.add(next);
      }
      int k = same.size();
      long lastShare = share(k - 1, k);
      if (first.rawNanos() > Long.MAX_VALUE - lastShare) {
        throw InputException.at(source, same.get(k - 1).line(), timeField, "spread=" + spreadNanos / 1e9 + " s spreads this row past 2^63 ns");
      }
      long lastSpread = first.rawNanos() + lastShare;
      if (next != null) {
        if (next.rawNanos() < first.rawNanos()) {
          throw InputException.at(source, next.line(), timeField, "time goes backwards: " + (next.rawNanos() - first.rawNanos())
              + " ns before the row before; the importer never reorders rows");
        }
        if (lastSpread > next.rawNanos()) {
          throw InputException.at(source, next.line(), timeField, "spread=" + spreadNanos / 1e9 + " s spreads the " + k
              + " rows before this one past its time; use a smaller spread");
        }
      }
      lookahead = next;
      for (int i = 0; i < k; i++) {
        Row r = same.get(i);
        group.add(new Row(r.line(), first.rawNanos() + share(i, k), r.prompt(), r.output(), r.hashIds(), r.index()));
      }
    }
    return group.poll();
  }

  /** Returns {@code floor(i * spread / k)} exactly. */
  private long share(long i, long k) {
    return java.math.BigInteger.valueOf(i).multiply(java.math.BigInteger.valueOf(spreadNanos)).divide(java.math.BigInteger.valueOf(k)).longValueExact();
  }

  /** Returns the rows with 0 output tokens met so far (run with 1 token, or dropped, as {@code zero-output} says). */
  public long zeroOutputRows() {
    return zeroOutputRows;
  }

  /** Returns the data rows read so far. */
  public long rowsRead() {
    return rows;
  }

  @Override
  public String name() {
    String file = (String) description.get("source");
    return format + "-" + file.replaceAll("\\.[^.]*$", "");
  }

  @Override
  public Map<String, Object> describe() {
    return description;
  }

  /** Parses a non-negative decimal integer field of a CSV row. */
  protected final long csvInteger(String text, long line, String field) {
    String s = text.trim();
    if (s.isEmpty()) {
      throw InputException.at(source, line, field, "missing value");
    }
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw InputException.at(source, line, field, "not an integer: '" + s + "'");
    }
  }
}

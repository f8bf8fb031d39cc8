package kvsim.trace;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * Writes requests as an Azure LLM inference trace of the week-long 2024 shape: the header {@code
 * TIMESTAMP,ContextTokens,GeneratedTokens}, then one row per request, its time as {@code
 * YYYY-MM-DD HH:MM:SS.ffffff+00:00} (microseconds, UTC) counted from a start instant. Arrival
 * times are rounded to whole microseconds, which keeps their order; {@link AzureTraceReader} reads
 * the file back. Ids, prefix hashes and parallel samples have no column and are not written.
 */
public final class AzureCsvWriter implements RequestWriter {
  /**
   * An Azure-shaped CSV: the format has no room for a mark of kvsim's, so an existing file is
   * replaced only with {@code --force} (Note [Output rule] on {@code core.OutputFile}).
   */
  public static final kvsim.core.OutputFile.Kind OUTPUT_KIND = kvsim.core.OutputFile.Kind.unmarked("an Azure-shaped CSV");

  /** The default start: 2024-05-10 00:00:00 UTC, the first day of Azure's 2024 week-long traces. */
  public static final LocalDateTime DEFAULT_START = LocalDateTime.of(2024, 5, 10, 0, 0);

  private final Writer out;
  private final long startEpochSeconds;
  private final StringBuilder line = new StringBuilder(64);
  private long requests;
  private long cachedSecond = Long.MIN_VALUE;
  private String cachedPrefix;

  /** Starts a CSV on {@code out} whose times count from {@code start} (UTC). */
  public AzureCsvWriter(OutputStream out, LocalDateTime start) throws IOException {
    this.out = new OutputStreamWriter(out, StandardCharsets.UTF_8);
    this.startEpochSeconds = start.toEpochSecond(ZoneOffset.UTC);
    this.out.write("TIMESTAMP,ContextTokens,GeneratedTokens\n");
  }

  @Override
  public void write(Request r) throws IOException {
    long micros = Math.round(r.arrivalNanos() / 1e3);
    long second = Math.floorDiv(micros, 1_000_000L);
    long fraction = Math.floorMod(micros, 1_000_000L);
    if (second != cachedSecond) {
      cachedSecond = second;
      cachedPrefix = LocalDateTime.ofEpochSecond(startEpochSeconds + second, 0, ZoneOffset.UTC).toString().replace('T', ' ');
      if (cachedPrefix.length() == 16) {
        cachedPrefix += ":00"; // LocalDateTime leaves out zero seconds
      }
    }
    StringBuilder sb = line;
    sb.setLength(0);
    sb.append(cachedPrefix).append('.');
    String f = Long.toString(fraction);
    sb.append("000000", 0, 6 - f.length()).append(f).append("+00:00,").append(r.promptTokens()).append(',').append(r.outputTokens()).append('\n');
    out.write(sb.toString());
    requests++;
  }

  @Override
  public long requestsWritten() {
    return requests;
  }

  @Override
  public void flush() throws IOException {
    out.flush();
  }
}

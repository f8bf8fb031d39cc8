package kvsim.trace;

import java.io.IOException;
import java.util.function.Consumer;
import kvsim.core.OutputFile;

/**
 * Writes every request of a source into one file of a request format (a kvsim request trace, or an
 * outside format such as Azure's CSV), atomically through {@link OutputFile}: a failure part-way
 * leaves no file (Note [Output rule] on {@code core.OutputFile}). {@code kvsim import} and {@code
 * kvsim generate requests} write their files with it.
 */
public final class RequestFiles {
  private RequestFiles() {}

  /**
   * Writes every request of {@code source} (read to its end) at {@code output} in the format that
   * {@code format} opens, and returns how many were written; {@code afterward} sees the source once
   * it is exhausted, before the file is moved into place.
   */
  public static long write(RequestSource source, OutputFile output, RequestWriter.Factory format, Consumer<RequestSource> afterward)
      throws IOException {
    long[] written = new long[1];
    output.write(out -> {
      RequestWriter writer = format.open(out, source);
      Request r;
      while ((r = source.next()) != null) {
        writer.write(r);
      }
      writer.finish();
      written[0] = writer.requestsWritten();
      afterward.accept(source);
    });
    return written[0];
  }

  /**
   * Writes every request of {@code source} as a kvsim request trace, JSONL or binary by the output's
   * name ({@link RequestTraceWriter#forFile}); see {@link #write}.
   */
  public static long writeTrace(RequestSource source, OutputFile output, Consumer<RequestSource> afterward) throws IOException {
    return write(source, output, (out, s) -> RequestTraceWriter.forFile(output.path(), out, s.describe(), s.hashBlockTokens()), afterward);
  }
}

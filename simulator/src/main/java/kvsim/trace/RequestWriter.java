package kvsim.trace;

import java.io.IOException;
import java.io.OutputStream;

/** A writer of requests in some file format: the kvsim request trace, or a foreign format such as Azure's CSV. */
public interface RequestWriter {
  /** Opens a writer of one format on a stream, for the requests of a source (its description and hashes). */
  @FunctionalInterface
  interface Factory {
    /** Returns a writer on {@code out} that has written its header, if the format has one. */
    RequestWriter open(OutputStream out, RequestSource source) throws IOException;
  }

  /** Writes one request. */
  void write(Request r) throws IOException;

  /** Returns the number of requests written. */
  long requestsWritten();

  /** Flushes buffered text to the stream. */
  void flush() throws IOException;

  /** Completes the file after the last request (a binary trace's last block and end block); flushes. */
  default void finish() throws IOException {
    flush();
  }
}

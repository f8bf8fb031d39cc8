package kvsim.core;

/**
 * Bad user input: a malformed trace line, an unknown id, an unknown allocator name, a bad option.
 * The CLI prints {@link #getMessage()} as one line and exits with status 2. The message names the
 * file, the line and the field when they are known, in the form {@code file:line: field: problem}.
 */
public class InputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public InputException(String message) {
    super(message);
  }

  public InputException(String message, Throwable cause) {
    super(message, cause);
  }

  /** Returns an exception whose message is {@code source:line: field: problem}. */
  public static InputException at(String source, long line, String field, String problem) {
    StringBuilder sb = new StringBuilder(source);
    if (line > 0) {
      sb.append(':').append(line);
    }
    sb.append(": ");
    if (field != null) {
      sb.append(field).append(": ");
    }
    sb.append(problem);
    return new InputException(sb.toString());
  }
}

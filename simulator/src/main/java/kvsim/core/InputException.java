package kvsim.core;

/**
 * Bad user input: a malformed trace line, an unknown id, an unknown allocator name, a bad option.
 * The CLI prints {@link #getMessage()} as one line and exits with status 2. The message names the
 * file, the line and the field when they are known, in the form {@code file:line: field: problem}.
 *
 * <p>Note [One-line messages]: a message often quotes the input (an unknown field's name, a value of
 * the wrong type), and a JSON or YAML string may hold an escaped line break ({@code "a\nb"}). The
 * message keeps to one line whatever it quotes: a line feed or carriage return in it is written as
 * {@code \n} or {@code \r}.
 */
public class InputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public InputException(String message) {
    super(oneLine(message));
  }

  public InputException(String message, Throwable cause) {
    super(oneLine(message), cause);
  }

  /** Note [One-line messages]. */
  private static String oneLine(String message) {
    if (message == null || (message.indexOf('\n') < 0 && message.indexOf('\r') < 0)) {
      return message;
    }
    return message.replace("\r", "\\r").replace("\n", "\\n");
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
